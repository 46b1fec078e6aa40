"""Plots of the gate, one module per pipeline step; `common` holds the shared style and saving."""
