"""The measuring side of `perfgate run`, one concern per module.

options        the run's options, validated before anything is built or written
environment    the harness's environment, scrubbed of Fast DDS variables
domains        DDS domains and ports, leased under a lock file
commands       the harness's command lines (pure)
supervise      the harness processes: started, watched, stopped, none left behind
shm            shared-memory files left behind by Fast DDS, removed
subexperiment  one sub-experiment end to end: lease, supervise, read what was measured, classify

perfgate.latency.run is the command around them (metadata, progress, the loop over sub-experiments).

The upstream engine's parts (perfgate.measure.upstream is its command: Fast DDS' own LatencyTest through ctest):

upstream_names         which of Fast DDS' latency tests measures which sub-experiment, by any of their names
upstream_profiles      loopback-only copies of their XML profiles (pure)
upstream_commands      their command lines in CTestTestfile.cmake, pointed at the copies; the pinning launcher
upstream_certificates  certificates and access-control documents for their security tests
upstream_results       ctest's JUnit, what LatencyTest printed, each test's CSV collected

Around a measurement:

scratch        the scratch folder (harness CSVs, DDS Security keys), removed whatever happens
watcher        a process that cleans up after a perfgate killed outright (runs as a script)
platform_info  the platform fingerprint and the machine's state recorded in metadata.json
cpu_latency    keeping idle CPUs awake while measuring (`perfgate cpu-latency`)

May import: the core, escape, fastdds (harness, security, build records) and throughput (table,
files: what a throughput test counted). latency, ab and gate are built on it.
"""
