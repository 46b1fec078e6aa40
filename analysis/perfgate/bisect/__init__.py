"""bisect: `perfgate bisect`, from a regression between two commits to the commit that made it.

    commits  the first-parent commits between good and bad (parsed from git; the git calls are thin)
    search   the pure search: which commit to measure next, what a step's A/B says (bad, good,
             ambiguous: more rounds), skipped builds, the final decision and its exit code
    driver   the thin driver: `perfgate build` of a commit, `perfgate ab` against good, the command
    report   bisect.json, report.md and report.html (with the chart of plotting.bisect_plots)
    messages an error of several lines (git's stderr) printed a console line each, escaped

May import: the core, escape, fastdds (the build), ab (the A/B and its verdict), report's escaping
helpers and plotting (tests/test_layout.py).
"""
