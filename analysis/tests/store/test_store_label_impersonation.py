"""Issue 23's adversarial pass over `perfgate store pull`: an experiment folder on the (untrusted) results
branch whose metadata.json names another run's label is quarantined. Pull checks the folder's name against
the store's labels, while history, the page and the gate show metadata's label: `evil/` holding
`"label": "good-1"` would otherwise be a second good-1 in the history, beside the real one."""
from __future__ import annotations

import json

from conftest import metadata
from perfgate import schema as s
from store_branches import assert_only_good_pulled, bare, blob, branch_of, good_files, pull, tree


def test_an_experiment_whose_metadata_names_another_label_is_not_pulled(tmp_path, capsys):
    remote = bare(tmp_path)
    impostor = good_files(remote, "evil")
    impostor[0] = ("100644", s.METADATA_FILE,
                   blob(remote, json.dumps(metadata("good-1", "2026-01-02T00:00:00+00:00")).encode()))
    branch_of(remote, [("40000", "evil", tree(remote, impostor))])
    store = tmp_path / "store"
    code, out, err = pull(store, remote, capsys)
    assert code == s.EXIT_OK and out.startswith("pulled 1 experiment(s)")
    assert_only_good_pulled(store)
    assert err == ["perfgate store: warning: experiment 'evil' not pulled: experiments/evil/metadata.json: its label "
                   "'good-1' is not its folder's name 'evil'"]
    # the store still pulls (nothing new) and checks clean
    assert pull(store, remote, capsys)[0] == s.EXIT_OK
