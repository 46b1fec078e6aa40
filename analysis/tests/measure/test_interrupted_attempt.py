"""A sub-experiment cut short (Ctrl-C, SIGTERM, a cancel) before its peers matched is not tried again
in a fresh domain: the run is ending, and each new attempt would start processes the interruption
then has to stop."""
from __future__ import annotations

import os
import threading
import uuid

from perfgate import schema as s
from perfgate.measure import environment as run_environment
from perfgate.measure import options as run_options
from perfgate.measure import subexperiment
from perfgate.measure.supervise import INTERRUPTED
from conftest import live_processes_of


def test_a_cancelled_attempt_is_the_last(tmp_path, harness_paths, capfd):
    options = run_options.resolve_options(output=tmp_path / "unused", samples=100, payloads=[16],
                                          subexperiments=["interprocess_reliable"], label=None, warmup=10,
                                          harness=None, fastdds_prefix=None, pin_cpus=None, timeout=None)
    environment, _ = run_environment.scrub_environment(os.environ)
    marker = uuid.uuid4().hex
    environment[run_environment.RUN_ID_ENV] = marker
    cancel = threading.Event()
    cancel.set()  # before anything started: no process starts, the attempt ends undiscovered, as a failed discovery
    result = subexperiment.run_subexperiment(s.KNOWN_SUBEXPERIMENTS["interprocess_reliable"], options, harness_paths,
                                             environment, tmp_path, cancel=cancel)
    assert (result.outcome, result.error, result.discovered) == (s.OUTCOME_INCOMPLETE, INTERRUPTED, False)
    assert result.earlier_errors == []
    assert "trying again" not in capfd.readouterr().err
    assert live_processes_of(marker) == []
