"""throughput: the throughput experiment (bursts of samples at a pace, counted by the subscriber).

    run              `perfgate throughput`: the experiment on a real Fast DDS
    table            what the harness counted -> the contract's throughput table (pure)
    files            reading the throughput tables and requirements (each bad cell an InputError)
    check            `perfgate check-throughput`: tables against throughput requirements
    requirements     `perfgate determine-throughput-requirements`

May import: the core, report, plotting, measure, fastdds and latency (run, junit, listing, requested).
"""
