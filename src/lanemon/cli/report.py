"""`lanemon report RECORDING`: a benchmark report built from a recording alone.

Markdown (default, to stdout), one self-contained HTML file with SVG charts,
JSON (the :func:`lanemon.reports.analyse.analyze` dict) or CSV.  See docs/REPORTS.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lanemon.cli.common import UsageError, add_output_args, err, output_format, write_output

SUFFIX_FORMATS = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html", ".json": "json", ".csv": "csv"}


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `report` parser."""
    p = sub.add_parser(
        "report", help="write a benchmark report (Markdown, HTML, JSON, CSV) from recordings",
        description="Build a report from recordings alone: a verdict, decode vs concurrency (crossover marked), "
                    "TTFT, per-category decode, prefill (cache hits labelled), needles, races, the quality gate "
                    "(with the paired comparison), greedy agreement, logprob divergence and the agent gauntlet. "
                    "Give several recordings (e.g. one per bench) to report them together. "
                    "The format is --format, else the suffix of -o, else Markdown.",
    )
    p.add_argument("recording", type=Path, nargs="+", metavar="RECORDING", help=".jsonl recording(s)")
    add_output_args(p, ("md", "html", "json", "csv"), "md", "write the report here instead of stdout")
    p.set_defaults(func=cmd_report)


def pick_format(fmt: str | None, output: Path | None) -> str:
    return output_format(fmt, output, SUFFIX_FORMATS, "md")


def cmd_report(args: argparse.Namespace) -> int:
    from lanemon.recording.reader import Recording, RecordingError
    from lanemon.reports.render import render
    from lanemon.reports.analyse import analyze_many

    fmt = pick_format(args.format, args.output)
    try:
        analysis = analyze_many([Recording(path) for path in args.recording])
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    text = render(analysis, fmt)
    for warning in analysis.warnings:
        err(f"warning: {warning}")
    if args.output is None:
        sys.stdout.write(text)
        return 0
    write_output(args.output, text)
    print(f"lanemon: report written: {args.output} ({fmt})", file=sys.stderr)
    return 0
