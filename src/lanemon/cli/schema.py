"""`lanemon schema NAME` / `lanemon schema --list`: the JSON Schema of each `--json` output, with its version
(reports/json_schema.py; docs/JSON.md).

Exit codes: 0 printed, 2 an unknown name or neither a name nor --list.
"""

from __future__ import annotations

import argparse
import sys

from lanemon.cli.common import UsageError


def register(sub) -> None:
    p = sub.add_parser("schema", help="the JSON Schema of a --json output (lanemon schema --list names them)",
                       description="Print the JSON Schema of one --json output, with its version: the contract a "
                                   "pipeline that reads lanemon's --json can check against (docs/JSON.md).")
    p.add_argument("name", nargs="?", metavar="NAME", help="the output: bench-decode, bench-load, history, ...")
    p.add_argument("--list", action="store_true", help="name every published output and the command printing it")
    p.set_defaults(func=cmd_schema)


def cmd_schema(args: argparse.Namespace) -> int:
    import msgspec

    from lanemon.reports.json_schema import OUTPUTS, schema, version

    if args.list:
        for name, (_, command) in OUTPUTS.items():
            print(f"{name:<16} {command} (schema version {version(name)})")
        return 0
    if not args.name:
        raise UsageError("lanemon schema NAME, or --list for the names")
    if args.name not in OUTPUTS:
        raise UsageError(f"no schema {args.name[:64]!r}: one of {', '.join(OUTPUTS)}")
    sys.stdout.write(msgspec.json.format(msgspec.json.encode(schema(args.name)), indent=2).decode() + "\n")
    return 0
