"""`lanemon race`: the same prompt on every lane at the same instant, side by side.

Without ``--headless``/``--json`` it opens the TUI race screen (Textual is
imported only then).  Bad input exits 2, a lane down at the start exits 1,
Ctrl-C keeps the finished races (exit 130).  See docs/RACE.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from lanemon.cli.common import (EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, UsageError, add_measure_args, add_workload_args, err, open_recorder, positive_int, recording_saved, run_headless, slo_arg, thinking_arg, workload_lanes)
from lanemon.untrusted import json_visible

if TYPE_CHECKING:
    from lanemon.results.race import RaceResult


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "race", help="race one prompt on every lane, side by side",
        description="Send the same prompt to every lane at the same instant and watch them stream side by side: "
                    "TTFT, decode tok/s, output tokens, total time and finish order per lane. /v1/completions "
                    "at temperature 0 unless --chat. Every race is recorded. Without --headless or --json it "
                    "opens the race screen.",
    )
    src = p.add_mutually_exclusive_group()
    src.add_argument("--prompt", action="append", default=[], metavar="TEXT",
                     help="the prompt to race (repeatable: one race per prompt)")
    src.add_argument("--prompt-file", type=Path, metavar="FILE", help="race the whole file as one prompt ('-': stdin)")
    src.add_argument("--category", metavar="C",
                     help="race a prompt of category C from the shipped prompt set (--repeat cycles through it)")
    p.add_argument("--chat", action="store_true", help="use /v1/chat/completions instead of /v1/completions")
    p.add_argument("--max-tokens", type=positive_int, metavar="N",
                   help="reply budget per lane (default: the prompt's own, else 256)")
    p.add_argument("--repeat", type=positive_int, default=1, metavar="N",
                   help="run the races N times (a session of races; default 1)")
    p.add_argument("--theme", metavar="NAME", help="colour theme for the race screen")
    add_measure_args(p)
    add_workload_args(p)
    p.set_defaults(func=cmd_race)


def _plan(args: argparse.Namespace):
    from lanemon.workloads.race import RacePlan, resolve_prompts

    try:
        prompts = resolve_prompts(prompts=args.prompt, prompt_file=args.prompt_file, category=args.category,
                                  repeat=args.repeat)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    chat = args.chat or args.thinking is not None  # thinking is a chat-template switch
    return RacePlan(prompts=prompts, endpoint="chat" if chat else "completions", max_tokens=args.max_tokens)


def cmd_race(args: argparse.Namespace) -> int:
    plan = _plan(args)
    args.slo_parsed = slo_arg(args)
    if args.headless or args.json:
        return _run_headless(args, plan)
    return _run_tui(args, plan)


def _run_headless(args: argparse.Namespace, plan) -> int:
    from lanemon.folds.race import RaceState
    from lanemon.workloads.race import race_json, race_results, run_race, verdict

    with workload_lanes(args) as lanes:
        live = RaceState()

        async def body(harness) -> None:
            total = len(plan.prompts)
            for i, prompt in enumerate(plan.prompts, 1):
                await run_race(harness, prompt, i, endpoint=plan.endpoint, max_tokens=plan.max_tokens,
                               slo=args.slo_parsed)
                race = race_json(live.races[i])
                err(f"race {i}/{total} ({race.prompt_id or 'prompt'}): {verdict(race)}")

        run = run_headless(args, "race", lanes, body, extra={"bench": "race"},
                           # GPU telemetry and /metrics at each race's edges: energy and engine counters per race
                           harness_kw={"thinking": thinking_arg(args), "monitor": "edges"},
                           connect_kw={"detect_usage": True},
                           setup=lambda harness: harness.bus.subscribe(live.apply))
        if run.down:
            err(f"lane down: {run.down}")
            return EXIT_FAIL
        result = race_results(run.harness.events)
    if args.json:
        import orjson

        from lanemon.results.common import to_json_obj

        sys.stdout.write(json_visible(orjson.dumps(to_json_obj(result), option=orjson.OPT_INDENT_2).decode()) + "\n")
    else:
        from lanemon.cli.common import output_console

        print_result(result, output_console(getattr(args, "width", None)))
    if run.interrupted:
        return EXIT_INTERRUPTED
    races = result.races
    empty = [i for i, race in enumerate(races, 1) if race.winner is None]
    if empty or not races:  # a race no lane completed is no result (docs/RACE.md; one lane of several failing is)
        failed = sorted({n for race in races for n, r in race.lanes.items() if r.error})
        what = f"no lane completed race {', '.join(map(str, empty))}" if empty else "no race ran"
        err(f"exit 1: {what}" + (f" (failed: {', '.join(failed)})" if failed else ""))
        return EXIT_FAIL
    return EXIT_OK


def print_result(result: RaceResult, console=None) -> None:
    """The headless report: one table and one verdict sentence per race (+ a summary for several)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from lanemon.reports.format import seconds, tok_s
    from lanemon.reports.render.race_tables import race_table
    from lanemon.workloads.race import verdict

    console = console or Console()
    races = result.races
    if not races:
        console.print("no race finished")
        return
    for race in races:
        title = f"race {race.race}"
        if race.prompt_id:
            title += f" · {race.prompt_id}"
        if race.category:
            title += f" ({race.category})"
        title += f" · {race.endpoint} · max {race.max_tokens} tok"
        console.print(f"[b]{escape(title)}[/]")
        console.print(race_table(race))
        console.print(escape(verdict(race)))
        for name, lane in race.lanes.items():
            if lane.error:
                console.print(f"  {escape(name)}: {escape(lane.error.cls)}: {escape(lane.error.message)}")
        console.print()
    if result.slo:
        targets = ", ".join(f"{k.upper()} ≤ {v:g} s" for k, v in result.slo.items())
        for name, lane in result.lanes.items():
            g = lane.goodput
            if g is not None and g.share is not None:
                rate = f", {g.rate_rps:.2f} req/s" if g.rate_rps is not None else ""
                console.print(f"goodput {escape(name)}: {g.good}/{g.total} races within {targets} "
                              f"({g.share * 100:.0f}%{rate})")
    if len(races) > 1:
        table = Table(title=f"{len(races)} races · {result.lanes_stat}", title_justify="left")
        from lanemon.measure.catalogue import label

        for col in ("lane", *(label(n) for n in ("race_wins", "ttft", "per_stream_tok_s", "output_tokens", "e2e"))):
            table.add_column(col, justify="left" if col == "lane" else "right")
        for name, lane in result.lanes.items():  # wins: the result's own count (of the races the title counts)
            tokens = "—" if lane.output_tokens is None else f"{lane.output_tokens:g} tok"
            table.add_row(escape(name), str(lane.wins), seconds(lane.ttft_s),
                          tok_s(lane.decode_tok_s), tokens, seconds(lane.total_s))
        console.print(table)


async def _lanes_down(lanes) -> str | None:
    """Probe every lane once (not recorded); a one-line reason if any is down."""
    from lanemon.workloads.harness import Harness, LaneDown

    harness = Harness(lanes, keep_events=False)
    try:
        await harness.connect()
    except LaneDown as exc:
        return str(exc)
    finally:
        await harness.aclose()
    return None


def _run_tui(args: argparse.Namespace, plan) -> int:
    import asyncio

    from lanemon.config import ProbeConfig
    from lanemon.sessions.sources import LiveSession

    try:
        from lanemon.ui.app import ThemeError, make_app
        from lanemon.ui.themes import load_themes, resolve_theme
    except ImportError as exc:  # pragma: no cover - a broken install
        raise UsageError(f"the terminal UI is not available: {exc}") from None
    try:
        resolve_theme(args.theme, load_themes(warnings=[]))
    except ThemeError as exc:
        raise UsageError(str(exc)) from None
    with workload_lanes(args) as lanes:
        down = asyncio.run(_lanes_down(lanes))
        if down:
            err(f"lane down: {down}")
            return EXIT_FAIL
        recorder = open_recorder(args, "race", [lane.public() for lane in lanes], extra={"bench": "race"})
        # health probes only (GET /models); no probe requests share the lanes with a race
        session = LiveSession(lanes, probe=ProbeConfig(interval=2.0, enabled=False),
                              mode="demo" if args.demo else "live", recorder=recorder)
        for client in session.clients.values():
            client.thinking = thinking_arg(args)
        session.race_slo = args.slo_parsed
        app = make_app(session, theme=args.theme, race=plan)
        try:
            app.run()
        finally:
            session.close()
            recording_saved(recorder)
        for warning in getattr(app, "theme_warnings", []):
            err(f"warning: {warning}")
        return app.return_code or EXIT_OK
