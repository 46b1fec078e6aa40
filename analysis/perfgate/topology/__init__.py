"""topology: whole systems of nodes publishing at fixed periods (the ros2-performance benchmark's
topology files) run on Fast DDS, every message classified as on time, late, too late or lost.

    names            the topology experiment's file names, columns and defaults
    model            the topology file parsed into a typed, validated model
    classify         the seed's rules: thresholds, on time / late / too late / lost, per subscription
    histogram        the harness's latency histogram (fixed size) and the quantiles read from it, with their error
    tables           latency_all and latency_total from the harness's per-subscription summaries and histograms
    events           events.csv streamed from the harness's per-node events files (memory independent of their length)
    target           a performance target (JSON) and the check of an experiment against it
    run              `perfgate topology`: the harness processes, supervised, and the files they give
    check            `perfgate check-topology`: the target checked, JUnit
    targets          `perfgate determine-topology-targets`: a target from several runs (latency.requirements' way)
    ab               a topology A/B: both builds' perfgate-topology in interleaved rounds (the gate's, with a baseline build)
    ab_verdict       its decision: ab.verdict's sign test and Holm on the rounds' figures, and its files

May import: the core, escape, ab (the arms and the A/B's decision), measure (supervision, resource sampling), fastdds (the harness) and
latency (requirements: the percentile, margin and leave-one-out of determine-requirements).
"""
