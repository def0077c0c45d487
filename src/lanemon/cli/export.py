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
    from lanemon.measure.records import compact_events, dropped_warning
    from lanemon.recording.reader import Recording, RecordingError
    from lanemon.reports.export import csv_chunks, interruptions, iter_request_rows, jsonl_chunks
    from lanemon.reports.simulated import banner, simulated_lanes

    fmt = output_format(args.format, args.output,
                        {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".csv": "csv"}, "jsonl")
    try:
        rec = Recording(args.recording)
        compact = compact_events(rec.events())  # one streaming pass: tokens folded per request
        events = compact.events
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    sim = simulated_lanes(rec.header, events)
    note = banner(sim)
    if note:  # the rows carry it too (column "simulated")
        err(f"warning: {note}")
    written = [0]

    def rows():
        for row in iter_request_rows(events, sim):
            written[0] += 1
            yield row

    chunks = (c.encode() for c in csv_chunks(rows())) if fmt == "csv" else jsonl_chunks(rows())
    if args.output is None:
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
    else:
        write_output(args.output, chunks, make_dirs=False)
        print(f"lanemon: {written[0]} requests written to {args.output}", file=sys.stderr)
    dropped = [dropped_warning(compact.dropped)] if compact.dropped else []
    for warning in list(rec.warnings) + dropped + interruptions(events):
        err(f"warning: {warning}")
    return 0
