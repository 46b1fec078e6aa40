"""commands: one module per sub-command of `perfgate`, in the order `perfgate --help` lists them.

Each holds the command's NAME, its HELP, its HANDLER ("module:function", the function that does the
work, imported by cli.main only when that command runs, so that `perfgate --help` stays fast and a
missing plotting backend cannot break `run`) and add_arguments(parser, option), its options, where
`option` is cli._option (an option's two spellings, a path's checks).

May import: the core, and the constants of a room its options show (measure.cpu_latency's choices,
store.cli's default branch); never the work itself.
"""
