"""``lanemon export RECORDING --requests``: one row per request, for your own analysis."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lanemon.cli.common import UsageError, err, output_format, write_output


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "export", help="export per-request traces from a recording (JSON lines or CSV)",
        description="One row per finished request: lane, start, TTFT, TTFO, first byte, E2E, TPOT, decode tok/s, "
                    "every inter-chunk gap, prompt/cached/output/reasoning tokens, tokens per chunk, status and "
                    "error class. Format from -o's suffix (.jsonl or .csv) or --format; default JSON lines on stdout.")
    p.add_argument("recording", type=Path, metavar="RECORDING")
    p.add_argument("--requests", action="store_true",
                   help="export per-request rows (the only kind, and the default: the flag may be left out)")
    p.add_argument("--format", choices=("jsonl", "csv"), help="output format (default: from -o, else jsonl)")
    p.add_argument("-o", "--output", type=Path, metavar="PATH", help="write here instead of stdout")
    p.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from lanemon.reports.export import interruptions, request_rows, to_csv, to_jsonl
    from lanemon.recording.reader import Recording, RecordingError

    fmt = output_format(args.format, args.output,
                        {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}, "jsonl")
    from lanemon.reports.simulated import banner, simulated_lanes

    try:
        rec = Recording(args.recording)
        events = list(rec.events())
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    sim = simulated_lanes(rec.header, events)
    rows = request_rows(events, sim)
    note = banner(sim)
    if note:  # the rows carry it too (column "simulated")
        err(f"warning: {note}")
    data = to_csv(rows).encode() if fmt == "csv" else to_jsonl(rows)
    if args.output is None:
        sys.stdout.buffer.write(data)
    else:
        write_output(args.output, data, make_dirs=False)
        print(f"lanemon: {len(rows)} requests written to {args.output}", file=sys.stderr)
    for warning in list(rec.warnings) + interruptions(events):
        err(f"warning: {warning}")
    return 0
