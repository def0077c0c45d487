"""`lanemon bench load` (open-loop arrivals) and `bench sweep` (find the knee): options and tables.

The workload itself is :mod:`lanemon.workloads.bench.load`; this module adds its arguments to the
``bench load`` parser, turns them into :class:`~lanemon.workloads.bench.load.LoadOptions` (bad input is
one line, exit 2) and renders its result table.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, NamedTuple

from lanemon.cli.common import UsageError, number_arg, parse_number, positive_int, seconds_arg
from lanemon.config import MAX_SECONDS, MAX_TOKENS

if TYPE_CHECKING:
    from lanemon.results.load import LoadResult
    from lanemon.results.sweep import SweepResult

MAX_LEVEL = 4096
"""The highest concurrency ``bench sweep --max-level`` may name."""

HELP = ("open-loop load: requests arrive at a rate (constant or Poisson) or from a timed trace, "
        "whether or not earlier ones finished; latency percentiles over the measured window")

SWEEP_HELP = ("find the knee: raise concurrency (1..6, then 8, 12, 16, ...) until throughput stops growing "
              "or an SLO breaks; per lane, with the crossover between lanes")


def add_sweep_arguments(q: argparse.ArgumentParser) -> None:
    q.add_argument("--max-level", default="64", metavar="C", help="highest concurrency to try (default 64)")
    q.add_argument("--knee-gain", type=number_arg(lo=0, hi=1, lo_open=True), default=0.10, metavar="G",
                   help="stop when doubling the concurrency gains less than G of aggregate tok/s (default 0.10)")
    q.add_argument("--categories", default="all", metavar="all|CAT,...", help="prompt categories (default all)")
    q.add_argument("--max-tokens", default=None, metavar="N", help="cap every prompt's max_tokens at N")
    q.add_argument("--demo-in-process", dest="sim_processes", action="store_false",
                   help="with --demo: run the two simulators inside lanemon's process (default: each in its own "
                        "process, so that at high concurrency they do not take lanemon's CPU and every high "
                        "level is not marked unreliable because lanemon was starved by its own lanes)")


class SweepArgs(NamedTuple):
    """``bench sweep``'s own options, checked (a sweep runs no per-category phase)."""

    max_level: int
    knee_gain: float
    categories: list[str] | None  # None: every category


def sweep_options(args: argparse.Namespace) -> SweepArgs:
    max_level = parse_number(args.max_level, "--max-level", lo=1, hi=MAX_LEVEL, integer=True)
    if not 0 < args.knee_gain < 1:
        raise UsageError("--knee-gain must be between 0 and 1 (e.g. 0.1 for 10 %)")
    cats = [c.strip() for c in str(args.categories).split(",") if c.strip()]
    return SweepArgs(max_level, args.knee_gain, None if cats in ([], ["all"]) else cats)


def render_sweep(result: SweepResult, console, rate=None) -> None:
    """The sweep table (reports/tables.py sweep_table: the report draws the same model), fitted to the
    console, then each lane's finding and the crossover."""
    from lanemon.reports.tables import print_table, sweep_table

    print_table(console, sweep_table(result))


def add_arguments(q: argparse.ArgumentParser) -> None:
    g = q.add_argument_group("arrivals")
    g.add_argument("--arrival", choices=("constant", "poisson", "trace"), default="poisson",
                   help="arrival process (default poisson)")
    g.add_argument("--rate", type=number_arg(lo=0, lo_open=True, hi=1e6, unit="requests per second"), metavar="RPS", help="requests per second (constant, poisson)")
    g.add_argument("--trace", metavar="FILE",
                   help="JSON lines {\"t\": seconds, \"input_tokens\": n, \"output_tokens\": n} (--arrival trace)")
    g.add_argument("--requests", type=positive_int, metavar="N", help="stop scheduling after N requests")
    g.add_argument("--duration", type=seconds_arg, metavar="S", help="stop scheduling after S seconds")
    g.add_argument("--warmup", type=number_arg(lo=0, hi=MAX_SECONDS, unit="seconds"), default=0.0, metavar="S",
                   help="requests scheduled in the first S seconds are sent but not measured (default 0)")
    g.add_argument("--cooldown", type=number_arg(lo=0, hi=MAX_SECONDS, unit="seconds"), default=0.0, metavar="S",
                   help="requests scheduled in the last S seconds are sent but not measured (default 0)")
    g = q.add_argument_group("lengths")
    g.add_argument("--input-len", metavar="DIST", help="prompt tokens per request: fixed:N, uniform:LO,HI, "
                   "normal:MEAN,SD or file:PATH (default: the prompt set's prompts)")
    g.add_argument("--output-len", metavar="DIST", help="max_tokens per request, same forms (default: each "
                   "prompt's own)")
    g.add_argument("--shared-prefix", type=number_arg(lo=0, hi=MAX_TOKENS, integer=True), default=0, metavar="TOKENS",
                   help="every prompt starts with the same TOKENS of text (a prefix-cache workload)")
    g.add_argument("--turns", type=number_arg(lo=1, hi=1000, integer=True), default=1, metavar="N",
                   help="chat turns per arrival: later turns carry the whole history (a multi-turn mix; default 1)")
    g.add_argument("--prompts", metavar="FILE", help="a prompt set file (TOML, docs/BENCH.md; default: the shipped "
                   "set) -- real prompts, sent in turn")
    g.add_argument("--ignore-eos", action="store_true",
                   help="send ignore_eos=true (vLLM, SGLang) so replies run to the drawn output length")
    from lanemon.workers import default_workers

    q.add_argument("--workers", type=number_arg(lo=1, hi=1024, integer=True), default=None, metavar="N",
                   help="worker processes sending the requests, their events merged in time order "
                        f"(default {default_workers()}: the cores less one; 1 = this process; --turns needs 1)")
    q.add_argument("--workers-backend", choices=("process", "ray"), default="process",
                   help="how workers run: local processes (default) or Ray actors (pip install 'lanemon[ray]'; "
                        "docs/WORKERS.md)")
    q.add_argument("--ray-address", metavar="ADDR",
                   help="join this Ray cluster (host:port of its head, or 'auto' for the one `ray start` made "
                        "here); workers go on its load hosts, one each unless --workers-per-node or --workers "
                        "(default: a local Ray runtime; docs/WORKERS.md)")
    q.add_argument("--workers-per-node", type=number_arg(lo=1, hi=256, integer=True), default=None, metavar="K",
                   help="with --ray-address: K workers on each load host (default 1)")
    q.add_argument("--ray-log", metavar="FILE",
                   help="with --workers-backend ray: Ray's own messages go to FILE (default: a file in the temp "
                        "dir, named on stderr); they never reach stdout or the screen")
    q.add_argument("--seed", type=int, default=None, help="seed for the schedule and lengths (default random)")
    q.add_argument("--max-tokens", default=None, metavar="N", help="cap every prompt's max_tokens at N")
    q.add_argument("--temperature", default="0", metavar="T", help="sampling temperature (default 0)")


def workers_arg(args: argparse.Namespace) -> int:
    """--workers, defaulting to the cores less one (1 for multi-turn: later turns need earlier answers)."""
    from lanemon.workers import default_workers

    if args.workers is None:
        return 1 if args.turns > 1 else default_workers()
    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.workers > 1 and args.turns > 1:
        raise UsageError("--turns > 1 needs the answers of earlier turns in one process: use --workers 1")
    return args.workers


def workers_per_node_arg(args: argparse.Namespace) -> int | None:
    """--workers-per-node (only with --ray-address; one per load host when neither it nor --workers is given)."""
    per_node = getattr(args, "workers_per_node", None)
    if per_node is not None and not getattr(args, "ray_address", None):
        raise UsageError("--workers-per-node needs --ray-address (workers on a cluster's load hosts)")
    if per_node is not None and args.workers is not None:
        raise UsageError("give --workers-per-node K or --workers N, not both")
    if getattr(args, "ray_address", None) and per_node is None and args.workers is None:
        return 1
    return per_node


def load_options(args: argparse.Namespace):
    from lanemon.workloads.bench.load import LengthDist, LoadOptions, LoadSpecError, read_trace

    try:
        trace = read_trace(args.trace) if args.trace else []
        if args.arrival == "trace" and not trace:
            raise UsageError("--arrival trace needs --trace FILE")
        opts = LoadOptions(
            arrival=args.arrival, rate=args.rate, requests=args.requests, duration=args.duration,
            warmup=args.warmup, cooldown=args.cooldown,
            input_len=LengthDist.parse(args.input_len, "--input-len") if args.input_len else None,
            output_len=LengthDist.parse(args.output_len, "--output-len") if args.output_len else None,
            shared_prefix=args.shared_prefix, ignore_eos=args.ignore_eos, trace=trace, trace_path=args.trace,
            turns=args.turns)
        opts.schedule(args.seed)  # validates rate/count/duration now, not mid-run
        return opts
    except LoadSpecError as exc:
        raise UsageError(str(exc)) from None


def render(result: LoadResult, console, secs=None, rate=None) -> None:
    """The load table (reports/tables.py load_table: the report draws the same model), fitted to the console,
    then the headlines of lanes that fell behind and the client-behind note."""
    from lanemon.reports.sections.load import schedule_note
    from lanemon.reports.tables import load_table, print_table
    from lanemon.workloads.bench.load import length_lines, load_headlines, reps_of

    print_table(console, load_table(result))
    for line in load_headlines(reps_of(result)):
        console.print(line, style="red", markup=False, highlight=False)
    for line in length_lines(reps_of(result)):
        console.print(line, markup=False, highlight=False)
    console.print(schedule_note(result, list(result.lanes)), markup=False, highlight=False, style="dim")
    if any(d.client_behind for d in result.lanes.values()):
        console.print("[yellow]client behind[/]: lanemon sent some requests late (send lag p99 over 10 ms); the "
                      "lane was offered less than the schedule says. Use fewer lanes at once or a lower rate.")


def lost_hosts(result: LoadResult) -> list[str]:
    """``host (node)`` of every load host lost mid-rep (``workers_lost``), once each, sorted."""
    return sorted({f"{w.host} ({str(w.node)[:12]})" for lane in result.lanes.values() for r in lane.reps
                   for w in r.workers_lost})
