"""latency: the latency experiment, from measuring to the verdict of one folder.

    run              `perfgate run`: every selected sub-experiment measured (measure/ does the work)
    process          raw measurements -> summaries and plots; compare-subexperiments
    experiments      experiment folders and results stores: what they hold and whether they compare
    check            summaries against the platform's requirements (+ resources_table, requested)
    check_terms      the words every output of a check shares (testcase names, check.json)
    junit            the check's JUnit XML
    compare          a target experiment against a reference
    requirements     `perfgate determine-requirements`
    requested        what a run was asked to measure, and the rule for rows outside it
    resources_table, resources_requirements   CPU and memory of the harness, and their requirements
    listing          how a message names a few of a long list

May import: the core, escape, report, plotting, measure, fastdds and throughput (throughput.table:
a run measures throughput too). Only `run` measures: report/ and plotting/ import the rest.
"""
