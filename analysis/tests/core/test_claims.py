"""An output folder is claimed atomically (issue 23): two `perfgate run`s started at the same moment
into one --output both measured into it (the "absent or empty" check is a race). Real processes
released together by a barrier, many times: exactly one proceeds, the other is exit 2 naming the
folder and the process that holds it. And what a claim leaves: nothing when it ends, a marker that
blocks nobody when its command was killed."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from perfgate import claims
from perfgate import schema as s
from perfgate.errors import InputError

ROUNDS = 8

# a stand-in harness: `--version` notes who asked (the run past its claim) and answers once released
STAND_IN = textwrap.dedent("""\
    import os, sys, time
    if sys.argv[1:] == ["--version"]:
        with open(os.environ["CLAIM_TEST_ASKED"], "a") as asked:
            asked.write(f"{os.getppid()}\\n")
        while not os.path.exists(os.environ["CLAIM_TEST_RELEASE"]):
            time.sleep(0.01)
        print("2.9.1")
        sys.exit(0)
    sys.exit(2)
""")

# a `perfgate run` that waits at a barrier with everything imported (it says it is there, then waits
# for the go file, looking every millisecond), then runs as the console command does
DRIVER = textwrap.dedent("""\
    import os, sys, time
    from perfgate import cli
    from perfgate.latency import run  # imported before the barrier: both then race from the same point
    open(f"{sys.argv[1]}.{os.getpid()}", "w").close()
    while not os.path.exists(sys.argv[1]):
        time.sleep(0.001)
    sys.exit(cli.main(sys.argv[2:]))
""")


def start_run(barrier: Path, output: Path, harness: Path, environment: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", DRIVER, str(barrier), "run", "--output", str(output),
                             "--harness", str(harness), "--subexperiments", "intraprocess_best_effort",
                             "--payloads", "16", "--samples", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment)


def wait_for(condition, limit_s: float = 60.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.mark.heavy
def test_of_two_runs_started_at_the_same_moment_into_one_folder_exactly_one_proceeds(tmp_path):
    harness = tmp_path / "perfgate-latency"
    harness.write_text(f"#!{sys.executable}\n{STAND_IN}")
    harness.chmod(0o755)
    for number in range(ROUNDS):
        work = tmp_path / f"round{number}"
        work.mkdir()
        output = work / "out"
        if number % 2:
            output.mkdir()  # an existing empty folder: claimed by its marker, not by mkdir
        barrier = work / "barrier"
        environment = {**os.environ, "CLAIM_TEST_ASKED": str(work / "asked"), "CLAIM_TEST_RELEASE": str(work / "go")}
        runs = [start_run(barrier, output, harness, environment) for _ in range(2)]
        try:
            assert wait_for(lambda: all(Path(f"{barrier}.{r.pid}").exists() or r.poll() is not None for r in runs))
            barrier.touch()  # both go
            # the loser ends at once, the winner waits in its stand-in harness until released
            assert wait_for(lambda: any(r.poll() is not None for r in runs)), "neither run was refused"
            time.sleep(0.2)
            ended = [r for r in runs if r.poll() is not None]
            assert len(ended) == 1, f"round {number}: both ended: {[r.stderr.read() for r in runs]}"
            loser = ended[0]
            winner = next(r for r in runs if r is not loser)
            err = loser.stderr.read()
            assert loser.returncode == s.EXIT_USAGE, err
            assert err == (f"perfgate run: error: {output}: the output folder is already claimed by process "
                           f"{winner.pid} (another perfgate is writing into it); give each command its own "
                           "--output\n"), err
            assert (work / "asked").read_text().split() == [str(winner.pid)]  # only the winner went on
        finally:
            (work / "go").touch()
            for r in runs:
                r.wait(timeout=120)
                r.stderr.close()
        assert winner.returncode == s.EXIT_INCOMPLETE  # the stand-in measures nothing; what matters: not refused
        assert (output / s.METADATA_FILE).is_file() and not (output / claims.MARKER_FILE).exists()


def test_a_claim_ends_without_a_trace_and_a_folder_it_made_for_nothing_is_removed(tmp_path):
    folder = tmp_path / "out"
    with claims.claimed(folder):
        assert (folder / claims.MARKER_FILE).read_text() == f"{os.getpid()}\n"
        with claims.claimed(folder):  # the gate's folder, claimed again by the run inside it
            pass
        assert (folder / claims.MARKER_FILE).exists()
        (folder / "metadata.json").write_text("{}")
    assert sorted(p.name for p in folder.iterdir()) == ["metadata.json"]
    with claims.claimed(tmp_path / "unused"):
        pass
    assert not (tmp_path / "unused").exists()


def dead_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


def test_the_marker_of_a_killed_command_blocks_nobody(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / claims.MARKER_FILE).write_text(f"{dead_pid()}\n")  # its lock died with it
    with claims.claimed(folder):
        assert (folder / claims.MARKER_FILE).read_text() == f"{os.getpid()}\n"
    assert list(folder.iterdir()) == []


def test_a_killed_commands_partial_results_are_not_empty_and_its_marker_stays(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    stale = f"{dead_pid()}\n"
    (folder / claims.MARKER_FILE).write_text(stale)
    (folder / s.METADATA_FILE).write_text("{}")
    with pytest.raises(InputError, match="output folder is not empty"):
        with claims.claimed(folder):
            pass
    assert (folder / claims.MARKER_FILE).read_text() == stale


def test_a_link_named_like_the_marker_is_refused_and_left(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (tmp_path / "elsewhere").write_text("not ours")
    (folder / claims.MARKER_FILE).symlink_to(tmp_path / "elsewhere")
    with pytest.raises(InputError, match="cannot be claimed"):
        with claims.claimed(folder):
            pass
    assert (tmp_path / "elsewhere").read_text() == "not ours"


def test_the_holder_written_in_a_marker():
    assert claims.holder_pid("1234\n") == 1234
    assert claims.holder_pid("") is None and claims.holder_pid("x1") is None


def test_a_failed_builds_gate_claims_its_output_folder_too(tmp_path):
    """The gate's output for a failed build (gate/failed_build) wrote into a folder another command was
    writing: it claims it like every gate, so it is exit 2 naming the holder and writes nothing there."""
    from perfgate.gate.failed_build import gate_failed_build

    output = tmp_path / "gate"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""\
        import sys
        from pathlib import Path
        from perfgate import claims
        with claims.claimed(Path({str(output)!r})):
            print("held", flush=True)
            sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    record = {"status": s.BUILD_FAILED, "workspace": str(tmp_path / "ws"), "error": "colcon build failed",
              "log": str(tmp_path / "ws" / "log"), "log_tail": "error: x"}
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(InputError, match=f"already claimed by process {holder.pid}"):
            gate_failed_build(record, output=str(output), label="failed", summary_markdown=None)
        assert sorted(path.name for path in output.iterdir()) == [claims.MARKER_FILE]
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
        holder.stdout.close()
    assert gate_failed_build(record, output=str(output), label="failed", summary_markdown=None) == s.EXIT_INCOMPLETE
    assert {s.METADATA_FILE, s.JUNIT_FILE, s.REPORT_MARKDOWN} <= {path.name for path in output.iterdir()}
    assert not (output / claims.MARKER_FILE).exists()
