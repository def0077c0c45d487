"""`lanemon compare OLD NEW` / `lanemon compare REC --lanes A,B`: two sessions (or two lanes) side by side.

Aligns the cells both hold and shows every metric with the ratio, which side is
better and whether the change is significant or noise
(:mod:`lanemon.reports.compare`).  Output: a Rich table (default), Markdown,
self-contained HTML, JSON, or the compare TUI with ``--tui``.  See docs/COMPARE.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from typing import TYPE_CHECKING

from lanemon.cli.common import UsageError, add_output_args, err, output_format, write_output

if TYPE_CHECKING:
    from lanemon.results.compare import Comparison

SUFFIX_FORMATS = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".json": "json",
                  ".txt": "table"}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `compare` parser."""
    p = sub.add_parser(
        "compare", help="compare two recordings (or two lanes of one) cell by cell: ratio, better/worse, significant",
        description="Align what two recordings have in common (lane, bench, level/length/category, prompt, task) "
                    "and show each metric side by side with the ratio NEW/OLD, the better side and whether the "
                    "change is beyond the runs' own spread (significant) or noise; list what only one holds. "
                    "With ONE recording and --lanes A,B: lane A vs lane B within it. See docs/COMPARE.md.",
    )
    p.add_argument("recordings", type=Path, nargs="+", metavar="RECORDING",
                   help="OLD.jsonl NEW.jsonl, or one recording with --lanes A,B")
    add_output_args(p, ("table", "md", "html", "json"), "a table", "write the comparison here instead of stdout")
    p.add_argument("--lanes", metavar="A,B", help="one recording: compare lane A (old) with lane B (new); "
                                                   "two recordings: compare only these lanes")
    p.add_argument("--tui", action="store_true", help="open the compare screen (curves overlaid, races side by "
                                                     "side, the rows with significant changes highlighted)")
    p.add_argument("--theme", metavar="NAME", help="colour theme of the TUI")
    p.set_defaults(func=cmd_compare)


def pick_format(fmt: str | None, output: Path | None) -> str:
    return output_format(fmt, output, SUFFIX_FORMATS, "table")


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()]


def build(args: argparse.Namespace) -> Comparison:
    """The compare dict for the parsed arguments (UsageError on bad input)."""
    from lanemon.reports.compare import compare, compare_lanes, recording_lanes
    from lanemon.recording.reader import RecordingError
    from lanemon.reports.analyse import analyze

    paths = list(args.recordings)
    lanes = _names(args.lanes)
    if len(paths) > 2:
        raise UsageError(f"compare takes two recordings (or one with --lanes A,B), not {len(paths)}")
    if args.lanes is not None and not lanes:
        raise UsageError("--lanes: expected lane names like A,B")
    if len(set(lanes)) != len(lanes):
        raise UsageError(f"--lanes: a lane is named twice ({args.lanes})")
    if len(paths) == 1 and len(lanes) != 2:
        raise UsageError("one recording needs --lanes A,B (two lanes to compare within it); "
                         "or give two recordings: lanemon compare OLD.jsonl NEW.jsonl")
    analyses = []
    for path in paths:
        try:
            analyses.append(analyze(path))
        except RecordingError as exc:
            raise UsageError(str(exc)) from None
    for path, analysis in zip(paths, analyses):
        known = recording_lanes(analysis)
        missing = [n for n in lanes if n not in known]
        if missing and (len(paths) == 1 or len(missing) == len(lanes)):
            raise UsageError(f"--lanes: {path} has no lane {', '.join(missing)} (lanes: {', '.join(known) or 'none'})")
    if len(paths) == 1:
        return compare_lanes(analyses[0], lanes[0], lanes[1])
    return compare(analyses[0], analyses[1], lanes=lanes or None)


def cmd_compare(args: argparse.Namespace) -> int:
    if args.tui and (args.format or args.output):
        raise UsageError("--tui shows the comparison on screen; drop --format/-o (or drop --tui)")
    fmt = None if args.tui else pick_format(args.format, args.output)
    result = build(args)
    for warning in result.warnings:
        err(f"warning: {warning}")
    if args.tui:
        try:
            from lanemon.cli.launch import run_screen
        except ImportError as exc:  # pragma: no cover - a broken install
            raise UsageError(f"the terminal UI is not available: {exc}") from None
        return run_screen(compare=result, theme=args.theme)
    from lanemon.reports.compare import render, rich_renderables

    if args.output is None:
        if fmt == "table":
            from rich.console import Console

            console = Console(highlight=False)
            if not console.is_terminal:  # a pipe: wide enough that rows do not wrap
                console = Console(highlight=False, width=150)
            for r in rich_renderables(result, console.width):
                console.print(r)
        else:
            sys.stdout.write(render(result, fmt))
        return 0
    text = render(result, fmt)
    write_output(args.output, text)
    print(f"lanemon: comparison written: {args.output} ({fmt})", file=sys.stderr)
    return 0
