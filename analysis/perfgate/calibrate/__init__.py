"""calibrate: `perfgate calibrate`, every requirements file of a new reference machine in one command.

It checks the runner's tuning (runner_checks), plans the measurements (plan), runs them resumably under a
time budget (resume, measure) and derives each file with the existing determine-* code (derive), then says
what the machine can detect (detect). It may import the rooms it measures and derives with: core, escape,
fastdds, measure, latency, throughput, topology, ab, gate (gate.budget: the gate's levels) and commands (each
measuring command's own options, so that a calibration's runs take exactly the command line's defaults).
"""
