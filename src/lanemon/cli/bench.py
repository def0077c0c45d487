"""`lanemon bench {decode,prefill,needles}`: the speed harness.

Without ``--headless``/``--json`` the bench opens its TUI screen
(the bench screen of :func:`lanemon.cli.launch.run_screen`, imported lazily); ``--headless`` shows
a progress bar on stderr and the result tables on stdout; ``--json`` prints
exactly one JSON object on stdout (docs/JSON.md).  Both use the same
:class:`~lanemon.workloads.bench.run.BenchRun`.  Ctrl-C stops cleanly: finished
cells are kept and recorded, the results say ``interrupted``, exit code 130.
Bad input is one line and exit 2; a lane that is down at start is one line
and exit 1.  Nothing here imports Textual at module level.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lanemon.cli import bench_load
from lanemon.cli.common import (EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, MAX_COUNT, UsageError, add_measure_args, add_workload_args, err, int_list, open_recorder, parse_number, recording_saved, run_interruptible, slo_arg, thinking_arg, workload_lanes)
from lanemon.measure.catalogue import NOT_MEASURED
from lanemon.untrusted import inert, json_visible

if TYPE_CHECKING:  # the typed results are imported where used: --help imports no msgspec (tests/test_startup.py)
    from lanemon.results.decode import DecodeCategoryCell, DecodeResult
    from lanemon.results.load import LoadResult
    from lanemon.results.needles import NeedleResult
    from lanemon.results.prefill import PrefillResult
    from lanemon.results.sweep import SweepResult

HELP = {
    "decode": "decode ladder: aggregate tok/s by concurrency, TTFT, per-category C1 rates, the crossover",
    "prefill": "prefill ladder: cold prefill tok/s by prompt length; prefix-cache hits labelled apart",
    "needles": "needle in a haystack: is a random key found at each context length?",
    "load": bench_load.HELP,
    "sweep": bench_load.SWEEP_HELP,
}


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bench`` with its sub-commands."""
    p = sub.add_parser("bench", help="benchmarks: decode ladder, prefill ladder, needles, open-loop load",
                       description="Benchmark the lanes the way the reference write-up did (docs/BENCH.md).")
    bsub = p.add_subparsers(dest="bench_kind", metavar="BENCH")
    p.set_defaults(func=_missing_kind, bench_parser=p)
    for kind in ("decode", "prefill", "needles", "load", "sweep"):
        q = bsub.add_parser(kind, help=HELP[kind], description=HELP[kind] + ". See docs/BENCH.md.")
        add_workload_args(q)
        q.add_argument("--reps", default="1", metavar="N", help="repeat every cell N times (default 1); "
                       "cells show min/median/max and are flagged unstable when (max-min)/median > 0.25")
        q.add_argument("--parallel-lanes", action="store_true",
                       help="run the lanes at the same time (default: one after the other)")
        q.add_argument("--chat", action="store_true", help="use /chat/completions (default: /completions)")
        q.add_argument("--theme", metavar="NAME", help="colour theme of the TUI")
        add_measure_args(q)
        if kind == "decode":
            q.add_argument("--levels", default="1,2,3,4,5,6", metavar="C,...",
                           help="concurrency levels (default 1,2,3,4,5,6)")
            q.add_argument("--categories", default="all", metavar="all|CAT,...",
                           help="prompt categories to use (default all)")
            q.add_argument("--max-tokens", default=None, metavar="N", help="cap every prompt's max_tokens at N")
            q.add_argument("--prompts", type=Path, metavar="FILE",
                           help="a prompt set file (TOML, docs/BENCH.md; default: the shipped set v1)")
            q.add_argument("--temperature", default="0", metavar="T", help="sampling temperature (default 0)")
            q.add_argument("--no-categories", action="store_true",
                           help="skip the per-category C1 phase after the ladder")
        elif kind == "load":
            bench_load.add_arguments(q)
        elif kind == "sweep":
            bench_load.add_sweep_arguments(q)
        else:
            default = "2000,8000,32000,64000" if kind == "prefill" else "20000,131072,300000"
            q.add_argument("--lengths", default=default, metavar="N,...",
                           help=f"prompt lengths in the lane's tokens, 8k style allowed (default {default})")
            q.add_argument("--seed", type=int, default=None, help="seed for nonces, keys and depths (default random)")
            q.add_argument("--max-context", default=None, metavar="N",
                           help="the lanes' context in tokens: calibration stays inside it and longer lengths are "
                                "not sent (default: max_model_len from each lane's /v1/models, when it says)")
            if kind == "prefill":
                q.add_argument("--no-cache-check", action="store_true",
                               help="do not repeat each length's prompt to look for a prefix-cache hit")
        q.set_defaults(func=cmd_bench, bench_kind=kind)


def _missing_kind(args: argparse.Namespace) -> int:
    raise UsageError("bench: choose one of decode, prefill, needles (e.g. `lanemon bench decode --demo --headless`)")


def _ints(text: str, flag: str) -> list[int]:
    try:
        return int_list(text)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def _positive(text: str | None, flag: str) -> int | None:
    return parse_number(text, flag, lo=1, hi=MAX_COUNT, integer=True)


def _temperature(text: str) -> float:
    return parse_number(text, "--temperature", lo=0, hi=100)


def build_options(args: argparse.Namespace):
    """BenchOptions from the arguments; UsageError (one line) for bad input."""
    from lanemon.workloads.bench.run import BenchOptions
    from lanemon.workloads.prompts import PromptSetError, load_prompt_set

    kind = args.bench_kind
    reps = _positive(args.reps, "--reps")
    chat = args.chat or args.thinking is not None  # thinking is a chat-template switch
    time_scale = args.time_scale if getattr(args, "demo", False) else None
    thinking, slo = thinking_arg(args), slo_arg(args)
    try:
        if kind == "decode":
            levels = _ints(args.levels, "--levels")
            max_tokens = _positive(args.max_tokens, "--max-tokens")
            temperature = _temperature(args.temperature)
            prompt_set = load_prompt_set(args.prompts)
            cats = [c.strip() for c in str(args.categories).split(",") if c.strip()]
            if not cats:
                raise UsageError("--categories: expected 'all' or a list like coding,prose")
            return BenchOptions(reps=reps, parallel_lanes=args.parallel_lanes, chat=chat, time_scale=time_scale,
                                thinking=thinking, slo=slo, levels=levels, max_tokens=max_tokens,
                                per_category=not args.no_categories, temperature=temperature, prompt_set=prompt_set,
                                categories=None if cats == ["all"] else cats)
        if kind == "sweep":
            sweep = bench_load.sweep_options(args)
            return BenchOptions(reps=reps, parallel_lanes=args.parallel_lanes, chat=chat, time_scale=time_scale,
                                thinking=thinking, slo=slo, max_level=sweep.max_level, knee_gain=sweep.knee_gain,
                                per_category=False, categories=sweep.categories,
                                max_tokens=_positive(args.max_tokens, "--max-tokens"))
        if kind == "load":
            load = bench_load.load_options(args)
            prompt_set = load_prompt_set(args.prompts)
            workers = bench_load.workers_arg(args)
            workers_per_node = bench_load.workers_per_node_arg(args)
            max_tokens = _positive(args.max_tokens, "--max-tokens")
            temperature = _temperature(args.temperature)
            return BenchOptions(reps=reps, parallel_lanes=args.parallel_lanes, chat=chat or args.turns > 1,
                                time_scale=time_scale, thinking=thinking, slo=slo, load=load, prompt_set=prompt_set,
                                workers=workers,
                                workers_backend="ray" if args.ray_address else args.workers_backend,  # a cluster is Ray's
                                ray_address=args.ray_address, workers_per_node=workers_per_node, ray_log=args.ray_log,
                                seed=args.seed, max_tokens=max_tokens, temperature=temperature)
        lengths = _ints(args.lengths, "--lengths")
        max_context = _positive(args.max_context, "--max-context")
        return BenchOptions(reps=reps, parallel_lanes=args.parallel_lanes, chat=chat, time_scale=time_scale,
                            thinking=thinking, slo=slo, lengths=lengths, seed=args.seed, max_context=max_context,
                            cache_check=not args.no_cache_check if kind == "prefill" else True)
    except PromptSetError as exc:
        msg = str(exc)
        raise UsageError(f"--categories: {msg}" if msg.startswith("unknown categor") else msg) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def cmd_bench(args: argparse.Namespace) -> int:
    from lanemon.workloads.bench.run import BenchRun

    kind = args.bench_kind
    opts = build_options(args)
    with workload_lanes(args) as lanes:
        recorder = open_recorder(args, f"bench-{kind}", [lane.public() for lane in lanes], {"bench": kind},
                                 hold_header=opts.uses_workers)  # the header names the workers once placed
        run = BenchRun(kind, lanes, opts, recorder=recorder)
        try:
            if not (args.headless or args.json):
                try:
                    from lanemon.cli.launch import run_screen
                except ImportError as exc:
                    err(f"the bench screen is not available ({exc}); running headless")
                else:
                    return run_screen(run, theme=args.theme, refresh_hz=4.0)
            return _headless(run, args)
        finally:
            if recorder is not None:
                if run.events or recorder.failed:
                    recording_saved(recorder)
                else:
                    recorder.close()


# ---------------------------------------------------------------------------
# Headless
# ---------------------------------------------------------------------------


class _Progress:
    """Progress on stderr: a Rich bar with ETA on a terminal, one line per finished cell otherwise."""

    def __init__(self, run) -> None:
        from rich.console import Console

        self.run = run
        self.console = Console(stderr=True)
        self.total = sum(c.weight for c in run.plan) or 1.0
        self.weights = {c.cell: c.weight for c in run.plan}
        self.done_weight = 0.0
        self.t0 = time.monotonic()
        self.bar = None
        self.task = None
        if self.console.is_terminal:
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                                TextColumn("{task.fields[cells]}"), TimeElapsedColumn(), TextColumn("ETA"),
                                TimeRemainingColumn(), console=self.console, transient=True)
            self.task = self.bar.add_task(f"bench {run.kind}", total=self.total,
                                          cells=f"0/{len(run.plan)} cells")
        run.bus.subscribe(self.on_event)

    def __enter__(self) -> "_Progress":
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def on_event(self, ev) -> None:
        from lanemon.folds.bench import cell_label

        if ev.kind == "note" and ev.data.get("about") == "load_hosts":  # Ray joined, a load host lost: one line
            # one line whatever its length (soft_wrap): a path in it stays whole for a log reader and a copy
            self.console.print(f"lanemon: {inert(str(ev.data.get('message')))}", markup=False, highlight=False,
                               soft_wrap=True)
            return
        if ev.kind != "mark" or ev.data.get("label") != "cell":
            return
        label = cell_label(self.run.kind, ev.data, ev.lane or "?")
        if ev.data.get("phase") == "start":
            if self.bar is not None:
                self.bar.update(self.task, description=f"bench {self.run.kind} · {label}")
            return
        if ev.data.get("phase") != "end":
            return
        self.done_weight += self.weights.get(ev.data.get("cell"), 1.0)
        done, total = self.run.cells_done, len(self.run.plan)
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done_weight, cells=f"{done}/{total} cells")
            return
        elapsed = time.monotonic() - self.t0
        frac = min(1.0, self.done_weight / self.total)
        eta = f", ETA {_duration(elapsed / frac - elapsed)}" if 0 < frac < 1 else ""
        errors = ev.data.get("errors") or 0
        note = f" ({errors} error{'s' if errors != 1 else ''})" if errors else ""
        err(f"{label} done{note} [{done}/{total} cells, {_duration(elapsed)} elapsed{eta}]")


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    m, s = divmod(seconds, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def _headless(run, args: argparse.Namespace) -> int:
    import orjson

    from lanemon.results.common import to_json_obj
    from lanemon.results.load import LoadResult
    from lanemon.results.needles import NeedleResult
    from lanemon.results.prefill import PrefillResult
    from lanemon.workers.pool import WorkersUnavailable
    from lanemon.workloads.harness import LaneDown

    try:
        with _Progress(run):
            _, interrupted = run_interruptible(run.run)
    except (LaneDown, WorkersUnavailable) as exc:
        err(str(exc))
        return EXIT_FAIL
    result = run.results()  # typed (lanemon.results)
    if args.json:
        sys.stdout.write(json_visible(orjson.dumps(to_json_obj(result)).decode()) + "\n")  # bidi, zero-width: \uXXXX
        sys.stdout.flush()
    else:
        from lanemon.cli.common import output_console

        render(result, output_console(getattr(args, "width", None)),
               time_scale=getattr(args, "time_scale", None) if getattr(args, "demo", False) else None,
               events=run.events)
    if interrupted or result.interrupted:
        return EXIT_INTERRUPTED
    lost = bench_load.lost_hosts(result) if isinstance(result, LoadResult) else []
    if lost:  # lost data is never exit 0
        err(f"load host{'s' if len(lost) > 1 else ''} lost mid-run: {', '.join(lost)} (workers_lost in the results)")
        return EXIT_FAIL
    failed = {name: lane.error for name, lane in result.lanes.items()
              if isinstance(result, (PrefillResult, NeedleResult)) and lane.error}
    for name, why in failed.items():  # a failed calibration or a length the lane cannot take
        err(f"lane {name}: {why}")
    return EXIT_FAIL if failed else EXIT_OK


# ---------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------


def _tokens(n: Any) -> str:
    n = int(n)
    if n >= 1000 and n % 1000 == 0:
        return f"{n // 1000}K"
    if n >= 1000:
        return f"{n / 1000:.1f}K"
    return str(n)


def _rate(v: Any) -> str:
    if v is None:
        return NOT_MEASURED
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"


def _secs(v: Any) -> str:
    if v is None:
        return NOT_MEASURED
    return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"


def _spread_cell(c: DecodeCategoryCell, value: float | None) -> str:
    """``value`` (the cell's figure) with the reps' range, unstable, the errors and bursts."""
    text = _rate(value)
    reps = [r for r in c.reps if r is not None]
    if len(c.reps) > 1 and reps:
        text += f" [dim]({_rate(c.min)}–{_rate(c.max)})[/]"
    if c.unstable:
        text += " [yellow]unstable[/]"
    if c.errors:
        text += f" [red]{c.errors} err[/]"
        apart = [f"{n} {k}" for k, n in (("truncated", c.truncated), ("empty", c.empty)) if n]  # counted in errors
        if apart:
            text += f" [red]({', '.join(apart)})[/]"
    if c.bursts:
        text += f" [yellow]{c.bursts} burst[/]"
    return text


def render(result: DecodeResult | PrefillResult | NeedleResult | LoadResult | SweepResult, console,
           time_scale: float | None = None, events=None) -> None:
    """The result table(s) of one bench (typed: a --json read back is read as its Struct first, ``as_result``),
    with the crossover sentence and flags: every table the report of the same run has (a sweep's energy and cost
    by level: from ``events``, the decode cells the sweep ran)."""

    kind = result.bench
    if kind == "decode":
        _render_decode(result, console)
    elif kind == "prefill":
        _render_prefill(result, console)
    elif kind == "needles":
        _render_needles(result, console)
    elif kind == "load":
        bench_load.render(result, console, _secs, _rate)
    elif kind == "sweep":
        bench_load.render_sweep(result, console, _rate)
        if events is not None:  # the report's efficiency section of a sweep reads its decode cells
            from lanemon.measure.views import attach_engine_views
            from lanemon.workloads.bench.decode import decode_results

            _render_efficiency(attach_engine_views(decode_results(events), events), list(result.lanes), console)
    if time_scale and time_scale != 1.0:
        console.print(f"[dim]simulated lanes at --time-scale {time_scale}: rates are as measured "
                      f"(multiply by {time_scale} for the lanes' real-time rates, times divide)[/]")
    if result.interrupted:
        from lanemon.workloads.bench.run import interruption_text
        from rich.markup import escape as rich_escape

        console.print(f"[yellow]{rich_escape(interruption_text(kind or 'bench', result) or 'interrupted')}[/]; "
                      "finished cells are shown")


def _render_decode(result: DecodeResult, console) -> None:
    from rich.table import Table

    from lanemon.reports.tables import decode_table, print_table
    from lanemon.workloads.bench.decode import crossover_sentence

    lanes = result.lanes
    names = list(lanes)
    # one model with the TUI bench screen (reports/tables.py), fitted to the console's width
    print_table(console, decode_table(result, names))
    sentence = crossover_sentence(result)
    if sentence:
        console.print(f"[bold]{sentence}[/]  (▲ leads the level beyond the noise band, = within it)")
    cats = list(dict.fromkeys(c for d in lanes.values() for c in d.categories))
    if cats:
        from lanemon.measure.catalogue import label
        from lanemon.results.decode import ratios_of

        ratios = ratios_of(result)  # the result's own A/B per category (computed once: results/decode.py)
        ct = Table(title="per-stream decode at C1, by category")
        ct.add_column("category")
        for n in names:
            ct.add_column(f"{n} {label('per_stream_tok_s')}", justify="right")
        if ratios is not None:
            ct.add_column(f"{'/'.join(ratios.compared)} {label('category_ratio')}", justify="right")
        for cat in cats:
            row = [cat]
            for n in names:
                c = lanes[n].categories.get(cat)
                row.append(_spread_cell(c, c.per_stream_tok_s) if c else NOT_MEASURED)
            if ratios is not None:
                r = ratios.by_category.get(cat)
                row.append(f"{r:.2f}×" if r else NOT_MEASURED)
            ct.add_row(*row)
        console.print(ct)
    _render_efficiency(result, names, console)


def _render_efficiency(result: DecodeResult, names: list[str], console) -> None:
    """Tokens per joule, GPU power and USD per 1M output tokens by level: the report's efficiency section
    (reports/sections/efficiency.py), shown when a lane has GPU telemetry or a cost (docs/GPU.md)."""
    from rich.markup import escape as rich_escape
    from rich.table import Table

    from lanemon.reports.sections.efficiency import efficiency_section

    sec = efficiency_section(result, names)
    if sec is None:
        return
    t = Table(title="energy and cost per level (docs/GPU.md)")
    for i, h in enumerate(sec.headers):
        t.add_column(h, justify="left" if i == 0 else "right")
    for row in sec.rows:
        t.add_row(*row)
    console.print(t)
    if sec.summary:
        console.print(rich_escape(sec.summary))
    for note in sec.notes:  # why a lane with telemetry has no figure (its exporter's interval against the cells)
        if "energy withheld" in note:
            console.print(rich_escape(note))


def _render_prefill(result: PrefillResult, console) -> None:
    from lanemon.reports.prefill_table import prefill_table
    from lanemon.reports.tables import print_table

    # one model with the TUI bench screen and the report (reports/tables.py), fitted to the console's width
    print_table(console, prefill_table(result, list(result.lanes)))


def _render_needles(result: NeedleResult, console) -> None:
    from rich.table import Table

    from lanemon.reports.format import num

    lanes = result.lanes
    names = list(lanes)
    lengths = sorted({int(k) for d in lanes.values() for k in d.lengths})
    t = Table(title="needles · a random 8-character key at a random depth")
    for col, just in (("length", "right"), ("lane", "left"), ("found", "left"), ("depth", "right"),
                      ("TTFT", "right"), ("prefill tok/s", "right")):
        t.add_column(col, justify=just)
    for length in lengths:
        rows = [(n, c) for n in names if (c := lanes[n].lengths.get(str(length))) is not None]
        for i, (n, c) in enumerate(rows):
            if c.found is None:
                found = f"[red]error[/]: {str(c.error or '')[:60]}"
            elif c.found:
                found = "[green]found[/]"
                if c.runs_count > 1:
                    found += f" {c.found_count}/{c.runs_count}"
            else:
                found = f"[red]NOT FOUND[/] (key {c.key or None}, answer {str(c.answer or '')[:40]!r})"
            depth = num(c.depth)
            t.add_row(_tokens(length) if i == 0 else "", n, found, f"{depth * 100:.0f}%" if depth is not None else NOT_MEASURED,
                      _secs(num(c.ttft_s)), _rate(num(c.prefill_tok_s)), end_section=i == len(rows) - 1)
    console.print(t)
