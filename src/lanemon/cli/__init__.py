"""Subcommands beyond the core ones in :mod:`lanemon.cli.main`.

Each module here has ``register(subparsers)`` that adds its parser(s) and sets
``func`` (a handler ``(args) -> int``) with ``parser.set_defaults(func=...)``.
:data:`MODULES` lists them in the order ``--help`` shows them.
"""

MODULES = (
    "lanemon.cli.live",
    "lanemon.cli.sim",
    "lanemon.cli.check",
    "lanemon.cli.replay",
    "lanemon.cli.race",
    "lanemon.cli.bench",
    "lanemon.cli.gauntlet",
    "lanemon.cli.report",
    "lanemon.cli.compare",
    "lanemon.cli.qeval",
    "lanemon.cli.agree",
    "lanemon.cli.export",
    "lanemon.cli.share",
    "lanemon.cli.web",
)
