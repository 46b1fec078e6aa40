"""A label pre-pushed to the results branch (issue 23): anyone who can push to the branch could push
`experiments/<the label a gate will take>/` (CI labels hold a date and a run number: guessable); once
pulled, it made the gate refuse its own run before measuring. A pulled experiment now never blocks a
label: the run takes it and the pulled one is set aside whole; an experiment added here is still
never replaced. The real gate over such a store, damaged too, is in test_store_gate_untrusted.py."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from perfgate import schema as s
from perfgate.errors import InputError
from perfgate.store import experiments as results_store
from store_branches import bare, good_files, publish, pull, tree


def branch_with(remote: Path, labels: list[str]) -> str:
    folders = [("40000", label, tree(remote, good_files(remote, label))) for label in labels]
    return publish(remote, tree(remote, [("40000", s.STORE_EXPERIMENTS_DIR, tree(remote, folders))]))


def run_files(tmp_path: Path, label: str) -> dict[str, Path]:
    """A run's files as the gate hands them to the store (metadata and a summary)."""
    folder = tmp_path / "run"
    folder.mkdir(parents=True)
    (folder / s.METADATA_FILE).write_text('{"label": "%s"}\n' % label)
    (folder / "measurements_intraprocess_best_effort_summary.csv").write_text("ours\n")
    return {name: folder / name for name in (s.METADATA_FILE, "measurements_intraprocess_best_effort_summary.csv")}


def test_a_pulled_experiment_yields_its_label_to_a_run_and_is_set_aside_whole(tmp_path, capsys):
    remote = bare(tmp_path)
    commit = branch_with(remote, ["run-7"])
    store = tmp_path / "store"
    assert pull(store, remote, capsys)[0] == s.EXIT_OK
    experiments = store / s.STORE_EXPERIMENTS_DIR
    pulled = experiments / "run-7"
    marker = store / results_store.PULLED_DIR / "run-7"
    status = pulled.stat()
    assert marker.read_text() == f"branch perfgate-results commit {commit} folder {status.st_ino}.{status.st_ctime_ns}\n"
    pulled_files = {p.name: p.read_bytes() for p in pulled.iterdir()}

    note = results_store.label_taken(store, "run-7")  # the gate's check before measuring: no refusal
    assert note.startswith("the results store's experiment 'run-7' was pulled from a results branch, not added here")
    target = results_store.add_experiment(store, "run-7", run_files(tmp_path, "run-7"))
    assert target == pulled and (target / s.METADATA_FILE).read_text() == '{"label": "run-7"}\n'
    assert not marker.exists()
    [aside] = (store / results_store.SET_ASIDE_DIR).iterdir()
    assert {p.name: p.read_bytes() for p in (aside / "run-7").iterdir()} == pulled_files  # whole
    assert (aside / results_store.PULLED_DIR).read_text().startswith(f"branch perfgate-results commit {commit} ")
    assert capsys.readouterr().err == (
        f"perfgate store: warning: the results store's experiment 'run-7' was pulled from a results branch, not "
        f"added here: this run takes its label and the pulled one is set aside in {aside} (the branch's copy is "
        "never replaced: perfgate store push reports that label as differing)\n")

    # the run is now this store's own: never replaced, by a run nor by a pull
    with pytest.raises(InputError, match="already has an experiment labelled 'run-7'"):
        results_store.label_taken(store, "run-7")
    with pytest.raises(InputError, match="already has an experiment labelled 'run-7'"):
        results_store.add_experiment(store, "run-7", run_files(tmp_path / "again", "run-7"))
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK and "nothing to pull; 1 not pulled (above)" in out
    assert err[0].startswith("perfgate store: warning: experiment 'run-7' not pulled: differs between the store")
    assert (target / s.METADATA_FILE).read_text() == '{"label": "run-7"}\n'
    assert sorted(p.name for p in experiments.iterdir() if not p.name.startswith(".")) == ["run-7"]


def test_only_the_folder_a_pull_landed_counts_as_pulled(tmp_path, capsys):
    """A marker that is a symlink, or that names another folder (the pulled one removed by hand and a
    run added under its label since, on the inode just freed or not), makes no experiment pulled: the
    label stays taken."""
    remote = bare(tmp_path)
    branch_with(remote, ["run-8", "run-9"])
    store = tmp_path / "store"
    assert pull(store, remote, capsys)[0] == s.EXIT_OK
    experiments = store / s.STORE_EXPERIMENTS_DIR
    shutil.rmtree(experiments / "run-8")
    results_store.add_experiment(store, "run-8", run_files(tmp_path, "run-8"))  # a run of this store, by hand
    marker = store / results_store.PULLED_DIR / "run-9"
    marker.unlink()
    marker.symlink_to(tmp_path / "elsewhere")
    status = (experiments / "run-9").stat()
    (tmp_path / "elsewhere").write_text(f"folder {status.st_ino}.{status.st_ctime_ns}\n")
    for label in ("run-8", "run-9"):
        with pytest.raises(InputError, match=f"already has an experiment labelled '{label}'"):
            results_store.label_taken(store, label)
