"""Stored files that are valid JSON or text but not what the contract says (issue 44, item 2): an
ab/verdict.json whose `failed` is 5, a junit.xml that is not XML, a bisect.json nested 100000 deep, a
layout file of 17 MiB. Each is read by one reader per kind, which store pull, push and check share with
history, the gate's look at the store and false-alarms: quarantined or skipped with one line naming
the file, never a traceback, and a good experiment beside it still lands and is read."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conftest import perfgate_in_process
from store_branches import bare, blob, blob_of_file, publish, tree
from store_scripts import stored_aa_gate
from perfgate import cli
from perfgate import schema as s
from perfgate.ab import curtail, layout_file
from perfgate.errors import InputError
from perfgate.history import verdict_file
from perfgate.store import check as store_check

SUB = "intraprocess_best_effort"
ENTRY = {"subexperiment": SUB, "statistic": "Median", "ratio": 1.1, "lower_bound": 1.05, "p_value": 0.001,
         "adjusted_p_value": 0.002, "rounds": 11}
HUGE = "9" * 5000  # past int's 4300 digits: json.loads raised a ValueError no reader caught
# (verdict.json's text, the problem the one line names)
HOSTILE_VERDICTS = {
    "failed is a number": ('{"status": "PASS", "failed": 5}', "'failed' is 5; expected a list of objects"),
    "failed holds a string": ('{"status": "PASS", "failed": ["x"]}', "'failed[0]' is 'x'; expected an object"),
    "failed holds an empty object": ('{"status": "PASS", "failed": [{}]}', "'failed[0].subexperiment' is None"),
    "too_few_rounds is a number": ('{"status": "PASS", "too_few_rounds": 5}', "'too_few_rounds' is 5"),
    "arms is a list": ('{"status": "PASS", "arms": []}', "'arms' is []"),
    "a NaN ratio": (json.dumps({"status": "REGRESSION", "failed": [{**ENTRY, "ratio": float("nan")}]}),
                    "'failed[0].ratio' is nan"),
    "an infinite threshold": ('{"status": "PASS", "threshold": 1e999}', "'threshold' is inf"),
    "a 5000-digit number": (f'{{"status": "PASS", "tests": {HUGE}}}', "malformed JSON"),
    "improved is an object": ('{"status": "PASS", "improved": {"x": 1}}', "'improved' is {'x': 1}"),
}
VERDICT_CSV_TEXT = ("Experiment type,Statistic,Rounds,Ratio,Lower bound,p-value,Adjusted p-value,Status\n"
                    f"{SUB},Median,16,1.000,0.990,0.5,1,passed\n{SUB},90%,16,1.000,0.990,0.5,1,passed\n")


def test_every_verdict_the_gate_writes_reads(tmp_path):
    written = Path(__file__).parents[1] / "data" / "ab-samples" / s.VERDICT_JSON
    assert verdict_file.read_stored_verdict(written, "A/B verdict")["status"] in verdict_file.STATUSES


@pytest.mark.parametrize("case", sorted(HOSTILE_VERDICTS))
def test_a_hostile_verdict_is_one_problem_naming_the_file(tmp_path, case):
    text, problem = HOSTILE_VERDICTS[case]
    path = tmp_path / s.VERDICT_JSON
    path.write_text(text)
    with pytest.raises(InputError) as raised:
        verdict_file.read_stored_verdict(path, "A/B verdict")
    assert str(raised.value).startswith(f"{path}") and problem in str(raised.value), str(raised.value)


# --- a local store: store check, history, the gate's look at the store, false-alarms ---------------------
def store_with(tmp_path: Path, relative: str, text: str) -> tuple[Path, Path]:
    """A store of two A/A gates, good-1 and bad-2, whose file `relative` holds `text`."""
    store = tmp_path / "store"
    stored_aa_gate(store, "good-1", "PASS")
    bad = stored_aa_gate(store, "bad-2", "PASS")
    (bad / relative).parent.mkdir(parents=True, exist_ok=True)
    (bad / relative).write_text(text)
    if relative.startswith(s.THROUGHPUT_DIR):
        (bad / relative).with_name(s.VERDICT_CSV).write_text(VERDICT_CSV_TEXT)
    return store, bad / relative


LOCAL_CASES = {**{case: (f"{s.AB_DIR}/{s.VERDICT_JSON}", text, problem)
                  for case, (text, problem) in HOSTILE_VERDICTS.items()},
               "junit.xml not XML": (s.JUNIT_FILE, "not xml at all", "malformed JUnit XML"),
               "junit.xml of another root": (s.JUNIT_FILE, "<html><testcase/></html>", "the root element is 'html'"),
               "a throughput verdict's failed": (f"{s.THROUGHPUT_DIR}/{s.AB_DIR}/{s.VERDICT_JSON}",
                                                 '{"status": "PASS", "kind": "throughput", "failed": [7]}',
                                                 "'failed[0]' is 7")}


@pytest.mark.parametrize("case", sorted(LOCAL_CASES))
def test_store_check_history_and_the_gate_skip_the_bad_experiment_and_read_the_good(tmp_path, capsys, case):
    relative, text, problem = LOCAL_CASES[case]
    store, bad = store_with(tmp_path, relative, text)
    assert cli.main(["store", "check", "--store", str(store)]) == s.EXIT_REGRESSION
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    [line] = [line for line in captured.out.splitlines() if line.startswith("damaged: ")]
    assert line.startswith(f"damaged: {bad}") and problem in line and line.endswith("(experiment 'bad-2')"), line

    experiments, damaged = store_check.undamaged_experiments(store)  # what gate --store reads before measuring
    assert [e.path.name for e in experiments] == ["good-1"]
    assert [d.folder.name for d in damaged] == ["bad-2"] and problem in damaged[0].problem

    requirements = tmp_path / "requirements.csv"
    requirements.write_text(f"Experiment type,Bytes,Median,99%,Max\n{SUB},16,100,100,100\n")
    arguments = ["history", "--requirements", str(requirements), "--experiments-results", str(store),
                 "--plots-directory", str(tmp_path / "plots"), "--no-plots"]
    assert cli.main(arguments) == s.EXIT_OK
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    [warning] = [line for line in captured.err.splitlines() if "warning" in line]
    assert str(bad) in warning and problem in warning and warning.endswith("; experiment bad-2 skipped")
    assert "history: 1 damaged experiment(s) skipped: bad-2" in captured.out


@pytest.mark.parametrize("case", ["failed is a number", "failed holds an empty object", "too_few_rounds is a number"])
def test_false_alarms_refuses_the_verdict_history_skips_naming_it(tmp_path, capsys, case):
    # it counted such a run as a clean A/A gate while history and the store check could not read it
    text, problem = HOSTILE_VERDICTS[case]
    store, bad = store_with(tmp_path, f"{s.AB_DIR}/{s.VERDICT_JSON}", text)
    assert cli.main(["false-alarms", "--store", str(store), "--output", str(tmp_path / "aa.csv")]) == s.EXIT_USAGE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and str(bad) in err and problem in err, err
    assert not (tmp_path / "aa.csv").exists()


# --- pull: the same experiments on a results branch ----------------------------------------------------------
def folder_tree(repository: Path, folder: Path) -> str:
    """A folder as a git tree, every file a blob (100644), every subfolder a tree."""
    entries = [("40000", path.name, folder_tree(repository, path)) if path.is_dir()
               else ("100644", path.name, blob_of_file(repository, path)) for path in sorted(folder.iterdir())]
    return tree(repository, entries)


@pytest.mark.parametrize("case", sorted(LOCAL_CASES))
def test_pull_quarantines_the_bad_experiment_and_lands_the_good_one(tmp_path, capsys, case):
    relative, text, problem = LOCAL_CASES[case]
    built, bad = store_with(tmp_path / "built", relative, text)
    remote = bare(tmp_path)
    experiments = built / s.STORE_EXPERIMENTS_DIR
    folder = tree(remote, [("40000", label, folder_tree(remote, experiments / label))
                           for label in ("bad-2", "good-1")])
    publish(remote, tree(remote, [("40000", s.STORE_EXPERIMENTS_DIR, folder)]))
    store = tmp_path / "store"
    assert cli.main(["store", "pull", "--store", str(store), "--remote", str(remote)]) == s.EXIT_OK
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert sorted(p.name for p in (store / s.STORE_EXPERIMENTS_DIR).iterdir()) == ["good-1"]
    [warning] = captured.err.splitlines()
    assert warning.startswith("perfgate store: warning: experiment 'bad-2' not pulled: ") and problem in warning
    assert f"experiments/bad-2/{relative}" in warning, warning
    # and what the nightly runs next reads the pulled store: false-alarms counts the good A/A gate
    assert cli.main(["false-alarms", "--store", str(store)]) == s.EXIT_OK
    assert "n 1 A/A gate(s), k 0 false alarm(s)" in capsys.readouterr().out


def test_push_never_uploads_an_experiment_with_a_junit_that_is_not_xml(tmp_path, capsys):
    store, bad = store_with(tmp_path, s.JUNIT_FILE, "not xml at all")
    remote = bare(tmp_path)
    assert cli.main(["store", "push", "--store", str(store), "--remote", str(remote)]) == s.EXIT_OK
    captured = capsys.readouterr()
    assert "experiment 'bad-2' not pushed: " in captured.err and "malformed JUnit XML" in captured.err
    listing = subprocess.run(["git", f"--git-dir={remote}", "ls-tree", "-r", "--name-only", "perfgate-results"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert sorted({path.split("/")[1] for path in listing}) == ["good-1"]


# --- bisect.json, the layout file, curtailed.json --------------------------------------------------------------
def test_a_bisect_json_nested_100000_deep_is_one_line_naming_it_not_a_recursion_error(tmp_path):
    from perfgate.history import bisect_links
    path = tmp_path / "bisect.json"
    path.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(InputError) as raised:
        bisect_links.read_bisect(path, "bisect/x/report.html")
    assert str(raised.value).startswith(f"{path}: cannot read the bisect's result: ")


def test_a_bisect_json_over_its_cap_is_refused_before_it_is_parsed(tmp_path):
    from perfgate.history import bisect_links
    path = tmp_path / "bisect.json"
    path.write_text('{"status": "no regression", "padding": "' + "x" * bisect_links.MAX_BYTES + '"}')
    with pytest.raises(InputError) as raised:
        bisect_links.read_bisect(path, "bisect/x/report.html")
    assert f"over {bisect_links.MAX_BYTES} bytes" in str(raised.value)


def test_verdict_refuses_a_layout_file_over_its_cap_before_anything_is_written(tmp_path):
    import ab_inputs
    ab = tmp_path / "ab"
    ab_inputs.write_rounds(ab, 4, {}, seed=3)
    given = tmp_path / "layout.json"
    padding = "x" * layout_file.MAX_BYTES
    given.write_text(json.dumps({"platform": "test", "thresholds": {SUB: 0.02}, "padding": padding}))
    done = perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots", "--layout-thresholds", str(given))
    ab_inputs.one_line_exit_2(done, str(given), f"over {layout_file.MAX_BYTES} bytes")
    assert not (ab / s.VERDICT_JSON).exists()


@pytest.mark.parametrize("record, problem", [
    ({"planned_rounds": 4, "stopped": [[SUB, 1]]}, "stopped is not an object"),
    ({"planned_rounds": "4", "stopped": {}}, "planned_rounds is not a whole number"),
    ({"planned_rounds": 1e999, "stopped": {}}, "planned_rounds is not a whole number"),
    ({"planned_rounds": 4, "stopped": {SUB: float("nan")}}, "stopped: the rounds"),
    (HUGE, "malformed JSON"),
])
def test_a_hostile_curtailed_json_is_one_problem_naming_it(tmp_path, record, problem):
    path = tmp_path / s.AB_CURTAILED_JSON
    path.write_text(f'{{"planned_rounds": {record}, "stopped": {{}}}}' if record == HUGE else json.dumps(record))
    with pytest.raises(InputError) as raised:
        curtail.read_record(tmp_path, [SUB])
    assert str(raised.value).startswith(f"{path}") and problem in str(raised.value), str(raised.value)
