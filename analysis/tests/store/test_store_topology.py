"""What the results store keeps of the gate's topology runs: topology/<name>/ with the tables and
metadata.json the topology history reads (topology.names.STORED_FILES), nothing else of them."""
from __future__ import annotations

from perfgate import schema as s
from perfgate.store import experiments as store
from perfgate.topology import names as n


def test_each_topologys_tables_and_metadata_are_kept_and_nothing_else_of_it():
    for name in n.STORED_FILES:
        assert store.is_kept(f"topology/light/{name}") and store.is_kept(f"topology/heavy-2.x/{name}"), name
    for relative in ("topology/light/events.csv", "topology/light/topology.json", "topology/light/plots/x.png",
                     f"topology/light/{s.JUNIT_FILE}", f"topology/{n.LATENCY_TOTAL_CSV}", "topology/.x/metadata.json",
                     f"topology/-x/{n.LATENCY_TOTAL_CSV}", f"topology/a/b/{n.LATENCY_TOTAL_CSV}",
                     f"other/light/{n.LATENCY_TOTAL_CSV}", f"topology/light/{n.LATENCY_TOTAL_CSV}.gz"):
        assert not store.is_kept(relative), relative


def test_the_gate_keeps_the_topology_files_it_finds(tmp_path):
    folder = tmp_path / "run" / n.GATE_TOPOLOGY_DIR / "light"
    folder.mkdir(parents=True)
    for name in (*n.STORED_FILES, n.EVENTS_CSV, n.TOPOLOGY_COPY):
        (folder / name).write_text("x\n")
    (tmp_path / "run" / n.GATE_TOPOLOGY_DIR / "not a name").mkdir()
    assert sorted(store.topology_files(tmp_path / "run")) == sorted(f"topology/light/{name}" for name in n.STORED_FILES)
