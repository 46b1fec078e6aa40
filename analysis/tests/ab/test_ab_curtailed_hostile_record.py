"""Issue 23's adversarial pass over curtailed.json (an A/B folder may come from a store or a copy): a record
whose planned_rounds is fewer than the rounds the folder holds contradicts it (the reports would say
"10 of 1 planned rounds") and is exit 2 in one line naming the file, with no verdict written."""
from __future__ import annotations

import shutil

import conftest
from perfgate import schema as s


def test_planned_rounds_fewer_than_the_rounds_present_is_exit_2(tmp_path):
    ab = tmp_path / "ab"
    shutil.copytree(conftest.FASTDDS_FIXTURES.parent / "ab-rounds" / "aa", ab)  # 10 rounds
    (ab / s.AB_CURTAILED_JSON).write_text('{"planned_rounds": 1, "stopped": {}}')
    done = conftest.perfgate_in_process("verdict", "--ab-directory", str(ab), "--no-plots")
    assert done.returncode == s.EXIT_USAGE, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and s.AB_CURTAILED_JSON in done.stderr
    assert "planned_rounds 1 is fewer than the 10 rounds the A/B holds" in done.stderr
    assert not (ab / s.VERDICT_CSV).exists()
