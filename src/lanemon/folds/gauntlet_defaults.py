"""The gauntlet's defaults, in a module of their own (no imports): the workload, the screen's fold and
`lanemon gauntlet --help` read them, and the help is built without importing the workload or the event schema."""

DEFAULT_HOPS = 20
"""Hops of the write-up's chain (the workload's default; shown when a recording's config lacks it)."""
DEFAULT_REPS = 3
DEFAULT_SYSTEM_PROMPT_TOKENS = 1950
