"""Plots of the gate, one module per pipeline step; `common` holds the shared style and saving.

May import: the core and latency.check_terms (the words of a check). Measures nothing
(tests/repository/test_layout.py)."""
