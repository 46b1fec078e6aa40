"""The gate's pages lead with the A/B verdict per sub-experiment (issue 28 item 5): its table before the
gross checks, a sub-experiment whose A/B failed red in the chips whatever its checks say, the baseline's
version and commit on the gate's page, one verdict word per banner, git's lines without literal \\n."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from perfgate import files, report
from perfgate import schema as s
from perfgate.ab import report as ab_report
from perfgate.fastdds import colcon
from perfgate.gate import failed_build
from perfgate.latency import check
from perfgate.errors import InputError
from perfgate.outcome import INCOMPLETE, PASS, REGRESSION
from perfgate.report import ab_view

SUBS = ("intraprocess_best_effort", "interprocess_best_effort")
BASELINE_COMMIT = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
VERDICT_WORDS = re.compile(rf"\b({PASS}|{REGRESSION}|{INCOMPLETE})\b")


def summaries(fastdds_fixtures) -> dict[str, pd.DataFrame]:
    intra = files.read_summary(fastdds_fixtures / "v193" / "summary_intraprocess.csv")
    inter = files.read_summary(fastdds_fixtures / "v193" / "summary_interprocess.csv")
    return {SUBS[0]: intra, SUBS[1]: inter}


def write_ab(ab_dir, measured: dict[str, pd.DataFrame], slower: dict[str, float], rounds: int = 12,
             alignments: tuple[int, int] = (64, 64)) -> None:
    """Stored rounds where each sub-experiment's candidate is `slower[sub]` times the baseline (with a
    little noise), and the A/B folder's metadata naming the baseline build; the arms' builds made with
    `perfgate build --align-functions` `alignments` (0: the compiler's own)."""
    rng = np.random.default_rng(5)
    for r in range(rounds):
        for sub, summary in measured.items():
            for arm in s.AB_ARMS:
                folder = ab_dir / s.AB_ROUNDS_DIR / f"{r + 1:02d}" / arm
                folder.mkdir(parents=True, exist_ok=True)
                factor = slower.get(sub, 1.0) * (1 + rng.normal(0, 0.002 if sub not in slower else 0)) \
                    if arm == s.AB_ARMS[1] else 1.0
                scaled = summary.copy()
                for column in (s.MEDIAN, s.P90):
                    scaled[column] = summary[column] * factor
                files.write_csv(folder / s.summary_csv_name(sub), scaled)
    fastdds = {"version": "3.2.1", "commit": BASELINE_COMMIT, "source": s.FASTDDS_SOURCE_COLCON, "prefix": "/ws/p"}
    builds = [{"cmake_args": colcon.cmake_arguments(ccache=False, align_functions=alignment)} for alignment in alignments]
    files.write_metadata(ab_dir, {"kind": "ab", "rounds": rounds, "requested_subexperiments": list(measured),
                                  "arms": {"baseline": {"spec": "ws/installs/baseline", "fastdds": {**fastdds, "build": builds[0]}},
                                           "candidate": {"spec": "ws", "fastdds": {**fastdds, "commit": "f" * 40,
                                                                                   "build": builds[1]}}}})


@pytest.fixture
def gate_output(fastdds_fixtures, tmp_path):
    """A gate's folder whose requirement checks all pass and whose A/B finds interprocess_best_effort 7.5 %
    slower (the issue's case: green chips, red A/B)."""
    experiment = tmp_path / "gate"
    experiment.mkdir()
    measured = summaries(fastdds_fixtures)
    for sub, summary in measured.items():
        files.write_csv(experiment / s.summary_csv_name(sub), summary)
    files.write_metadata(experiment, {"label": "pr-1", "samples": 200, "payloads": [int(b) for b in measured[SUBS[0]][s.BYTES]],
                                      "subexperiments": {sub: {"outcome": s.OUTCOME_OK, "error": None} for sub in SUBS}})
    requirements = tmp_path / "requirements.csv"
    rows = [{s.EXPERIMENT_TYPE: sub, s.BYTES: int(row[s.BYTES]), **{m: row[m] * 2 for m in s.CHECKED_MAGNITUDES}}
            for sub, summary in measured.items() for _, row in summary.iterrows()]
    files.write_csv(requirements, pd.DataFrame(rows, columns=list(s.REQUIREMENT_COLUMNS)))
    assert check.command_check(requirements=str(requirements), experiment_directory=str(experiment),
                               plots_directory=None, print_summaries=False, junit=None, no_plots=True) == s.EXIT_OK
    write_ab(experiment / s.AB_DIR, measured, {SUBS[1]: 1.075})
    assert ab_report.command_verdict(ab_directory=str(experiment / s.AB_DIR), no_plots=True) == s.EXIT_REGRESSION
    headline = json.loads((experiment / s.AB_DIR / s.VERDICT_JSON).read_text())["headline"]
    return report.load(experiment, requirements, ab_headline=headline)


def test_a_sub_experiment_whose_ab_failed_is_red_in_the_chips_though_its_checks_passed(gate_output):
    page = report.html_page(gate_output, {})
    chips = dict(re.findall(r'<a class="(\w+)" href="#sub-(\w+)"', page)[i][::-1] for i in range(2))
    assert chips == {SUBS[0]: "passed", SUBS[1]: "failed"}
    assert f"{SUBS[1]}: latency A/B failed, checks passed" in page


def test_the_gate_page_has_the_ab_table_before_the_gross_checks_and_the_baselines_commit(gate_output):
    page = report.html_page(gate_output, {})
    table_at = page.index('<h2 id="ab">A/B against the baseline build: REGRESSION</h2>')
    assert table_at < page.index("<h2>Failed checks (0)</h2>")
    table = page[table_at:page.index("</table>", table_at)]
    # the failed test first: interprocess_best_effort, +7.5 %, failed
    first_row = re.search(r"<tbody><tr[^>]*>(.*?)</tr>", table).group(1)
    assert SUBS[1] in first_row and "+7.5 %" in first_row and ">failed<" in first_row
    assert table.count("<tr") == 1 + 4  # header and 2 sub-experiments x 2 statistics
    assert f"Fast DDS 3.2.1, commit {BASELINE_COMMIT[:12]}, functions aligned to 64 bytes (ws/installs/baseline)." in page
    head = page[:page.index("<nav>")]
    assert "<dt>baseline build</dt>" in head and BASELINE_COMMIT[:12] in head


def test_the_step_summary_leads_with_the_ab_table(gate_output):
    markdown = report.markdown_summary(gate_output)
    ab_at = markdown.index("### A/B against the baseline build: **REGRESSION**")
    assert ab_at < markdown.index("### All checks")
    # the values in us, the change and the threshold it was held to (issue 45)
    assert re.search(rf"\| {SUBS[1]} \| Median \| [\d.]+ us \| [\d.]+ us \| \+7\.5 % \| \+1\.0 % \|", markdown[ab_at:])
    assert BASELINE_COMMIT[:12] in markdown[ab_at:markdown.index("### All checks")]


def test_every_banner_says_one_verdict_word(gate_output):
    page = report.html_page(gate_output, {})
    banners = re.findall(r'<div class="verdict [A-Z]+">(.*?)</div>', page)
    assert len(banners) == 2
    for banner in banners:
        assert len(VERDICT_WORDS.findall(banner)) == 1, banner
    verdict = report.verdict(gate_output)
    assert verdict.status == REGRESSION
    assert verdict.headline() == ("REGRESSION: the A/B against the baseline build found a regression, "
                                  "all 66 gross checks passed")


def test_the_baseline_line_says_each_arms_alignment_when_they_differ(fastdds_fixtures, tmp_path):
    """verdict.json records each arm's alignment from its build record; the gate's line reads it there."""
    measured = summaries(fastdds_fixtures)
    lines = {}
    for name, alignments in (("plain", (0, 0)), ("mixed", (0, 64))):
        write_ab(tmp_path / name, measured, {}, rounds=11, alignments=alignments)
        assert ab_report.command_verdict(ab_directory=str(tmp_path / name), no_plots=True) == s.EXIT_OK
        recorded = json.loads((tmp_path / name / s.VERDICT_JSON).read_text())["align_functions"]
        assert recorded == dict(zip(s.AB_ARMS, alignments))
        lines[name] = ab_view.read_gate_ab(tmp_path / name, "A/B", "ab/report.html", "Lower bound").baseline
    assert lines["plain"] == f"Fast DDS 3.2.1, commit {BASELINE_COMMIT[:12]} (ws/installs/baseline)"
    assert lines["mixed"] == (
        f"Fast DDS 3.2.1, commit {BASELINE_COMMIT[:12]} (ws/installs/baseline); the candidate was built with "
        "--align-functions 64: the A/B measures that alignment's own layout move too")
    # verdict.json is read as untrusted
    path = tmp_path / "mixed" / s.VERDICT_JSON
    path.write_text(json.dumps({**json.loads(path.read_text()), "align_functions": {"baseline": "64; rm -rf /"}}))
    with pytest.raises(InputError) as raised:
        ab_view.read_gate_ab(tmp_path / "mixed", "A/B", "ab/report.html", "Lower bound")
    assert raised.value.path == path and "align_functions" in raised.value.message


def test_gits_error_lines_are_printed_each_on_its_own_line(tmp_path, capsys):
    record = {"workspace": str(tmp_path / "ws"), "status": s.BUILD_FAILED, "fastdds": {"version": "3.2.1"},
              "error": "cannot fetch master from https://example.invalid/x.git: error: RPC failed\nfatal: early EOF",
              "log": str(tmp_path / "ws" / "log"), "log_tail": ""}
    assert failed_build.gate_failed_build(record, output=str(tmp_path / "out"), label=None,
                                          summary_markdown=None) == s.EXIT_INCOMPLETE
    err = capsys.readouterr().err
    assert "\\n" not in err
    assert "error: RPC failed" in err and "\nperfgate gate:   fatal: early EOF\n" in err
