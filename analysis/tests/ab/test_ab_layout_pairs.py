"""Layout pairs measured more than once (perfgate.ab.layout_file): the rounds of A/Bs of the same two builds
pooled, either way round; an earlier layout file's A/Bs taken again from its provenance (--previous), so a
pair can be measured again without the first folders; a hostile earlier file refused."""
from __future__ import annotations

import json
import shutil

import ab_inputs
import conftest
import numpy as np
import pytest
from scipy import stats

from perfgate import schema as s
from perfgate.ab import layout, layout_file
from perfgate.ab import verdict as v
from perfgate.escape.workflow import log_text

one_line_exit_2 = ab_inputs.one_line_exit_2
INTRA, INTER = ab_inputs.SUBS
COMMAND = "determine-layout-thresholds"


def derive(output, *folders, previous=None):
    arguments = [a for f in folders for a in ("--ab-directory", str(f))]
    if previous is not None:
        arguments += ["--previous", str(previous)]
    return conftest.perfgate_in_process(COMMAND, *arguments, "--platform", "vm-2core-x64", "--output", str(output))


def content_of(done, output) -> dict:
    assert done.returncode == s.EXIT_OK, done.stderr
    return json.loads(output.read_text())


def d_of(content: dict, folder, sub: str, statistic: str) -> np.ndarray:
    record = next(r for r in content["provenance"]["ab_directories"] if r["ab_directory"] == str(folder.resolve()))
    return np.array(next(m["d"] for m in record["moves"] if (m["subexperiment"], m["statistic"]) == (sub, statistic)))


def test_two_abs_of_the_same_builds_are_one_pair_whose_rounds_are_pooled_the_other_way_round_negated(tmp_path):
    first = ab_inputs.layout_ab(tmp_path / "first", {INTRA: 0.02}, seed=40, rounds=12)
    again = ab_inputs.layout_ab(tmp_path / "again", {INTRA: 0.02}, seed=41, rounds=12)
    # the same two builds with the arms swapped: the candidate is the faster one
    swapped = ab_inputs.layout_ab(tmp_path / "swapped", {INTRA: -0.02}, seed=42, rounds=12, commits=("b" * 40, "a" * 40))
    done = derive(tmp_path / "out.json", first, again, swapped)
    content = content_of(done, tmp_path / "out.json")
    assert "from 3 layout A/B(s) of 1 pair(s)" in done.stdout
    (pair,) = content["provenance"]["pairs"]
    assert (pair["baseline"], pair["candidate"]) == ("a" * 40, "b" * 40)
    assert pair["ab_directories"] == [str(f.resolve()) for f in (first, again, swapped)]
    rows = {(r["subexperiment"], r["statistic"]): r for r in pair["shifts"]}
    assert rows[(INTRA, s.MEDIAN)]["rounds"] == 36
    pooled = np.concatenate([d_of(content, first, INTRA, s.MEDIAN), d_of(content, again, INTRA, s.MEDIAN),
                             -d_of(content, swapped, INTRA, s.MEDIAN)])
    assert rows[(INTRA, s.MEDIAN)]["change"] == pytest.approx(np.expm1(np.median(pooled)), abs=1e-6)
    assert rows[(INTRA, s.MEDIAN)]["change"] == pytest.approx(0.02, abs=0.004)  # all three agree: +2 %
    # 36 rounds pin the move closer than any one A/B's 12 do
    alone = {r["ab_directory"]: {(x["subexperiment"], x["statistic"]): x for x in r["shifts"]}
             for r in content["provenance"]["ab_directories"]}
    widths = [a[(INTRA, s.MEDIAN)]["upper"] - a[(INTRA, s.MEDIAN)]["lower"] for a in alone.values()]
    assert rows[(INTRA, s.MEDIAN)]["upper"] - rows[(INTRA, s.MEDIAN)]["lower"] < min(widths)
    assert content["thresholds"][INTRA] == layout.step_above(content["largest_layout_bound"][INTRA])


def test_an_earlier_files_abs_count_again_without_their_folders(tmp_path):
    first = ab_inputs.layout_ab(tmp_path / "first", {INTRA: 0.015, INTER: -0.01}, seed=43, rounds=12)
    link = ab_inputs.layout_ab(tmp_path / "link", {INTRA: -0.03}, seed=44, rounds=12, commits=("c" * 40, "d" * 40))
    again = ab_inputs.layout_ab(tmp_path / "again", {INTRA: 0.015, INTER: -0.01}, seed=45, rounds=12)
    both = content_of(derive(tmp_path / "both.json", first, link, again), tmp_path / "both.json")
    earlier = content_of(derive(tmp_path / "earlier.json", first, link), tmp_path / "earlier.json")
    assert len(earlier["provenance"]["pairs"]) == 2
    shutil.rmtree(first)
    shutil.rmtree(link)
    done = derive(tmp_path / "later.json", again, previous=tmp_path / "earlier.json")
    later = content_of(done, tmp_path / "later.json")
    for key in ("thresholds", "largest_layout_bound", "largest_layout_change", "cpu_latency"):
        assert later[key] == both[key], key
    assert later["provenance"]["pairs"] == both["provenance"]["pairs"]
    assert "from 3 layout A/B(s) of 2 pair(s)" in done.stdout
    # an A/B already in the earlier file, given again as a folder, would count twice
    done = derive(tmp_path / "twice.json", again, previous=tmp_path / "later.json")
    one_line_exit_2(done, "already in --previous", str(again))
    assert not (tmp_path / "twice.json").exists()


@pytest.mark.parametrize("change, problem", [
    (lambda r: r.pop("moves"), "derived before the rounds' d were kept"),
    (lambda r: r["moves"][0].update(d=[0.01, "0.02"]), "a list of finite numbers"),
    (lambda r: r["moves"][0].update(d=[0.01, float("nan")]), "a list of finite numbers"),
    (lambda r: r["moves"][0].update(subexperiment="<script>x</script>"), "not a known sub-experiment"),
    (lambda r: r["moves"].append(dict(r["moves"][0])), "once each"),
    (lambda r: r.update(cpu_latency="poll\n::error::x"), "cpu_latency is not one of"),
    (lambda r: r["baseline"].update(commit=["x"]), "baseline commit is not a string"),
    (lambda r: r.update(ab_directory=None), "not an object with an ab_directory"),
    (lambda r: r.update(layouts="12\n::error::x"), "layouts is not a whole number of 0 or more"),
    (lambda r: r.update(layouts=-1), "layouts is not a whole number of 0 or more"),
    (lambda r: r.update(align_functions="64\n::error::x"), "align_functions is not a whole number of 0 or more"),
    (lambda r: r.update(align_functions=True), "align_functions is not a whole number of 0 or more"),
])
def test_a_hostile_earlier_file_is_exit_2_one_line_naming_it_and_nothing_is_written(tmp_path, change, problem):
    ab = ab_inputs.layout_ab(tmp_path / "ab", {INTRA: 0.01}, seed=46, rounds=12)
    content = content_of(derive(tmp_path / "earlier.json", ab), tmp_path / "earlier.json")
    change(content["provenance"]["ab_directories"][0])
    (tmp_path / "earlier.json").write_text(json.dumps(content))
    done = derive(tmp_path / "out.json", previous=tmp_path / "earlier.json")
    one_line_exit_2(done, problem, str(tmp_path / "earlier.json"))
    assert "<script>" not in done.stderr and "::error::" not in done.stderr
    assert not (tmp_path / "out.json").exists()


def test_an_earlier_file_listing_one_ab_twice_or_none_is_exit_2(tmp_path):
    ab = ab_inputs.layout_ab(tmp_path / "ab", {INTRA: 0.01}, seed=47, rounds=12)
    content = content_of(derive(tmp_path / "earlier.json", ab), tmp_path / "earlier.json")
    listed = content["provenance"]["ab_directories"]
    for name, records, problem in (("twice", listed * 2, "lists one A/B twice"), ("none", [], "lists no layout A/B")):
        content["provenance"]["ab_directories"] = records
        (tmp_path / f"{name}.json").write_text(json.dumps(content))
        one_line_exit_2(derive(tmp_path / "out.json", previous=tmp_path / f"{name}.json"), problem,
                        str(tmp_path / f"{name}.json"))
        assert not (tmp_path / "out.json").exists()


def test_nothing_to_derive_from_is_exit_2(tmp_path):
    one_line_exit_2(derive(tmp_path / "out.json"), "give --ab-directory or --previous")
    one_line_exit_2(derive(tmp_path / "out.json", previous=tmp_path / "missing.json"), "no such layout thresholds file")
    assert not (tmp_path / "out.json").exists()


def test_an_ab_on_another_machine_than_the_layout_abs_is_warned_with_the_files_values_escaped(tmp_path):
    ab = ab_inputs.layout_ab(tmp_path / "ab", {INTRA: 0.01}, seed=48, rounds=12)  # platform id vm-abc
    content_of(derive(tmp_path / "layout.json", ab), tmp_path / "layout.json")
    given = tmp_path / "layout.json"

    def warning(this_id):
        return layout_file.platform_warning(layout_file.load(given), this_id)

    assert warning("vm-abc") is None
    assert layout_file.platform_warning(None, "vm-xyz") is None and warning(None) is None
    assert warning("vm-xyz") == (
        f"the layout thresholds in {given} were measured on platform id vm-abc, this machine is vm-xyz: layout "
        "moves may be another size here")
    content = json.loads(given.read_text())
    content["provenance"]["ab_directories"][0]["platform"].update(id="x\n::error::y", cpu_model="AMD <b>EPYC</b>")
    given.write_text(json.dumps(content))
    line = warning("vm-xyz")
    assert line == (f"the layout thresholds in {given} were measured on platform id {log_text('x' + chr(10) + '::error::y')} "
                    "(AMD <b>EPYC</b>), this machine is vm-xyz: layout moves may be another size here")
    assert "\n" not in line  # one console line, and no workflow command can start in it
    # a file from before the provenance named machines says nothing
    given.write_text(json.dumps({"platform": "p", "thresholds": {INTRA: 0.03}}))
    assert warning("vm-xyz") is None


def kept_apart(tmp_path, key: str, first: dict, second: dict, values: tuple[int, int], problem: str) -> dict:
    """Layout A/Bs of two values of a build property (`key`): each alone derives a file of its value, the two
    together are exit 2 naming the second, and nothing is written. The first's file content."""
    one, two = (ab_inputs.layout_ab(tmp_path / f"{key}-{i}", {INTRA: 0.01}, seed=49 + i, rounds=12, **kind)
                for i, kind in enumerate((first, second)))
    content = content_of(derive(tmp_path / f"{key}-0.json", one), tmp_path / f"{key}-0.json")
    assert content[key] == values[0] and content["provenance"]["ab_directories"][0][key] == values[0]
    assert content_of(derive(tmp_path / f"{key}-1.json", two), tmp_path / f"{key}-1.json")[key] == values[1]
    one_line_exit_2(derive(tmp_path / "mixed.json", one, two), problem, str(two))
    assert not (tmp_path / "mixed.json").exists()
    return content


def test_abs_over_layouts_are_kept_apart_from_abs_of_single_builds_and_an_ab_of_the_other_kind_is_warned(tmp_path):
    content = kept_apart(tmp_path, "layouts", {"layouts": 12}, {}, (12, 0), "measured with --layouts 0, the A/Bs "
                         "before it with 12: averaged over layouts, a layout move is another size")
    rotated, single = (layout_file.load(tmp_path / f"layouts-{i}.json") for i in (0, 1))
    awake = content["cpu_latency"]  # the A/Bs' own: only --layouts differs below
    assert layout_file.mode_warning(rotated, awake, 12) is None
    assert layout_file.mode_warning(rotated, awake, 0) == (
        f"the layout thresholds in {rotated.path} were measured with --layouts 12, this A/B measures "
        "with --layouts 0: layout moves may be another size")
    assert layout_file.mode_warning(single, awake, 0) is None


def test_abs_of_aligned_builds_are_kept_apart_from_abs_of_the_compilers_alignment_and_an_ab_of_other_builds_is_warned(
        tmp_path):
    content = kept_apart(tmp_path, "align_functions", {"aligned": (64, 64)}, {"aligned": (0, 0)}, (64, 0),
                         "measured on builds with --align-functions 0, the A/Bs before it with 64: aligned, a layout "
                         "move is another size")
    aligned, plain = tmp_path / "align_functions-0.json", tmp_path / "align_functions-1.json"

    def warning(*args):
        return layout_file.mode_warning(layout_file.load(aligned), *args)

    # --previous carries the alignment: an aligned A/B added to the aligned file's, not to the plain one's
    more = ab_inputs.layout_ab(tmp_path / "more", {INTRA: 0.01}, seed=53, rounds=12, aligned=(64, 64))
    assert content_of(derive(tmp_path / "both.json", more, previous=aligned), tmp_path / "both.json")["align_functions"] == 64
    one_line_exit_2(derive(tmp_path / "no.json", more, previous=plain), "--align-functions 64, the A/Bs before it with 0",
                    str(more))
    # an A/B of two alignments measures the flag's own move too: it is no layout pair of one alignment
    flag = ab_inputs.layout_ab(tmp_path / "flag", {INTRA: 0.01}, seed=54, rounds=12, aligned=(0, 64))
    one_line_exit_2(derive(tmp_path / "flag.json", flag), "its arms were built with --align-functions 0 and 64", str(flag))
    awake = content["cpu_latency"]
    assert warning(awake, 0, 64) is None
    assert warning(awake, 0, None) is None  # not known: not compared
    assert warning(awake, 0, 0) == (
        f"the layout thresholds in {aligned} were measured on builds with --align-functions 64, this "
        "A/B's builds have --align-functions 0: layout moves may be another size")
    # a file from before the entry was derived from the compiler's own alignment
    (tmp_path / "older.json").write_text(json.dumps({"platform": "p", "thresholds": {INTRA: 0.03}}))
    older = layout_file.load(tmp_path / "older.json")
    assert layout_file.mode_warning(older, "system", 0, 0) is None
    assert "--align-functions 0, this A/B's builds have --align-functions 64" in \
        layout_file.mode_warning(older, "system", 0, 64)


def swapped_copy(source, target):
    """The A/B the other way round: every round's baseline and candidate exchanged (the metadata's arms
    are not read by the verdict)."""
    shutil.copytree(source, target)
    for round_dir in (target / s.AB_ROUNDS_DIR).iterdir():
        (round_dir / "baseline").rename(round_dir / "swap")
        (round_dir / "candidate").rename(round_dir / "baseline")
        (round_dir / "swap").rename(round_dir / "candidate")
    return target


def shown_by(d) -> float:
    """The move one A/B's rounds establish: the sign test's one-sided 0.02 lower bound of |median d| in the
    direction of its rounds (the rank from the binomial directly), exp of it minus 1, 0 when it holds 0."""
    d = np.sort(np.asarray(d, float))
    n = len(d)
    j = max(j for j in range(1, n + 1) if stats.binom.cdf(j - 1, n, 0.5) <= 0.02)
    return float(np.expm1(max(d[j - 1], -d[n - j], 0.0)))


def test_a_pair_whose_move_drifts_between_abs_gets_a_threshold_every_one_of_its_abs_passes_either_way_round(tmp_path):
    # the same two builds measured four times: +1 % three times and, at another hour, +4 % (docs/verdict.md "A
    # layout move drifts"): the pooled rounds bound the pair's mean move near 1 %, one A/B alone shows over 3 %
    abs_ = [ab_inputs.layout_ab(tmp_path / name, {INTRA: slowdown}, seed=seed, rounds=12)
            for name, slowdown, seed in (("morning", 0.01, 50), ("noon", 0.01, 51), ("afternoon", 0.01, 53),
                                         ("evening", 0.04, 52))]
    output = tmp_path / "layout.json"
    done = derive(output, *abs_)
    content = content_of(done, output)
    pooled_bound, shown = content["largest_layout_bound"][INTRA], content["largest_single_ab_move"][INTRA]
    assert pooled_bound < 0.02 < 0.03 < shown, (pooled_bound, shown)  # the mean move is small, the evening's not
    each = [shown_by(d_of(content, f, INTRA, statistic)) for f in abs_ for statistic in v.TESTED_STATISTICS]
    assert shown == pytest.approx(max(each), abs=1e-6)
    assert content["thresholds"][INTRA] == layout.step_above(shown) > layout.step_above(pooled_bound)
    assert "one A/B alone" in done.stdout and "every layout A/B passes either way round" in content["method"]
    # the real verdict: every A/B of the file passes at it, as measured and the other way round, even at the
    # most lenient level Holm can give a test ...
    for folder in abs_:
        for ab in (folder, swapped_copy(folder, tmp_path / f"{folder.name}-swapped")):
            decided = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--layout-thresholds",
                                                   str(output), "--alpha", "0.02", "--no-plots")
            assert decided.returncode == s.EXIT_OK, (ab.name, decided.stdout)
    # ... where thresholds from the pooled bound alone fail the evening's A/B of an unchanged commit
    pooled_only = tmp_path / "pooled-only.json"
    pooled_only.write_text(json.dumps({**content, "thresholds": {**content["thresholds"],
                                                                  INTRA: layout.step_above(pooled_bound)}}))
    decided = conftest.perfgate_in_process("verdict", "--ab-directory", str(abs_[3]), "--layout-thresholds",
                                           str(pooled_only), "--alpha", "0.02", "--no-plots")
    assert decided.returncode == s.EXIT_REGRESSION and INTRA in decided.stdout
