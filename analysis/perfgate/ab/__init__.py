"""ab: a candidate Fast DDS against a baseline, measured in interleaved rounds, and the verdict.

    latency          `perfgate ab`: the latency A/B, round by round (ab.turns: both arms in turns)
    throughput       `perfgate ab-throughput`: the throughput A/B
    turns            both arms of a round measuring one sub-experiment at the same time
    rounds           an A/B folder's rounds read into one table, the verdict's input
    verdict          the paired, exact decision (sign test, Holm-corrected); pure
    curtail          which tests are decided, so their sub-experiments stop being measured
    samples          stored rounds replayed at fewer samples per payload (read only)
    resample         the rounds' spread, power and false alarms on bootstrap sets of stored rounds; pure
    layout           layout-aware thresholds from layout-only A/Bs; pure
    layout_file      requirements/<platform>_layout.json: derived (determine-layout-thresholds), read
    report           `perfgate verdict` and the files beside a latency A/B folder
    throughput_report  the same for a throughput A/B folder

May import: the core, escape, report, plotting, measure, fastdds, latency and throughput
(tests/repository/test_layout.py ALLOWED). Imported by history (the verdict marks) and gate.
"""
