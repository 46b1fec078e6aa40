"""The measuring side of `perfgate run`, one concern per module.

options        the run's options, validated before anything is built or written
environment    the harness's environment, scrubbed of Fast DDS variables
domains        DDS domains and ports, leased under a lock file
commands       the harness's command lines (pure)
supervise      the harness processes: started, watched, stopped, none left behind
shm            shared-memory files left behind by Fast DDS, removed
subexperiment  one sub-experiment end to end: lease, supervise, read what was measured, classify

perfgate.run is the command around them (metadata, progress, the loop over sub-experiments).
"""
