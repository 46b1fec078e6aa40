"""history: a results store over time: the plots, the page, the change points.

    latency          `perfgate history`: every stored experiment's latency against the requirements
    throughput       the same for throughput
    index            an index of a store's summaries (history over 1000 experiments in seconds)
    change_points    where a statistic's level moved, and how sure we are
    whole            each sub-experiment tested as a whole (its payloads' mean log change)
    events           change points of one sub-experiment a few runs apart as one event
    ab               each stored run's A/B verdict, marked on its commit
    baselines        which stored baselines a history draws as reference lines
    page             one static page: change points first, then interactive charts
    files            the CSV files `perfgate history` writes besides its plots (events, change points, Otava)

May import: the core, escape, plotting, latency, throughput, ab (the verdict) and store. Measures nothing.
"""
