"""The reports of an experiment: Markdown step summary, `::error` annotations and the HTML page.

The experiment folders are made by the real pipeline from the published Fast DDS measurements:
process.summarise (and process_experiment for plots), `check` against a requirements file with a
few requirements made too tight, and `compare` against a baseline built from Fast DDS 1.9.2.
"""
from __future__ import annotations

import base64
import dataclasses
import html
import html.parser
import io
import json
import re
import shutil

import pandas as pd
import pytest
from PIL import Image, ImageChops, ImageStat

from perfgate.latency import check, compare, process
from report_inputs import (LABEL, PAYLOADS, SOURCES, TIGHT, metadata, published_raw,
                           requirement_line, requirements_frame)
from perfgate import files, report
from perfgate import schema as s
from perfgate.model import Metadata

@pytest.fixture(scope="module")
def plotted_experiment(fastdds_fixtures, tmp_path_factory):
    """Two sub-experiments x three payloads with every plot, checked and compared with a baseline."""
    root = tmp_path_factory.mktemp("plotted")
    experiment = root / "experiment"
    experiment.mkdir()
    for sub, source in SOURCES.items():
        files.write_csv(experiment / s.raw_csv_name(sub), published_raw(fastdds_fixtures, source, PAYLOADS))
    summaries = process.process_experiment(experiment, jobs=2, plots=True)
    files.write_metadata(experiment, metadata(SOURCES, PAYLOADS))
    requirements_csv = root / "requirements.csv"
    files.write_csv(requirements_csv, requirements_frame(summaries, TIGHT))
    assert check.command_check(requirements=str(requirements_csv), experiment_directory=str(experiment),
                               plots_directory=str(experiment / s.PLOTS_DIR), print_summaries=False, junit=None,
                               no_plots=False) == s.EXIT_REGRESSION

    # the baseline: the same machine's Fast DDS 1.9.2 inter-process run, and 1.9.3 intra-process itself
    baseline = root / "baseline"
    baseline.mkdir()
    v192 = published_raw(fastdds_fixtures, ("v192", "measurements.csv"), PAYLOADS)
    files.write_csv(baseline / s.summary_csv_name("interprocess_best_effort"), process.summarise(v192))
    files.write_csv(baseline / s.summary_csv_name("intraprocess_best_effort"), summaries["intraprocess_best_effort"])
    files.write_metadata(baseline, {**metadata(SOURCES, PAYLOADS), "label": "v1.9.2"})
    compare.command_compare(reference=str(baseline), results=str(experiment),
                            plots_directory=str(experiment / s.PLOTS_DIR / s.BASELINE_COMPARISON_DIR),
                            fail_threshold=0.1, no_plots=False)
    results = report.load(experiment, requirements_csv, baseline_compared=True,
                          baseline_note="compared with v1.9.2")
    return {"results": results, "requirements": requirements_csv, "baseline": baseline, "v192": process.summarise(v192)}


@pytest.fixture(scope="module")
def full_experiment(fastdds_fixtures, tmp_path_factory):
    """Ten sub-experiments x eleven payloads (the published 1.9.3 summaries), no plots, with a baseline."""
    root = tmp_path_factory.mktemp("full")
    experiment, baseline = root / "experiment", root / "baseline"
    experiment.mkdir()
    baseline.mkdir()
    intra = files.read_summary(fastdds_fixtures / "v193" / "summary_intraprocess.csv")
    inter = files.read_summary(fastdds_fixtures / "v193" / "summary_interprocess.csv")
    older = files.read_summary(fastdds_fixtures / "v192" / "summary.csv")
    summaries = {sub: intra if sub.startswith("intraprocess") else inter for sub in s.DEFAULT_SUBEXPERIMENT_NAMES}
    for sub, summary in summaries.items():
        files.write_csv(experiment / s.summary_csv_name(sub), summary)
        files.write_csv(baseline / s.summary_csv_name(sub), intra if sub.startswith("intraprocess") else older)
    files.write_metadata(experiment, metadata(summaries, s.PAYLOADS))
    files.write_metadata(baseline, {**metadata(summaries, s.PAYLOADS), "label": "v1.9.2"})
    # every Median of three sub-experiments 5 % to 55 % too tight: 33 failures of different sizes
    tight = {}
    for number, sub in enumerate(["interprocess_reliable", "interprocess_reliable_tcp", "intraprocess_reliable"]):
        for index, (_, row) in enumerate(summaries[sub].iterrows()):
            tight[(sub, int(row[s.BYTES]), s.MEDIAN)] = row[s.MEDIAN] / (1.05 + 0.05 * index + 0.01 * number)
    requirements_csv = root / "requirements.csv"
    files.write_csv(requirements_csv, requirements_frame(summaries, tight))
    check.command_check(requirements=str(requirements_csv), experiment_directory=str(experiment),
                        plots_directory=str(experiment / s.PLOTS_DIR), print_summaries=False, junit=None, no_plots=True)
    compare.command_compare(reference=str(baseline), results=str(experiment),
                            plots_directory=str(experiment / s.PLOTS_DIR / s.BASELINE_COMPARISON_DIR),
                            fail_threshold=0.02, no_plots=True)  # 1.9.3 is a few % slower than 1.9.2 here and there
    results = report.load(experiment, requirements_csv, baseline_compared=True, baseline_note="compared with v1.9.2")
    return {"results": results, "requirements": requirements_csv, "tight": tight}


# --- Markdown -------------------------------------------------------------------------------------
def test_markdown_gives_the_verdict_first_then_the_failed_checks_worst_first(plotted_experiment):
    text = report.markdown_summary(plotted_experiment["results"])
    lines = text.splitlines()
    assert lines[0] == "## perfgate latency gate: **REGRESSION**"
    assert lines[2].startswith("REGRESSION: 2 of 18 checks failed")
    assert "**Fast DDS** 2.9.1 (commit 0123456789abcdef, the system's installed package)" in text
    assert "f00dfeedf00dfeed" in text and "**samples** 10000" in text
    failed_at = text.index("### Failed checks (2)")
    assert failed_at < text.index("### Baseline") < text.index("### All checks")
    failed_rows = [line for line in lines if line.startswith("| ") and "_best_effort |" in line][:2]
    # worst first: 35.69 % over before 13.87 % over
    assert failed_rows[0].startswith("| interprocess_best_effort | Max[1024 B] | 135.690 | 100.000 | +35.69% |")
    assert failed_rows[1].startswith("| intraprocess_best_effort | Median[16384 B] | 1.708 | 1.500 | +13.87% |")
    # the baseline's value and the change against it: 1.9.2's inter-process Max at 1024 B
    old_max = float(plotted_experiment["v192"].set_index(s.BYTES).at[1024, s.MAX])
    assert f"| {files.format_float(old_max)} | {(135.690 - old_max) / old_max * 100:+.2f}% |" in failed_rows[0]
    # intra-process compared with itself: no change
    assert failed_rows[1].endswith("| 1.708 | +0.00% |")


def test_markdown_escapes_the_label_and_folds_every_check(plotted_experiment):
    text = report.markdown_summary(plotted_experiment["results"])
    assert "<script>" not in text
    assert "&lt;script&gt;" in text and "&#124;" in text and "&#96;a&#96;" in text
    assert text.count("<details>") == 2 == text.count("</details>")
    for sub in SOURCES:
        assert f"<summary>{sub}: " in text
    assert text.count("| passed |") == 16 and text.count("| failed |") == 2


def test_markdown_of_a_full_experiment_stays_far_below_one_mebibyte(full_experiment):
    text = report.markdown_summary(full_experiment["results"])
    size = len(text.encode("utf-8"))
    assert size < report.MARKDOWN_LIMIT // 10, size
    assert "REGRESSION: 33 of 330 checks failed" in text
    assert text.count("| passed |") + text.count("| failed |") == 330
    assert "### All checks" in text and "Left out" not in text
    # the baseline comparison found 1.9.3 more than 2 % slower than 1.9.2 somewhere and lists it
    failures = full_experiment["results"].baseline_failures
    assert failures is not None and len(failures) > 0
    assert f"{len(failures)} baseline comparison(s) over the limit" in text.splitlines()[2]


# --- annotations ----------------------------------------------------------------------------------
def test_at_most_ten_annotations_worst_first_on_the_requirement_rows(full_experiment):
    requirements_csv = full_experiment["requirements"]
    commands = report.annotations(full_experiment["results"], "requirements/ci-xeon.csv")
    assert len(commands) == report.MAX_ANNOTATIONS
    rows = report.failed_checks(report.check_rows(full_experiment["results"]))
    assert len(rows) == 33
    percentages = []
    for command, (_, row) in zip(commands, rows.head(10).iterrows()):
        line = requirement_line(requirements_csv, row[report.SUB], int(row[s.BYTES]))
        assert command.startswith(f"::error file=requirements/ci-xeon.csv,line={line},title=Latency regression%3A "
                                  f"{row[report.SUB]} Median[{int(row[s.BYTES])} B]::")
        percentages.append(float(command.split("(+")[1].split("%25 over")[0]))
    assert percentages == sorted(percentages, reverse=True)
    # the worst of all 33: every failure not annotated is no worse than the last annotated one
    assert rows[s.PERCENT_OVER].iloc[10:].max() <= rows[s.PERCENT_OVER].iloc[9]
    assert {(r[report.SUB], int(r[s.BYTES]), r[s.CHECK]) for _, r in rows.iterrows()} == set(full_experiment["tight"])


def test_annotation_escaping_follows_the_workflow_command_rules(plotted_experiment):
    commands = report.annotations(plotted_experiment["results"], "req: a,b%.csv")
    assert len(commands) == 2
    properties, message = commands[0][len("::error "):].split("::", 1)
    assert properties.startswith("file=req%3A a%2Cb%25.csv,line=")
    assert "title=Latency regression%3A interprocess_best_effort Max[1024 B]" in properties
    assert "\n" not in message and "+35.69%25 over" in message and "%" not in message.replace("%25", "")
    assert report.escape_command_data("a%b\r\nc") == "a%25b%0D%0Ac"
    assert report.escape_command_property("x:y,z\n") == "x%3Ay%2Cz%0A"


# --- HTML -----------------------------------------------------------------------------------------
class PageParser(html.parser.HTMLParser):
    """Collects images and checks that every opened element (bar the void ones) is closed in order."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.images, self.open, self.texts, self.scripts = [], [], [], 0

    def handle_starttag(self, tag, attributes):
        if tag == "script":
            self.scripts += 1
        if tag == "img":
            self.images.append(dict(attributes))
        elif tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (self.open[-5:], tag)
        self.open.pop()

    def handle_data(self, data):
        self.texts.append(data)


def test_html_page_embeds_every_plot_and_escapes_text(plotted_experiment):
    results = plotted_experiment["results"]
    page = report.html_page(results, report.embedded_images(results.experiment_dir / s.PLOTS_DIR))
    parser = PageParser()
    parser.feed(page)
    parser.close()
    assert parser.open == [] and parser.scripts == 0
    text = "".join(parser.texts)
    assert LABEL in text  # shown as text, the script tag escaped
    assert "REGRESSION: 2 of 18 checks failed" in text
    pngs = sorted((results.experiment_dir / s.PLOTS_DIR).rglob("*.png"))
    # histograms and series (2 x 3 x 2), comparison (4), check plots (2 x 3) and the baseline's plots
    assert len(pngs) >= 12 + 4 + 6 + 2
    embedded = {}
    for image in parser.images:
        prefix = "data:image/png;base64,"  # small enough to be embedded unchanged
        assert image["src"].startswith(prefix)
        embedded[image["alt"]] = base64.b64decode(image["src"][len(prefix):])
    expected = {p.relative_to(results.experiment_dir / s.PLOTS_DIR).as_posix(): p.read_bytes() for p in pngs}
    assert embedded == expected  # every plot once, byte for byte (small enough not to be re-encoded)
    assert "Max[1024 B]" in text and "+35.69%" in text and "135.690" in text
    # each sub-experiment's section names it in words under its id (issue 45)
    assert "UDPv4 over loopback, best effort" in text and "intra-process (one process, no transport)" in text


@pytest.mark.heavy
def test_html_page_of_many_plots_is_reencoded_to_a_few_megabytes(plotted_experiment):
    plots = plotted_experiment["results"].experiment_dir / s.PLOTS_DIR
    pngs = sorted(plots.rglob("*.png"))
    original = sum(p.stat().st_size for p in pngs)
    shrunk = report.embedded_images(plots, budget=original // 2)
    assert set(shrunk) == set(pngs)
    decoded = {}
    for path, uri in shrunk.items():
        header, data = uri.split(",", 1)
        decoded[path] = (header, base64.b64decode(data))
    assert sum(len(data) for _, data in decoded.values()) < original * 0.4
    for path, (header, data) in decoded.items():
        with Image.open(io.BytesIO(data)) as image, Image.open(path) as source:
            assert header == f"data:image/{image.format.lower()};base64"
            if source.width > report.MAX_IMAGE_WIDTH:  # the comparison plots are wider: scaled down
                assert image.width == report.MAX_IMAGE_WIDTH
                assert image.height == round(source.height * report.MAX_IMAGE_WIDTH / source.width)
                continue
            assert image.size == source.size
            # the same picture: on average within a few levels of 255 per pixel and channel
            difference = ImageChops.difference(image.convert("RGB"), source.convert("RGB"))
            assert sum(ImageStat.Stat(difference).mean) / 3 < 3.0


def test_missing_data_beside_a_regression_is_listed_and_the_regression_decides(plotted_experiment, tmp_path):
    source = plotted_experiment["results"].experiment_dir
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    for name in (s.summary_csv_name(sub) for sub in SOURCES):
        shutil.copy(source / name, experiment / name)
    # the run was asked for a third sub-experiment that did not finish; the requirements ask for it. Two checks
    # failed too: a proven regression outranks the missing data (perfgate.outcome, issue 44), both reported
    requested = [*SOURCES, "interprocess_reliable"]
    files.write_metadata(experiment, metadata(requested, PAYLOADS, {"interprocess_reliable": s.OUTCOME_INCOMPLETE}))
    requirements = files.read_requirements(plotted_experiment["requirements"]).drop(columns=["line"])
    extra = requirements[requirements[s.EXPERIMENT_TYPE] == "interprocess_best_effort"].assign(
        **{s.EXPERIMENT_TYPE: "interprocess_reliable"})
    requirements_csv = tmp_path / "requirements.csv"
    files.write_csv(requirements_csv, pd.concat([requirements, extra], ignore_index=True))
    code = check.command_check(requirements=str(requirements_csv), experiment_directory=str(experiment),
                               plots_directory=str(experiment / s.PLOTS_DIR), print_summaries=False, junit=None,
                               no_plots=True)
    assert code == s.EXIT_REGRESSION
    results = report.load(experiment, requirements_csv)
    verdict = report.verdict(results)
    assert verdict.status == report.REGRESSION and verdict.exit_code == s.EXIT_REGRESSION
    assert verdict.checks_failed == 2  # the regression is reported beside the missing data
    text = report.markdown_summary(results)
    assert text.splitlines()[0] == "## perfgate latency gate: **REGRESSION**"
    missing_at = text.index("### Missing data")
    assert text.index("### Failed checks (2)") < missing_at
    assert "| interprocess_reliable |" in text[missing_at:text.index("### Baseline")]
    assert "incomplete" in text[missing_at:]


def test_rows_a_narrowed_run_was_not_asked_for_are_listed_once_not_missing(plotted_experiment, tmp_path):
    source = plotted_experiment["results"].experiment_dir
    experiment = tmp_path / "experiment"
    experiment.mkdir()
    for name in (s.summary_csv_name(sub) for sub in SOURCES):
        shutil.copy(source / name, experiment / name)
    # the run was narrowed to the two sub-experiments and three payloads; the requirements also list a
    # third sub-experiment and a fourth payload (docs/formats.md section 6: not asked for, not missing)
    files.write_metadata(experiment, {**metadata(SOURCES, PAYLOADS), "requested_subexperiments": list(SOURCES)})
    requirements = files.read_requirements(plotted_experiment["requirements"]).drop(columns=["line"])
    best_effort = requirements[requirements[s.EXPERIMENT_TYPE] == "interprocess_best_effort"]
    extra = pd.concat([best_effort.assign(**{s.EXPERIMENT_TYPE: "interprocess_reliable"}),
                       best_effort.head(1).assign(**{s.BYTES: 64})], ignore_index=True)
    requirements_csv = tmp_path / "requirements.csv"
    files.write_csv(requirements_csv, pd.concat([requirements, extra], ignore_index=True))
    code = check.command_check(requirements=str(requirements_csv), experiment_directory=str(experiment),
                               plots_directory=str(experiment / s.PLOTS_DIR), print_summaries=False, junit=None,
                               no_plots=True)
    assert code == s.EXIT_REGRESSION  # the two tight checks; nothing missing
    results = report.load(experiment, requirements_csv)
    verdict = report.verdict(results)
    assert verdict.status == report.REGRESSION and verdict.missing == 0 and verdict.checks_failed == 2
    text = report.markdown_summary(results)
    assert "### Missing data" not in text
    listed = text[text.index("### Not asked for (4 requirement rows, not checked)"):text.index("### Baseline")]
    assert "| interprocess_reliable | 16, 1024, 16384 B |" in listed
    assert "| interprocess_best_effort | 64 B |" in listed
    page = report.html_page(results, {})
    assert "<h2>Missing data (0)</h2>" in page
    assert page.count("Not asked for (4 requirement rows, not checked)") == 1


def test_write_reports_writes_both_files_and_appends_to_the_step_summary(plotted_experiment, tmp_path):
    results = plotted_experiment["results"]
    step_summary = tmp_path / "step_summary.md"
    step_summary.write_text("earlier step\n")
    html_path, markdown_path = report.write_reports(results, step_summary)
    assert html_path == results.experiment_dir / s.REPORT_HTML and html_path.stat().st_size > 100_000
    assert markdown_path.read_text() == report.markdown_summary(results)
    assert step_summary.read_text() == "earlier step\n" + markdown_path.read_text()
    assert html_path.stat().st_size < 5_000_000
    assert not [p for p in results.experiment_dir.iterdir() if p.name.startswith(".")]  # no temporary leftovers


def test_an_interrupted_gates_report_embeds_its_plots_as_they_are(plotted_experiment, monkeypatch):
    # a stopped gate has seconds left: no plot is re-encoded, however large the page grows
    results = plotted_experiment["results"]
    pngs = sorted((results.experiment_dir / s.PLOTS_DIR).rglob("*.png"))
    monkeypatch.setattr(report, "IMAGE_BUDGET", 1)  # every page is over it: a finished gate's is shrunk
    html_path, _ = report.write_reports(results, interrupted=True)
    sources = re.findall(r'<img src="data:image/png;base64,([^"]+)"', html_path.read_text())
    assert sorted(base64.b64decode(source) for source in sources) == sorted(p.read_bytes() for p in pngs)
    report.write_reports(results)
    assert "data:image/webp;base64" in html_path.read_text()  # shrunk when not interrupted


def test_report_md_as_written_shows_on_github_what_the_text_says(plotted_experiment):
    """GitHub decodes character references alike in paragraphs, table cells and HTML blocks
    (<details>, <summary>), but shows a backslash escape inside an HTML block with its backslash:
    the report.md on disk has no backslash, every table row keeps its cells, and each text decodes
    back to what it was."""
    warning = r"run `perfgate check` first | *twice* ~~here~~ C:\tmp"
    results = dataclasses.replace(plotted_experiment["results"], warnings=[warning], step_errors=["a `b` | c"])
    _, markdown_path = report.write_reports(results)
    text = markdown_path.read_text()
    assert "\\" not in text and "`" not in text
    lines = text.splitlines()
    assert html.unescape(next(x for x in lines if x.startswith("- :warning: "))) == f"- :warning: {warning}"
    assert html.unescape(next(x for x in lines if x.startswith("- :x: "))) == "- :x: a `b` | c"
    label_item = next(x for x in lines if "**label**" in x).split(" · ")
    assert html.unescape(next(x for x in label_item if x.startswith("**label**"))) == f"**label** {LABEL}"
    header_cells = None
    for line in lines:
        if not line.startswith("|"):
            header_cells = None
            continue
        header_cells = header_cells or line.count("|")
        assert line.count("|") == header_cells, line  # no cell split by a | in the data
    summaries = [x for x in lines if x.startswith("<summary>")]
    assert [html.unescape(x) for x in summaries] == [f"<summary>{sub}: {n} passed, {9 - n} failed</summary>"
                                                      for sub, n in (("intraprocess_best_effort", 8),
                                                                     ("interprocess_best_effort", 8))]
    # an HTML block ends at the first blank line: each <details> opens one that is only the summary
    for at, line in enumerate(lines):
        if line == "<details>":
            assert lines[at + 1].startswith("<summary>") and lines[at + 2] == ""


def test_metadata_line_names_what_was_measured_where():
    items = dict(report.metadata_items(Metadata.from_json(json.loads(json.dumps(metadata(SOURCES, PAYLOADS))))))
    assert items["Fast DDS"] == "2.9.1 (commit 0123456789abcdef, the system's installed package)"
    assert items["latency"] == "half the round trip (as Fast DDS' LatencyTest reports it)"  # the published runs
    assert items["platform"] == "no platform named (machine f00dfeedf00dfeed, Intel(R) Xeon(R) E3-1230)"
    named = dict(report.metadata_items(Metadata.from_json(metadata(SOURCES, PAYLOADS)), "vm-2core-x64"))
    assert named["platform"] == "vm-2core-x64 (machine f00dfeedf00dfeed, Intel(R) Xeon(R) E3-1230)"
    assert items["samples"] == "10000" and items["label"] == LABEL
    assert "pinning" not in items and "load" not in items  # older metadata: nothing invented
    assert report.metadata_items(None) == [("metadata", "none (metadata.json missing)")]


def test_metadata_line_shows_the_pinning_and_the_load_the_run_had():
    recorded = {**metadata(SOURCES, PAYLOADS),
                "cpu_pinning": {"pinned": True, "publisher_cpu": 1, "subscriber_cpu": 0, "requested": "auto"},
                "load_average": {"before": [0.83, 1.2, 1.1], "after": [1.57, 1.3, 1.2]}}
    items = dict(report.metadata_items(Metadata.from_json(recorded)))
    assert items["pinning"] == "publisher CPU 1, subscriber CPU 0"
    assert items["load"] == "0.83 before, 1.57 after (1-minute average)"
    unpinned = dict(report.metadata_items(Metadata.from_json({
        **recorded, "cpu_pinning": {"pinned": False, "requested": "none"},
        "load_average": {"before": [2.5, 1, 1], "after": None}})))
    assert unpinned["pinning"] == "not pinned" and unpinned["load"] == "2.50 before, ? after (1-minute average)"


def test_metadata_line_says_whether_idle_cpus_were_kept_awake():
    def idle(entry):
        return dict(report.metadata_items(Metadata.from_json({**metadata(SOURCES, PAYLOADS), "cpu_latency": entry})))
    assert idle({"requested": "awake", "held_us": 0, "idle_driver": "haltpoll"})["idle CPUs"] == \
        "kept awake (0 us wake-up latency held)"
    assert idle({"requested": "awake", "held_us": None, "idle_driver": None, "problem": "permission denied"})[
        "idle CPUs"] == "the system's policy (awake was asked for, not held)"
    assert idle({"requested": "system", "held_us": None, "idle_driver": None})["idle CPUs"] == "the system's policy"
    # a hostile stored value is never echoed: it ran under the system's policy
    assert idle({"requested": "<script>", "held_us": 0, "idle_driver": None})["idle CPUs"] == "the system's policy"
    assert "idle CPUs" not in idle({})  # a run from before the option: nothing invented
