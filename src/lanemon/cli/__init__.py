"""The command line: one module per command; :mod:`lanemon.cli.main` builds the parser and dispatches.

Each module here has ``register(subparsers)`` that adds its parser(s) and sets
``func`` (a handler ``(args) -> int``) with ``parser.set_defaults(func=...)``.
:data:`MODULES` lists them in the order ``--help`` shows them.  ``common.py`` holds the plumbing the
commands share (lanes from arguments, demo lanes, recorders, Ctrl-C); ``launch.py`` opens the UI (and
``--share``).  Nothing here is imported by the core.

``main`` imports every module here and calls its ``register`` on every run (``--help`` too), so a module's
top level and its ``register`` import only what building the parser needs: the workloads, the HTTP client,
Textual, asyncio ... are imported inside the handlers (tests/test_startup.py holds the list).
"""

MODULES = (
    "lanemon.cli.live",
    "lanemon.cli.sim",
    "lanemon.cli.check",
    "lanemon.cli.replay",
    "lanemon.cli.history",
    "lanemon.cli.race",
    "lanemon.cli.bench",
    "lanemon.cli.gauntlet",
    "lanemon.cli.report",
    "lanemon.cli.compare",
    "lanemon.cli.qeval",
    "lanemon.cli.agree",
    "lanemon.cli.export",
    "lanemon.cli.schema",
    "lanemon.cli.share",
    "lanemon.cli.web",
)
