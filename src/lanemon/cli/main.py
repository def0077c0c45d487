"""Command line: ``lanemon [COMMAND] ...``.

Every command reports bad input as one line on stderr with exit code 2 and
never a traceback.  Textual is imported only by the commands that open the UI.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from lanemon import __version__
from lanemon.cli import MODULES as COMMAND_MODULES
from lanemon.cli.common import EXIT_DATA_LOST, EXIT_FAIL, EXIT_INTERRUPTED, EXIT_USAGE, LOST, CommandError, DataLost, UsageError
from lanemon.cli.common import err as _err
from lanemon.config import ConfigError

EXIT_PIPE_CLOSED = 141
"""stdout's reader went away before the output was all written (128 + SIGPIPE, what a shell reports)."""

DESCRIPTION = """\
lanemon watches two or more OpenAI-compatible LLM endpoints ("lanes"), races
them side by side and records every session for replay.

First time here?  `lanemon demo` starts two simulated lanes on loopback
(TensorFold EXL3 vs SGLang native, fitted to the reference write-up) and opens
the live dashboard on them.
"""

EPILOG = """\
lanes come from lanes.toml in the config dir (or --config PATH) and from
--lane NAME=URL (repeatable; overrides the file).  Run `lanemon COMMAND --help`
for a command's options.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lanemon", description=DESCRIPTION, epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"lanemon {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


# ---------------------------------------------------------------- commands


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["live", *argv]
    args, extras = parser.parse_known_args(argv)
    if extras:  # the command's own usage, not lanemon's (argparse reports them from the top-level parser)
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        (subparsers.choices.get(getattr(args, "command", None) or "") or parser).error(
            f"unrecognized arguments: {' '.join(extras)}")
    handler = getattr(args, "func", None)
    if handler is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    LOST.reset()
    try:
        code = handler(args)
        sys.stdout.flush()  # here, where a reader that went away is caught, not at the interpreter's exit
        return LOST.exit_code(code)
    except BrokenPipeError:
        # `lanemon export REC | head`: the reader stopped reading.  The output was cut, so not 0; quiet, as a
        # shell tool killed by SIGPIPE is (128 + 13), and no traceback from the next flush either
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_PIPE_CLOSED
    except DataLost as exc:
        _err(str(exc))
        return EXIT_DATA_LOST
    except (UsageError, ConfigError) as exc:
        _err(str(exc))
        return EXIT_USAGE
    except CommandError as exc:
        _err(str(exc))
        return EXIT_FAIL
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
