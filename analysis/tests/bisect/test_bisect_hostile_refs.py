"""Issue 23's adversarial pass over `perfgate bisect --good/--bad` (and `build --commit`, which reads refs the
same way): a name git refuses as a ref (`..`, `@{`, a part starting with `.`, `.lock`, a trailing `/` or `.`)
is a bad option, exit 2 in one line before anything is fetched, not a failed fetch (exit 3); an option
(`--upload-pack=...`) never reaches git."""
from __future__ import annotations

import pytest

from conftest import perfgate_in_process
from perfgate import schema as s


@pytest.mark.parametrize("ref", ["x..y", "../x", "@{-1}", "main.lock", "release/", "v2.", ".hidden", "a/.b", "@",
                                 "--upload-pack=touch pwned"])
def test_a_ref_git_would_refuse_is_exit_2_before_anything_is_fetched(tmp_path, ref):
    output = tmp_path / "out"
    result = perfgate_in_process("bisect", "--workspace", str(tmp_path / "ws"), "--git-url", str(tmp_path / "repo"),
                                 "--good", ref, "--bad", "main", "--output", str(output))
    assert result.returncode == s.EXIT_USAGE, result.stderr
    assert result.stderr.count("\n") == 1 and "is not a commit, tag or branch" in result.stderr
    assert not output.exists() and not (tmp_path / "ws").exists() and not (tmp_path / "pwned").exists()
