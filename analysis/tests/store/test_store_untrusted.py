"""`perfgate store pull/push/check` against an untrusted results branch (issue 23): branches built from
hand-written git objects (`git hash-object -w --literally`, `git commit-tree`, `git update-ref` in a
bare repository), as an attacker who can push to the results repository would build them. Each bad
experiment is quarantined (skipped, one warning line naming the path, exit 0), the good ones beside
it are pulled, and nothing outside the store is ever written.

Only perfgate.cli and perfgate.schema are imported, so these tests run unchanged against the package
before the fix (they failed there: a TypeError traceback from tarfile's `filter=` on Python 3.11.2,
symlinks, scripts and plots pulled, exit 2 for good after one crafted experiment, a gzip bomb read whole).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from conftest import PLATFORM_A, metadata, tiny_summary
from store_branches import (BRANCH, SUB, assert_only_good_pulled, bare, blob, blob_of_file, branch_of, experiment_tree,
                            git, good_files, labels, pull, snapshot, tree)
from perfgate import cli, csv_lines, files
from perfgate import schema as s

MiB = 1 << 20


def test_a_branch_of_the_cve_2025_4517_shape_writes_nothing_outside_the_store(tmp_path, capsys):
    """16 nested folders of 247-byte names with a one-letter symlink to each, a 254-byte link climbing
    back out through them, an escaping symlink and a folder named like it holding a file: the
    shape that beat tarfile's data filter past PATH_MAX. Also a symlink to the checkout's
    .venv/bin/perfgate with a file under it."""
    remote = bare(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    sentinel = outside / "sentinel"
    sentinel.write_text("untouched\n")
    checkout_bin = tmp_path / "checkout" / ".venv" / "bin"
    checkout_bin.mkdir(parents=True)
    (checkout_bin / "perfgate").write_text("#!/bin/sh\necho real\n")
    store = tmp_path / "store"

    long_name, steps = "d" * 247, "abcdefghijklmnop"
    payload = blob(remote, b"#!/bin/sh\necho pwned\n")
    # innermost first: each level holds the long folder and a one-letter symlink to it
    inner = tree(remote, [("120000", "l" * 254, blob(remote, ("../" * len(steps)).encode()))])
    for step in reversed(steps):
        inner = tree(remote, [("40000", long_name, inner), ("120000", step, blob(remote, long_name.encode()))])
    link_path = "/".join(steps) + "/" + "l" * 254
    escape_target = link_path + "/" + "../" * 3 + "outside"
    escape = tree(remote, [("100644", "sentinel", payload)])
    venv = tree(remote, [("100755", "perfgate", payload)])
    evil = tree(remote, [
        ("40000", long_name, inner), *[("120000", step, blob(remote, long_name.encode())) for step in steps[:1]],
        ("120000", "escape", blob(remote, escape_target.encode())), ("40000", "escape", escape),
        ("120000", "bin", blob(remote, str(checkout_bin).encode())), ("40000", "bin", venv),
        ("120000", "metadata.json", blob(remote, b"../../.perfgate-git/config")),
    ])
    top_escape = tree(remote, [("100644", "sentinel", payload)])
    branch_of(remote, [("40000", "evil", evil), ("120000", "outside", blob(remote, str(outside).encode())),
                       ("40000", "outside", top_escape)])
    before = snapshot(tmp_path, store)

    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK
    assert sentinel.read_text() == "untouched\n"
    assert (checkout_bin / "perfgate").read_text() == "#!/bin/sh\necho real\n"
    assert snapshot(tmp_path, store) == before  # nothing new, nothing changed outside the store
    assert_only_good_pulled(store)
    assert out.startswith("pulled 1 experiment(s)")
    evil = [line for line in err if "experiment 'evil'" in line]
    assert len(evil) == 1 and evil[0].startswith("perfgate store: warning: experiment 'evil' not pulled: 'experiments/evil/")
    assert evil[0].endswith("' is a symbolic link, not a regular file (mode 100644)")
    assert "perfgate store: warning: experiment 'outside' not pulled: 'experiments/outside/sentinel' is not a file the " \
           "store keeps" in err
    assert any("outside any experiment ignored: 'experiments/outside' is not in an experiment folder" in line
               for line in err)
    assert len(err) == 3


# --- each kind of bad entry -----------------------------------------------------------------------
def bad_entries(remote: Path) -> dict[str, tuple[list, str]]:
    """name -> (entries of experiments/, the warning's text after `experiment <label> not pulled: `)."""
    text = blob(remote, b"x\n")
    script = blob(remote, b"<script>alert(1)</script>\n")
    meta = good_files(remote, "x")[0][2]
    return {
        "symlink to the git cache": ([experiment_tree(remote, "bad", [])[:2] + (tree(remote, [
            ("120000", s.METADATA_FILE, blob(remote, b"../../.perfgate-git/config"))] + good_files(remote, "bad")[1:]),)],
            "'experiments/bad/metadata.json' is a symbolic link, not a regular file (mode 100644)"),
        "absolute symlink": ([experiment_tree(remote, "bad", [("120000", s.check_csv_name(SUB), blob(remote, b"/etc/passwd"))])],
                             f"'experiments/bad/{s.check_csv_name(SUB)}' is a symbolic link, not a regular file (mode 100644)"),
        "report.html with a script": ([experiment_tree(remote, "bad", [("100644", "report.html", script)])],
                                      "'experiments/bad/report.html' is not a file the store keeps"),
        "executable run.sh": ([experiment_tree(remote, "bad", [("100755", "run.sh", text)])],
                              "'experiments/bad/run.sh' is an executable file, not a regular file (mode 100644)"),
        "executable kept file": ([experiment_tree(remote, "bad", [("100755", s.check_csv_name(SUB), text)])],
                                 f"'experiments/bad/{s.check_csv_name(SUB)}' is an executable file, not a regular file "
                                 "(mode 100644)"),
        "a plot": ([experiment_tree(remote, "bad", [("40000", "plots", tree(remote, [("100644", "x.png", text)]))])],
                   "'experiments/bad/plots/x.png' is not a file the store keeps"),
        "a submodule": ([experiment_tree(remote, "bad", [("160000", "ab", "1" * 40)])],
                        "'experiments/bad/ab' is a submodule (a commit), not a regular file (mode 100644)"),
        "a line break in the label": ([experiment_tree(remote, "bad\nlabel", [])],
                                      "'experiments/bad\\nlabel/' names an experiment whose label holds a "
                                      "control character (U+000A) at character 4"),
        "a terminal escape in the label": ([experiment_tree(remote, "\x1b[31mred", [])],
                                           "'experiments/\\x1b[31mred/' names an experiment whose label "
                                           "holds a control character (U+001B) at character 1"),
        "a label that is not UTF-8": ([("40000", b"bad\xff", tree(remote, [("100644", s.METADATA_FILE, meta)]))],
                                      "'experiments/bad\\udcff/' names an experiment whose label holds a "
                                      "byte that is not UTF-8 (U+DCFF) at character 4"),
        "a 300-byte label": ([experiment_tree(remote, "x" * 300, [])],
                             f"'experiments/{'x' * 300}/' names an experiment whose label is 300 bytes long "
                             "(UTF-8), more than 200"),
        "a label with a space": ([experiment_tree(remote, "a b", [])],
                                 "'experiments/a b/' names an experiment whose label is not letters, "
                                 "digits, '.', '_' or '-' (from a letter or digit)"),
        "a file listed twice": ([experiment_tree(remote, "bad", [("100644", s.METADATA_FILE, text)])],
                                "'experiments/bad/metadata.json' is listed twice"),
        "both raw forms": ([experiment_tree(remote, "bad", [("100644", s.raw_csv_name(SUB), text)])],
                           f"'experiments/bad/' holds both {s.raw_csv_name(SUB)} and its .gz form"),
        "metadata over 1 MiB": ([("40000", "bad", tree(remote, [("100644", s.METADATA_FILE,
                                                                 blob(remote, b" " * (MiB + 1)))]))],
                                f"'experiments/bad/metadata.json' is {MiB + 1} bytes, more than the {MiB} its kind may hold"),
        "a tree where a file should be": ([experiment_tree(remote, "bad", [("100644", s.check_csv_name(SUB), tree(
            remote, [("100644", "a", text)]))])], f"'experiments/bad/{s.check_csv_name(SUB)}' is a tree object, not a blob"),
        "a terminal escape in metadata's label": ([("40000", "bad", tree(remote, [("100644", s.METADATA_FILE, blob(
            remote, json.dumps({"label": "<script>x</script>\x1b[31m"}).encode()))] + good_files(remote, "bad")[1:]))],
            "experiments/bad/metadata.json: the label '<script>x</script>\\x1b[31m' holds a control character "
            "(U+001B) at character 19"),
        "a 300-byte file name": ([experiment_tree(remote, "bad", [("100644", s.check_csv_name("x" * 300), text)])],
                                 f"'experiments/bad/{s.check_csv_name('x' * 300)}' has a name longer than 255 bytes, "
                                 "which no file system takes"),
        "a summary that does not read": ([experiment_tree(remote, "bad", [])[:2] + (tree(remote, good_files(remote, "bad")[:1] + [
            ("100644", s.summary_csv_name(SUB), blob(remote, b"Bytes\n-16\n"))]),)],
            f"experiments/bad/{s.summary_csv_name(SUB)}"),
    }


BAD_CASES = ["symlink to the git cache", "absolute symlink", "report.html with a script", "executable run.sh",
             "executable kept file", "a plot", "a submodule", "a line break in the label",
             "a terminal escape in the label", "a label that is not UTF-8", "a 300-byte label", "a label with a space",
             "a file listed twice", "both raw forms", "metadata over 1 MiB", "a summary that does not read",
             "a tree where a file should be", "a terminal escape in metadata's label", "a 300-byte file name"]


@pytest.mark.parametrize("case", BAD_CASES)
def test_a_bad_experiment_is_quarantined_and_the_good_one_beside_it_pulled(tmp_path, capsys, case):
    remote = bare(tmp_path)
    entries, reason = bad_entries(remote)[case]
    branch_of(remote, entries)
    store = tmp_path / "store"
    before = snapshot(tmp_path, store)
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK
    assert_only_good_pulled(store)
    assert snapshot(tmp_path, store) == before
    assert len(err) == 1 and err[0].startswith("perfgate store: warning: experiment ") and reason in err[0], err
    assert out.endswith("; 1 not pulled (above)\n") and out.count("\n") == 1
    # and again: the quarantined experiment blocks nothing (pull, push of a new run, store check)
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK and "nothing to pull; 1 not pulled (above)" in out and len(err) == 1
    assert cli.main(["store", "check", "--store", str(store)]) == s.EXIT_OK
    assert capsys.readouterr().out == "perfgate store check: 1 experiment(s), 0 damaged\n"


def test_entries_outside_any_experiment_are_ignored_and_said_once(tmp_path, capsys):
    remote = bare(tmp_path)
    script = blob(remote, b"#!/bin/sh\n")
    branch_of(remote, [("100644", "stray.csv", script)], root_extra=[("100755", "run.sh", script)])
    code, out, err = pull(tmp_path / "store", remote, capsys)
    assert code == s.EXIT_OK and out.startswith("pulled 1 experiment(s)")
    assert err == ["perfgate store: warning: 2 entr(ies) of " + str(remote) + " branch perfgate-results outside any "
                   "experiment ignored: 'experiments/stray.csv' is not in an experiment folder (experiments/<label>/); "
                   "'run.sh' is not in an experiment folder (experiments/<label>/)"]
    assert_only_good_pulled(tmp_path / "store")
    assert not (tmp_path / "store" / "run.sh").exists()


def test_warnings_stop_at_100_lines_and_count_the_rest(tmp_path, capsys):
    remote = bare(tmp_path)
    script = blob(remote, b"#!/bin/sh\n")
    branch_of(remote, [experiment_tree(remote, f"bad-{number:03d}", [("100755", "run.sh", script)])
                       for number in range(130)])
    code, out, err = pull(tmp_path / "store", remote, capsys)
    assert code == s.EXIT_OK and out.endswith("; 130 not pulled (above)\n")
    assert len(err) == 101 and err[0].startswith("perfgate store: warning: experiment 'bad-000' not pulled: ")
    assert err[-1] == "perfgate store: warning: and 30 more experiment(s) not pulled"
    assert_only_good_pulled(tmp_path / "store")


# --- sizes ----------------------------------------------------------------------------------------
def gzip_bomb(path: Path, inflated: int) -> Path:
    """`inflated` zero bytes of CSV-looking data, gzip'd in 1 MiB pieces (a few hundred KiB on disk)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    with open(path, "wb") as handle:
        handle.write(compressor.compress(b"Sample,Payload [Bytes],Latency [us]\n"))
        for _ in range(inflated // MiB):
            handle.write(compressor.compress(b"0" * MiB))
        handle.write(compressor.flush())
    return path


def bomb_problem(path: Path) -> str:
    """What the readers say of a .gz that inflates past its limit (csv_lines: 64 times its size, at most 128 MiB)."""
    return csv_lines.inflation_problem(csv_lines.inflation_limit(path.stat().st_size))


def test_a_gzip_bomb_on_the_branch_is_not_pulled(tmp_path, capsys):
    remote = bare(tmp_path)
    bomb = gzip_bomb(tmp_path / "bomb.gz", 130 * MiB)
    assert bomb.stat().st_size < MiB
    entries = [("40000", "bomb", tree(remote, good_files(remote, "bomb")[:2]
                                     + [("100644", s.stored_raw_name(SUB), blob_of_file(remote, bomb))]))]
    branch_of(remote, entries)
    code, out, err = pull(tmp_path / "store", remote, capsys)
    assert code == s.EXIT_OK
    assert_only_good_pulled(tmp_path / "store")
    assert err == [f"perfgate store: warning: experiment 'bomb' not pulled: experiments/bomb/{s.stored_raw_name(SUB)}: "
                   + bomb_problem(bomb)]


def test_reading_a_gzip_bomb_is_exit_2_naming_the_file_not_a_memory_error(tmp_path, capsys):
    folder = tmp_path / "experiment"
    folder.mkdir()
    gzip_bomb(folder / s.stored_raw_name(SUB), 130 * MiB)
    code = cli.main(["process", "--experiment-directory", str(folder), "--no-plots"])
    captured = capsys.readouterr()
    assert code == s.EXIT_USAGE and "Traceback" not in captured.err and "MemoryError" not in captured.err
    assert captured.err.strip().splitlines() == [
        f"perfgate process: error: {folder / s.stored_raw_name(SUB)}: raw measurements file "
        + bomb_problem(folder / s.stored_raw_name(SUB))]


def peak_rss_of_pull(tmp_path: Path, remote: Path, store: str) -> tuple[int, list[str]]:
    """(the peak RSS of a `perfgate store pull` process, KiB; its stderr lines)."""
    script = ("import resource, sys\nfrom perfgate import cli\ncode = cli.main(sys.argv[1:])\n"
              "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", script, "store", "pull", "--store", str(tmp_path / store),
                           "--remote", str(remote)], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.returncode == s.EXIT_OK, done.stderr
    *warnings, peak_kib = done.stderr.splitlines()
    return int(peak_kib), warnings


@pytest.mark.heavy
def test_pull_streams_a_large_blob_without_holding_it(tmp_path):
    """A 100 MiB blob (within the raw limit, not gzip): streamed to the staging folder in 1 MiB pieces,
    then refused; the pulling process never holds it: its peak RSS is that of pulling a 1 MiB one,
    give or take 20 MiB (the old pull held the whole archive, and more)."""
    peaks = {}
    for size in (1, 100):
        remote = tmp_path / f"results-{size}.git"
        subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
        big = tmp_path / "big.gz"
        with open(big, "wb") as handle:
            for _ in range(size):
                handle.write(os.urandom(MiB))
        entries = [("40000", "big", tree(remote, good_files(remote, "big")[:2]
                                        + [("100644", s.stored_raw_name(SUB), blob_of_file(remote, big))]))]
        branch_of(remote, entries)
        big.unlink()
        peaks[size], warnings = peak_rss_of_pull(tmp_path, remote, f"store-{size}")
        assert len(warnings) == 1 and "experiment 'big' not pulled" in warnings[0] and "not readable gzip" in warnings[0]
        assert_only_good_pulled(tmp_path / f"store-{size}")
    print(f"peak RSS of the pull: {peaks[1] / 1024:.0f} MiB with a 1 MiB blob, {peaks[100] / 1024:.0f} MiB with 100 MiB")
    assert peaks[100] - peaks[1] < 20 * 1024


# --- push and check -------------------------------------------------------------------------------
def stored(store: Path, label: str, raw: bytes | None = None) -> Path:
    folder = store / s.STORE_EXPERIMENTS_DIR / label
    folder.mkdir(parents=True)
    files.write_metadata(folder, metadata(label, "2026-01-01T00:00:00+00:00"))
    files.write_csv(folder / s.summary_csv_name(SUB), tiny_summary({16: (1.0, 2.0, 3.0)}))
    if raw is not None:
        (folder / s.stored_raw_name(SUB)).write_bytes(raw)
    return folder


def test_push_never_uploads_a_damaged_experiment_and_check_lists_it(tmp_path, capsys):
    remote = bare(tmp_path)
    store = tmp_path / "store"
    stored(store, "good-1")
    bomb = stored(store, "bomb")
    gzip_bomb(bomb / s.stored_raw_name(SUB), 130 * MiB)
    unreadable = stored(store, "unreadable")
    (unreadable / s.summary_csv_name(SUB)).write_text("Bytes\n-16\n")
    assert cli.main(["store", "push", "--store", str(store), "--remote", str(remote)]) == s.EXIT_OK
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert captured.out.startswith("pushed 1 experiment(s)") and captured.out.endswith("; 2 not pushed (above)\n")
    assert [line.split(":")[0:2] for line in captured.err.splitlines()] == [
        ["perfgate store", " warning"]] * 2
    assert "experiment 'bomb' not pushed: " in captured.err and bomb_problem(bomb / s.stored_raw_name(SUB)) in captured.err
    assert "experiment 'unreadable' not pushed: " in captured.err
    listing = git(remote, "ls-tree", "-r", "--name-only", BRANCH).split()
    assert sorted({path.split("/")[1] for path in listing}) == ["good-1"]

    assert cli.main(["store", "check", "--store", str(store)]) == s.EXIT_REGRESSION
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == ("perfgate store check: 3 experiment(s), 2 damaged (history and the gate skip them; push and "
                       "pull never carry them)")
    assert out[0].startswith(f"damaged: {bomb / s.stored_raw_name(SUB)}: {bomb_problem(bomb / s.stored_raw_name(SUB))}")
    assert out[0].endswith("(experiment 'bomb')")
    assert out[1].startswith(f"damaged: {unreadable / s.summary_csv_name(SUB)}:") and out[1].endswith(
        "(experiment 'unreadable')")


def test_store_check_of_no_store_is_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv(s.STORE_ENV, raising=False)
    assert cli.main(["store", "check"]) == s.EXIT_USAGE
    assert capsys.readouterr().err == ("perfgate store: error: give --store DIR (or set PERFGATE_STORE): the results "
                                       "store to check\n")
    monkeypatch.setenv(s.STORE_ENV, str(tmp_path))
    assert cli.main(["store", "check"]) == s.EXIT_USAGE
    assert capsys.readouterr().err == f"perfgate store: error: {tmp_path}: not a results store (no experiments/ folder)\n"


def test_a_local_folder_with_a_line_break_in_its_name_is_not_pushed_and_breaks_nothing(tmp_path, capsys):
    # the old pull brought such folders in; hashing their paths one per line would split them
    remote = bare(tmp_path)
    store = tmp_path / "store"
    stored(store, "good-1")
    stored(store, "bad\nlabel")
    assert cli.main(["store", "push", "--store", str(store), "--remote", str(remote)]) == s.EXIT_OK
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"perfgate store: warning: experiment 'bad\\nlabel' not pushed: {store / 'experiments'}/bad\\nlabel: the folder "
        "names an experiment whose label holds a control character (U+000A) at character 4"]
    listing = git(remote, "ls-tree", "-r", "--name-only", BRANCH).split()
    assert sorted({path.split("/")[1] for path in listing}) == ["good-1"]


def test_a_pull_never_replaces_an_experiment_added_meanwhile_nor_stops(tmp_path, capsys):
    remote = bare(tmp_path)
    branch_of(remote, [experiment_tree(remote, "good-2", [])])
    store = tmp_path / "store"
    mine = stored(store, "good-2")  # the same label, other bytes (another metadata time)
    files.write_metadata(mine, metadata("good-2", "2026-02-02T00:00:00+00:00"))
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK and out.startswith("pulled 1 experiment(s)")
    assert len(err) == 1 and err[0].startswith("perfgate store: warning: experiment 'good-2' not pulled: differs")
    assert "2026-02-02" in (mine / s.METADATA_FILE).read_text()
    assert labels(store) == ["good-1", "good-2"]


def test_an_experiment_of_another_platform_is_not_pulled_and_history_keeps_working(tmp_path, capsys):
    # history and the gate refuse a store mixing platform ids (experiments.require_comparable): one such
    # experiment pulled would stop both on every runner of the branch
    remote = bare(tmp_path)
    other = dict(PLATFORM_A, id="platform-b")
    meta = (json.dumps(metadata("alien", "2026-01-02T00:00:00+00:00", platform=other)) + "\n").encode()
    alien = tree(remote, [("100644", s.METADATA_FILE, blob(remote, meta))] + good_files(remote, "alien")[1:])
    branch_of(remote, [("40000", "alien", alien)])
    store = tmp_path / "store"
    stored(store, "local-1")
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK and out.startswith("pulled 1 experiment(s)")
    assert len(err) == 1 and err[0].startswith("perfgate store: warning: experiment 'alien' not pulled: ")
    assert "platform ids" in err[0] and "platform-b" in err[0]
    assert labels(store) == ["good-1", "local-1"]
    requirements = tmp_path / "requirements.csv"
    requirements.write_text("Experiment type,Bytes,Median,99%,Max\n" f"{SUB},16,100,200,300\n")
    assert cli.main(["history", "--requirements", str(requirements), "--experiments-results", str(store),
                     "--plots-directory", str(tmp_path / "plots"), "--no-plots"]) == s.EXIT_OK


def test_a_push_onto_a_branch_git_cannot_index_adds_its_experiment_and_keeps_every_entry(tmp_path, capsys):
    # an index (read-tree) refuses a '..' entry: every later push of every runner was exit 2
    remote = bare(tmp_path)
    crafted = tree(remote, good_files(remote, "x"))
    branch_of(remote, [("40000", "..", crafted)])
    before = git(remote, "ls-tree", "-r", "-z", BRANCH).split("\0")
    store = tmp_path / "store"
    stored(store, "local-1")
    assert cli.main(["store", "push", "--store", str(store), "--remote", str(remote)]) == s.EXIT_OK
    captured = capsys.readouterr()
    assert captured.out.startswith("pushed 1 experiment(s)") and captured.err == ""
    after = git(remote, "ls-tree", "-r", "-z", BRANCH).split("\0")
    assert set(before) <= set(after)
    assert sorted(set(after) - set(before)) == sorted(
        line for line in after if "\texperiments/local-1/" in line) and len(set(after) - set(before)) == 2
    assert git(remote, "rev-list", "--count", BRANCH) == "2"
