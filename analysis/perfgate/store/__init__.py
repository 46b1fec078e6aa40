"""store: the results store (STORE/experiments/<label>/, baselines/<platform>/) and its git branch.

    experiments      adding one experiment, and the lock that adding and history share
    check            damaged experiments in a store, found one way for history and the gate
    baseline         `perfgate promote-baseline`
    branch           what a results branch may hold, judged entry by entry (pure)
    sync             `perfgate store push`, and the branch's git plumbing
    pull             `perfgate store pull`: read as git objects, never as an archive
    cli              `perfgate store push|pull|check`: its parser and dispatch
    aa_gates         the stored A/A gates (a Fast DDS gated against itself) and each one's whole-gate outcome
    false_alarms     `perfgate false-alarms`: the whole gate's false-alarm rate on them, exact figures

May import: the core, escape, fastdds (fastdds.git), latency (experiments), throughput (files) and
history (index, ab: what a stored experiment's summaries and verdict are). Measures nothing.
"""
