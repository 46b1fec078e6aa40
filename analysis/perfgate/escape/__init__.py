"""escape: untrusted text made safe for the one place it is printed or embedded (issue 23).

Untrusted text is whatever perfgate did not write itself: labels and metadata of stored experiments
(a results branch anyone with push access writes), requirement files from a pull request, Fast DDS
version strings (a source sets its own), git commit subjects, paths given on the command line.

One module per target, each pure functions of text, importing nothing of perfgate:

    workflow      a log GitHub reads workflow commands from (console lines, `::error` data and properties)
    html          HTML text and attributes, JSON inside <script>, text plotly renders as its own markup
    markdown      GitHub Markdown text and table cells (the step summary, the A/B reports)
    xml           XML 1.0 text and attributes (every JUnit file)
    spreadsheet   CSV text cells a spreadsheet opens (no formula from a label)

Every function also renders a lone surrogate (what JSON's "\\udc80" reads as) so that writing the
result as UTF-8 cannot fail: one damaged label never stops a report.
"""
