"""The real gate over a results store that an untrusted branch fed (issue 23): a quick gate on the real
Fast DDS, narrowed to one sub-experiment and payload, with `--store` at a store that `perfgate store
pull` filled from a hand-built branch (one experiment quarantined, one holding the very label the gate
takes) and that holds a damaged experiment of its own. It must measure, skip the damaged one with a
warning, take its label from the pulled experiment (set aside, never replaced on the branch), report
PASS with every testcase, and push without overwriting the branch's copy."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import gzip
import pytest

from conftest import metadata, tiny_summary
from perfgate import cli, files
from perfgate import schema as s
from perfgate.measure.platform_info import fingerprint, read_readings
from perfgate.store import experiments as results_store
from store_branches import BRANCH, bare, blob, git, publish, pull, tree

SUB = "intraprocess_best_effort"
LABEL = "20260101T000000Z_system_run42.1"  # the shape of gate.yml's label: a date and a run number


def entries(remote: Path, label: str, platform: dict) -> list[tuple[str, str, str]]:
    meta = (json.dumps(metadata(label, "2026-01-01T00:00:00+00:00", platform=platform), indent=2) + "\n").encode()
    raw = gzip.compress(b"Sample,Payload [Bytes],Latency [us]\n0,16,1.0\n1,16,1.0\n", mtime=0)
    return [("100644", s.METADATA_FILE, blob(remote, meta)),
            ("100644", s.summary_csv_name(SUB), blob(remote, files.format_csv(tiny_summary({16: (1.0, 2.0, 3.0)})).encode())),
            ("100644", s.stored_raw_name(SUB), blob(remote, raw))]


@pytest.mark.fastdds
def test_a_real_gate_measures_over_a_pulled_store_with_a_prepushed_label_and_a_damaged_experiment(
        tmp_path, harness_paths, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in (s.PLATFORM_ENV, s.PIN_CPUS_ENV, s.WORKSPACE_ENV, s.STORE_ENV, "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    platform = fingerprint(read_readings())  # this machine's: the gate refuses a store of another platform
    remote = bare(tmp_path)
    link = blob(remote, b"../../.perfgate-git/config")
    folders = [("40000", "good-1", tree(remote, entries(remote, "good-1", platform))),
               ("40000", LABEL, tree(remote, entries(remote, LABEL, platform))),  # pre-pushed: the gate's label
               ("40000", "bad-link", tree(remote, [("120000", s.METADATA_FILE, link)]))]
    publish(remote, tree(remote, [("40000", s.STORE_EXPERIMENTS_DIR, tree(remote, folders))]))
    prepushed = git(remote, "rev-parse", f"{BRANCH}:{s.STORE_EXPERIMENTS_DIR}/{LABEL}")

    store = tmp_path / "store"
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK and out.startswith("pulled 2 experiment(s)") and len(err) == 1
    assert "experiment 'bad-link' not pulled: 'experiments/bad-link/metadata.json' is a symbolic link" in err[0]
    damaged = store / s.STORE_EXPERIMENTS_DIR / "damaged"  # a copy cut short on this runner
    damaged.mkdir()
    (damaged / s.METADATA_FILE).write_text(json.dumps(metadata("damaged", "2026-01-02T00:00:00+00:00",
                                                               platform=platform)))
    (damaged / s.summary_csv_name(SUB)).write_text("Bytes\n-16\n")

    requirements = tmp_path / "requirements" / "bench.csv"
    requirements.parent.mkdir()
    requirements.write_text(f"Experiment type,Bytes,Median,99%,Max\n{SUB},16,100000,100000,100000\n")
    code = cli.main(["gate", "--output", "out", "--platform", "bench", "--quick", "--subexperiments", SUB,
                     "--payloads", "16", "--label", LABEL, "--store", "store"])
    captured = capsys.readouterr()
    assert code == s.EXIT_OK, captured.out + captured.err
    assert "Traceback" not in captured.err

    # measured: 200 round trips at 16 B, every testcase passed, nothing missing
    summary = files.read_summary(tmp_path / "out" / s.summary_csv_name(SUB))
    assert summary[s.BYTES].tolist() == [16] and summary[s.SAMPLES].tolist() == [200]
    cases = ET.parse(tmp_path / "out" / s.JUNIT_FILE).getroot().findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == ["Median[16 B]", "99%[16 B]", "Max[16 B]"]
    assert not [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    # the damaged experiment skipped with a warning, the pulled one set aside with another, both in the report
    markdown = (tmp_path / "out" / s.REPORT_MARKDOWN).read_text()
    assert markdown.splitlines()[0] == "## perfgate latency gate: **PASS**"
    assert "experiments/damaged/" in markdown and "experiment damaged skipped" in markdown
    assert f"the results store's experiment '{LABEL}' was pulled from a results branch, not added here" in markdown
    [aside] = (store / results_store.SET_ASIDE_DIR).iterdir()
    assert json.loads((aside / LABEL / s.METADATA_FILE).read_text())["label"] == LABEL
    assert "samples" not in json.loads((aside / LABEL / s.METADATA_FILE).read_text())  # the branch's, kept whole
    ours = json.loads((store / s.STORE_EXPERIMENTS_DIR / LABEL / s.METADATA_FILE).read_text())
    assert ours["samples"] == 200 and not (store / results_store.PULLED_DIR / LABEL).exists()
    assert sorted(p.name for p in (store / s.STORE_EXPERIMENTS_DIR).iterdir() if p.name[0] != ".") == \
        sorted(["good-1", LABEL, "damaged"])
    assert any((store / s.STORE_HISTORY_DIR).iterdir())  # the history was redrawn

    # push: the run's label differs from the branch's (never overwritten, said so), the damaged one stays
    assert cli.main(["store", "push", "--store", str(store), "--remote", str(remote)]) == s.EXIT_OK
    pushed = capsys.readouterr()
    assert f"experiment '{LABEL}' not pushed: differs between the store and {remote}" in pushed.err
    assert "experiment 'damaged' not pushed" in pushed.err
    assert git(remote, "rev-parse", f"{BRANCH}:{s.STORE_EXPERIMENTS_DIR}/{LABEL}") == prepushed
