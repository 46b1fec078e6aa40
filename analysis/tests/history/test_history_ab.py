"""Each commit's A/B verdict (kept in the store by the gate) marked on the history plots and page, with
the values `perfgate verdict` wrote; and the gate's history drawn with the platform's baselines."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import PLATFORM_A, metadata, scaled, tiny_summary, write_experiment
from perfgate import cli
from perfgate.gate import run as gate, plan as gate_plan
from perfgate.history import ab as history_ab
from perfgate.store import experiments as store
from perfgate import schema as s
from perfgate.plotting.history_marks import MarkedHistoryFigures
from perfgate.errors import InputError
from perfgate.ab.verdict import RATIO, STATISTIC

SUBS = ["intraprocess_best_effort", "interprocess_reliable"]
BASE = {16: (20.0, 30.0, 40.0), 1024: (25.0, 35.0, 50.0)}


def ab_folder(folder: Path, factors: dict[str, float], seed: int) -> Path:
    """An A/B folder of 16 rounds whose candidate is each sub-experiment's factor times the baseline (with
    round-to-round noise), decided by the real `perfgate verdict`."""
    rng = np.random.default_rng(seed)
    for number in range(1, 17):
        for arm in ("baseline", "candidate"):
            arm_dir = folder / s.AB_ROUNDS_DIR / f"{number:02d}" / arm
            arm_dir.mkdir(parents=True)
            summaries = {sub: scaled(tiny_summary(BASE), (factors[sub] if arm == "candidate" else 1.0)
                                     * float(rng.normal(1.0, 0.004))) for sub in SUBS}
            write_experiment(arm_dir, summaries, None)
    assert cli.main(["verdict", "--ab-directory", str(folder), "--no-plots"]) in (s.EXIT_OK, s.EXIT_REGRESSION)
    return folder


@pytest.fixture(scope="module")
def store_with_ab(tmp_path_factory) -> tuple[Path, dict[str, pd.DataFrame]]:
    """Six commits; three were gated against their parent: one regressed, one improved, one passed."""
    root = tmp_path_factory.mktemp("ab-history")
    runs = root / "store" / s.STORE_EXPERIMENTS_DIR
    ab = {3: {SUBS[0]: 1.10, SUBS[1]: 1.0}, 4: {SUBS[0]: 0.85, SUBS[1]: 1.0}, 5: {SUBS[0]: 1.0, SUBS[1]: 1.0}}
    tables = {}
    for number in range(6):
        label = f"run-{number}"
        folder = write_experiment(runs / label, {sub: tiny_summary(BASE) for sub in SUBS},
                                  metadata(label, f"2026-01-0{number + 1}T00:00:00+00:00", commit=f"{number:x}" * 40))
        if number in ab:
            decided = ab_folder(root / f"ab-{number}", ab[number], seed=number)
            (folder / s.AB_DIR).mkdir()
            for name in (s.VERDICT_CSV, s.VERDICT_JSON):
                shutil.copy(decided / name, folder / s.AB_DIR / name)
            tables[label] = pd.read_csv(decided / s.VERDICT_CSV)
    return root / "store", tables


def test_the_verdicts_perfgate_wrote_become_one_outcome_per_commit_and_sub_experiment(store_with_ab):
    store_dir, tables = store_with_ab
    experiments = store_dir / s.STORE_EXPERIMENTS_DIR
    assert history_ab.read_verdict(experiments / "run-0") is None
    regressed = history_ab.read_verdict(experiments / "run-3")
    assert regressed[SUBS[0]][0] == history_ab.REGRESSION and regressed[SUBS[1]][0] == history_ab.PASSED
    assert history_ab.read_verdict(experiments / "run-4")[SUBS[0]][0] == history_ab.IMPROVEMENT
    assert {outcome for outcome, _ in history_ab.read_verdict(experiments / "run-5").values()} == {history_ab.PASSED}
    # the text carries the ratios of verdict.csv
    rows = tables["run-3"][tables["run-3"][s.EXPERIMENT_TYPE] == SUBS[0]]
    expected = ", ".join(f"{row[STATISTIC]} {row[RATIO]:.3f}x" for _, row in rows.iterrows())
    assert regressed[SUBS[0]][1] == f"A/B regression: candidate/parent {expected}"
    assert 1.08 < rows[RATIO].iloc[0] < 1.12
    verdicts = [history_ab.read_verdict(experiments / f"run-{n}") for n in range(6)]
    assert [(p, o) for p, o, _ in history_ab.marks(verdicts, SUBS[0])] == [(3, "regression"), (4, "improvement"),
                                                                           (5, "passed")]


def test_one_of_the_two_verdict_files_alone_is_a_damaged_experiment(tmp_path, store_with_ab):
    store_dir, _ = store_with_ab
    folder = tmp_path / "run"
    shutil.copytree(store_dir / s.STORE_EXPERIMENTS_DIR / "run-3", folder)
    (folder / s.AB_DIR / s.VERDICT_CSV).unlink()
    with pytest.raises(InputError, match="the A/B verdict has verdict.json but no verdict.csv"):
        history_ab.read_verdict(folder)


@pytest.mark.heavy
def test_history_marks_each_commits_ab_verdict_on_the_page_and_the_plots(store_with_ab, tmp_path, capsys):
    store_dir, tables = store_with_ab
    requirements = tmp_path / "requirements.csv"
    requirements.write_text("Experiment type,Bytes,Median,99%,Max\n"
                            + "".join(f"{sub},{p},100.000,100.000,100.000\n" for sub in SUBS for p in BASE))
    plots = tmp_path / "plots"
    assert cli.main(["history", "--requirements", str(requirements), "--experiments-results", str(store_dir),
                     "--plots-directory", str(plots), "--all-plots"]) == s.EXIT_OK
    out = capsys.readouterr().out
    assert "history: 3 of 6 experiments have an A/B verdict against their parent, 1 with a regression" in out
    [line] = [line for line in out.splitlines() if "A/B REGRESSION" in line]
    ratio = tables["run-3"].set_index([s.EXPERIMENT_TYPE, STATISTIC]).loc[(SUBS[0], s.MEDIAN), RATIO]
    assert line.startswith(f"  A/B REGRESSION: run-3 {SUBS[0]}: A/B regression: candidate/parent Median {ratio:.3f}x")

    page = (plots / "history.html").read_text()
    charts = json.loads(re.search(r"const CHARTS = (\[.*?\]);\n", page).group(1).replace("<\\/", "</"))
    chart = next(c for c in charts if c["id"] == f"chart-{SUBS[0]}-median")
    marks = {t["name"]: t for t in chart["data"] if t.get("legendgroup") == "ab"}
    assert sorted(marks) == ["A/B improvement (1)", "A/B passed (1)", "A/B regression (1)"]
    assert marks["A/B regression (1)"]["x"] == [3] and marks["A/B improvement (1)"]["x"] == [4]
    # hovering names the commit, its date and label, then the ratios
    assert marks["A/B regression (1)"]["text"][0] == (f"3333333 2026-01-04 · run-3<br>A/B regression: candidate/parent "
                                                      f"Median {ratio:.3f}x, 90% "
                                                      f"{tables['run-3'][RATIO].iloc[1]:.3f}x")
    assert "3 of 6 experiments have an A/B verdict against their parent, 1 with a regression." in page
    assert chart["layout"]["yaxis2"]["range"] == [0, 1]
    other = next(c for c in charts if c["id"] == f"chart-{SUBS[1]}-median")
    assert [t["name"] for t in other["data"] if t.get("legendgroup") == "ab"] == ["A/B passed (3)"]
    assert (plots / SUBS[0] / "16_bytes_median.png").is_file()


def test_the_png_marks_sit_at_the_commits_with_a_legend_per_outcome(tmp_path):
    figures = MarkedHistoryFigures([f"c{n}" for n in range(6)])
    values = pd.Series([20.0] * 6)
    ab = [(3, "regression", "x"), (4, "improvement", "y"), (5, "passed", "z")]
    figures.payload(SUBS[0], s.MEDIAN, 16, values, 100.0, values > 100.0, tmp_path / "p.png", ab=ab)
    axes = figures.payload_axes
    drawn = {line.get_marker(): list(line.get_xdata()) for line in axes.lines if line.get_marker() in ("v", "^", "o")
             and not line.get_clip_on()}
    assert drawn == {"v": [3], "^": [4], "o": [5]}
    labels = [text.get_text() for text in axes.get_legend().get_texts()]
    assert labels[-3:] == ["A/B regression (1)", "A/B improvement (1)", "A/B passed (1)"]
    # the next payload without A/B verdicts carries none of them
    figures.payload(SUBS[0], s.MEDIAN, 1024, values, 100.0, values > 100.0, tmp_path / "q.png")
    assert not [line for line in axes.lines if not line.get_clip_on()]


# --- the gate's history: its stored run with the A/B, the platform's baselines -----------------------
@pytest.mark.heavy
def test_the_gate_stores_the_ab_verdict_and_redraws_history_with_the_platforms_baselines(
        tmp_path, monkeypatch, store_with_ab, capsys):
    monkeypatch.chdir(tmp_path)
    for name in (s.PLATFORM_ENV, "GITHUB_ACTIONS"):
        monkeypatch.delenv(name, raising=False)
    store_dir, tables = store_with_ab
    store_copy = tmp_path / "store"
    shutil.copytree(store_dir, store_copy, ignore=shutil.ignore_patterns(".perfgate-summary-index"))
    requirements = tmp_path / "requirements" / "bench.csv"
    requirements.parent.mkdir()
    requirements.write_text("Experiment type,Bytes,Median,99%,Max\n"
                            + "".join(f"{sub},{p},100.000,100.000,100.000\n" for sub in SUBS for p in BASE))
    # the platform's baseline, a release baseline beside it, and one of another machine
    for name, platform in (("bench", PLATFORM_A), ("bench-v3.2", PLATFORM_A), ("bench-old", {"id": "elsewhere"})):
        write_experiment(tmp_path / "baselines" / name, {sub: scaled(tiny_summary(BASE), 0.9) for sub in SUBS},
                         metadata(name, "2025-12-01T00:00:00+00:00", platform=platform))
    # a measured run, with its A/B (as run_ab leaves it in <output>/ab/)
    output = write_experiment(tmp_path / "out", {sub: scaled(tiny_summary(BASE), 1.1) for sub in SUBS},
                              metadata("run-6", "2026-01-07T00:00:00+00:00", commit="6" * 40))
    (output / s.raw_csv_name(SUBS[0])).write_text("Sample,Payload [Bytes],Latency [us]\n0,16,20.000\n1,16,21.000\n")
    (output / s.AB_DIR).mkdir()
    for name in (s.VERDICT_CSV, s.VERDICT_JSON):
        shutil.copy(store_dir / s.STORE_EXPERIMENTS_DIR / "run-3" / s.AB_DIR / name, output / s.AB_DIR / name)
    # decided by an A/B (per-commit CI): no baseline comparison, yet the history draws the platform's baselines
    plan = gate_plan.GatePlan(output=Path("out"), platform="bench", requirements=requirements, samples=200,
                              payloads=list(BASE), subexperiments=SUBS, label="run-6", baseline=None,
                              baseline_note="decided by an A/B", store=store_copy,
                              baseline_build="/opt/parent")
    steps = gate.Steps()
    gate.store_and_redraw(plan, steps)
    captured = capsys.readouterr()
    assert steps.errors == [] and steps.codes == {"history": s.EXIT_OK}, (steps.errors, captured.err)
    stored = store_copy / s.STORE_EXPERIMENTS_DIR / "run-6"
    assert (stored / s.AB_DIR / s.VERDICT_CSV).read_bytes() == (output / s.AB_DIR / s.VERDICT_CSV).read_bytes()
    assert (stored / s.stored_raw_name(SUBS[0])).is_file() and sorted(store.kept_files(stored)) == sorted(
        gate.store_files(output))
    assert "history: reference lines: baseline bench, baseline bench-v3.2" in captured.out
    assert (f"note: baseline {Path('baselines') / 'bench-old'} was measured on platform id elsewhere, this run on "
            f"{PLATFORM_A['id']}: not drawn in the history") in captured.err
    assert "history: 4 of 7 experiments have an A/B verdict against their parent, 2 with a regression" in captured.out
    assert "A/B REGRESSION: run-6 " in captured.out
