"""gate: `perfgate gate`, the whole gate for one Fast DDS build with one verdict and one exit code.

    request          its options as one typed object, built once from the command line
    run              the pipeline: run, process, check, compare, throughput, A/B, store, history, report
    plan             what the gate will do, decided and validated before anything is measured
    which_fastdds    which Fast DDS the gate measures, and what chose it
    failed_build     what the gate writes when the workspace's build failed

May import every other room: it is the top of the house (only cli is above it).
"""
