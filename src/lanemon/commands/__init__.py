"""Subcommands beyond the core ones in :mod:`lanemon.cli`.

Each module here has ``register(subparsers)`` that adds its parser(s) and sets
``func`` (a handler ``(args) -> int``) with ``parser.set_defaults(func=...)``.
:data:`MODULES` lists them in the order ``--help`` shows them.
"""

MODULES = (
    "lanemon.commands.race",
    "lanemon.commands.bench",
    "lanemon.commands.gauntlet",
    "lanemon.commands.report",
    "lanemon.commands.compare",
    "lanemon.commands.qeval",
    "lanemon.commands.agree",
    "lanemon.commands.export",
    "lanemon.commands.share",
    "lanemon.commands.web",
)
