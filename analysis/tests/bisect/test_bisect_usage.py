"""`perfgate bisect` refuses bad options in one line, exit 2, before anything is fetched, built or
written; a --good that is not on --bad's first-parent history is refused after the fetch, leaving no
output folder."""
from __future__ import annotations

import pytest

from conftest import perfgate_in_process
from perfgate import schema as s


def bisect(tmp_path, *extra, good="a" * 40, bad="b" * 40, url=None):
    return perfgate_in_process("bisect", "--workspace", str(tmp_path / "ws"), "--git-url", url or str(tmp_path),
                               "--good", good, "--bad", bad, "--output", str(tmp_path / "out"), *extra)


@pytest.mark.parametrize("extra, kwargs, message", [
    ((), {"good": "HEAD~1"}, "--good 'HEAD~1' is not a commit, tag or branch"),
    ((), {"bad": "parent:main"}, "--bad 'parent:main' is not a commit, tag or branch"),
    ((), {"url": "/srv/git\x1b[31m"}, "holds a control character"),
    (("--fastcdr-url=-x",), {}, "--fastcdr-url '-x' starts with '-'"),
    (("--threshold", "1.5"), {}, "--threshold is a fraction"),
    (("--subexperiments", "no_such_thing"), {}, "no_such_thing"),
    (("--rounds", "0"), {}, "--rounds"),
])
def test_bad_options_are_one_line_and_exit_2_with_nothing_made(tmp_path, extra, kwargs, message):
    done = bisect(tmp_path, *extra, **kwargs)
    assert done.returncode == s.EXIT_USAGE, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr
    assert not (tmp_path / "out").exists() and not (tmp_path / "ws").exists()


def test_an_output_folder_that_is_not_empty_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine\n")
    done = bisect(tmp_path)
    assert done.returncode == s.EXIT_USAGE and "not empty" in done.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["keep.txt"]


@pytest.mark.heavy
def test_good_off_the_first_parent_history_is_refused_and_leaves_no_output(fastdds_history, tmp_path):
    origin, commits = fastdds_history
    done = bisect(tmp_path, good=commits["F1"], bad=commits["M"], url=str(origin))
    assert done.returncode == s.EXIT_USAGE, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"perfgate bisect: error: --good {commits['F1']} ({commits['F1']}) is not on the first-parent history of "
        f"--bad {commits['M']} ({commits['M']}) within 10000 commits"]
    assert not (tmp_path / "out").exists()
