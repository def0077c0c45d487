"""`lanemon history`: every past session's per-lane figures from the catalogue, with a trend per lane.

Exit codes: 0 listed (or rebuilt), 2 bad arguments or an unusable catalogue.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

from lanemon.cli.common import EXIT_DATA_LOST, UsageError, err

_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def register(sub) -> None:
    from lanemon.measure.catalogue import METRIC_FIELDS

    p = sub.add_parser("history", help="past sessions' figures per lane, with a trend (the history catalogue)",
                       description="Print the history catalogue: one row per session, lane, workload and level "
                                   "(every live and bench session adds its rows when its recording is saved), "
                                   "and a sparkline of one figure per lane across sessions (docs/MONITOR.md).")
    p.add_argument("--lane", metavar="NAME", help="only this lane")
    p.add_argument("--workload", metavar="NAME", help="only this workload (probe, decode, load, race, ...)")
    p.add_argument("--since", metavar="AGE", help="only sessions started within AGE: 30m, 12h, 7d, 2w")
    p.add_argument("--metric", default="ttft_p50", choices=METRIC_FIELDS, metavar="NAME",
                   help=f"the figure the trend shows (default ttft_p50; one of: {', '.join(METRIC_FIELDS)})")
    p.add_argument("--json", action="store_true", help="print the rows as JSON (docs/MONITOR.md, 'History')")
    p.add_argument("--rebuild", action="store_true",
                   help="delete the catalogue and recreate it from the recordings in the data directory")
    p.add_argument("--catalogue", type=Path, metavar="PATH", help="the catalogue file (default: the data dir's)")
    p.add_argument("--recordings", type=Path, metavar="DIR",
                   help="with --rebuild: read the recordings in DIR (default: the data dir's recordings/)")
    p.set_defaults(func=cmd_history)


def parse_since(text: str) -> float:
    """``7d`` -> seconds; UsageError otherwise."""
    m = _SINCE.match(text or "")
    if m is None:
        raise UsageError(f"--since {text!r}: expected an age like 30m, 12h, 7d or 2w")
    return float(m.group(1)) * _UNIT_S[m.group(2)]


def cmd_history(args: argparse.Namespace) -> int:
    import msgspec

    from lanemon.monitor import history

    if args.recordings is not None and not args.rebuild:
        raise UsageError("--recordings goes with --rebuild")
    try:
        if args.rebuild:
            sources = None
            if args.recordings is not None:
                if not args.recordings.is_dir():
                    raise UsageError(f"--recordings {args.recordings}: not a directory")
                sources = args.recordings.glob("*.jsonl")
            read, rows, problems = history.rebuild(args.catalogue, sources)
            for p in problems[:20]:
                err(f"skipped: {p}")
            err(f"history rebuilt: {rows} rows from {read} recordings ({len(problems)} skipped) in "
                f"{args.catalogue or history.default_path()}")
            if not args.json:
                return 0
        since = time.time() - parse_since(args.since) if args.since else None
        rows = history.query(args.catalogue, lane=args.lane, since_s=since, workload=args.workload)
    except history.CatalogueError as exc:
        if exc.lost:  # a rebuild the disk cut short: data lost, never 0 (and not bad input)
            err(f"history --rebuild incomplete: {exc}")
            return EXIT_DATA_LOST
        raise UsageError(str(exc)) from None
    if args.json:
        sys.stdout.write(msgspec.json.encode([msgspec.to_builtins(r) for r in rows]).decode() + "\n")
        return 0
    print(render(rows, args.metric))
    return 0


def render(rows: list, metric: str) -> str:
    """The rows as a table (a session's levels in numeric order), then one trend line of ``metric`` per
    comparable series (measure/summary.py ``comparable_key``: the same lane, workload, level, API, place, prompt
    set, max tokens, simulated or real and time scale), every figure with its unit."""
    from lanemon.measure.summary import format_figure, level_order, shift, trend_groups
    from lanemon.reports.format import sparkline
    from lanemon.untrusted import inert

    if not rows:
        return "no sessions in the history catalogue yet (every live or bench session adds its rows)"
    rows = sorted(rows, key=lambda r: (r.started_s or 0.0, r.session, r.lane, r.workload, level_order(r.level)))
    head = f"{'started (UTC)':<20} {'lane':<8} {'workload':<10} {'level':<10} {'n':>5} {'TTFT p50':>9} " \
           f"{'TPOT p50':>9} {'E2E p50':>9} {'tok/s':>12} {'goodput':>11}  model"
    lines = [head]
    f = format_figure
    for r in rows[-200:]:
        started = inert(r.started or "?", 200)[:19].replace("T", " ")
        sim = " (simulated" + (f", time scale {r.time_scale:g}" if r.time_scale not in (None, 1.0) else "") + ")" \
            if r.simulated else ""
        lines.append(f"{started:<20} {inert(r.lane, 8):<8} {inert(r.workload, 10):<10} {inert(r.level, 10):<10} "
                     f"{r.requests:>5} {f('ttft_p50', r.ttft_p50):>9} {f('tpot_p50', r.tpot_p50):>9} "
                     f"{f('e2e_p50', r.e2e_p50):>9} {f('tok_s', r.tok_s):>12} {f('goodput_rps', r.goodput_rps):>11}  "
                     f"{inert(r.model or '?', 40)}{sim}")
    if len(rows) > 200:
        lines.insert(1, f"(the latest 200 of {len(rows)} rows)")
    lines.append("")
    lines.append(f"trend of {metric} per lane, oldest to newest session (each bar one session; only sessions whose "
                 "workload, level, API, lane URL or simulated model, prompt set, max tokens and time scale match):")
    groups = trend_groups(rows)
    named = {}
    for key in groups:
        named.setdefault(key[:3], []).append(key)
    for key, rs in groups.items():
        lane, workload, level = key[:3]
        values = [getattr(r, metric) for r in rs][-60:]
        xs = [v for v in values if v is not None]
        last = f(metric, values[-1]) if values and values[-1] is not None else "- (no figure)"
        span = f"min {f(metric, min(xs))} max {f(metric, max(xs))}" if xs else "no figure"
        name = f"{inert(lane, 12)} {inert(workload, 10)}{(' ' + inert(level, 10)) if level else ''}"
        if len(named[key[:3]]) > 1:  # the same lane and level in another setting: say which series this is
            r = rs[-1]
            name += f" [{r.api or '?'}{', sim x' + format(r.time_scale, 'g') if r.simulated and r.time_scale else ''}" \
                    f"{', max ' + str(r.max_tokens) if r.max_tokens else ''}]"
        sh = shift(values)
        mark = ""
        if sh is not None and sh.shifted:
            change = f" {sh.change:+.0%}" if sh.change is not None else ""
            mark = f"  SHIFT{change} vs the median of {sh.n} earlier comparable sessions (beyond their spread)"
        lines.append(f"  {name:<30} {sparkline(values):<60} latest {last} ({span}, {len(rs)} sessions){mark}")
    return "\n".join(lines)
