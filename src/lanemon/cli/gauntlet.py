"""`lanemon gauntlet`: the 20-hop agent file-chain gauntlet on every lane.

Without ``--headless``/``--json`` it opens the gauntlet screen (Textual is
imported only then).  Bad input exits 2, a lane down at the start exits 1,
Ctrl-C keeps the finished reps (exit 130).  See docs/GAUNTLET.md.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from lanemon.cli.common import (EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, UsageError, add_workload_args, err, open_recorder,
                                positive_int, recording_saved, run_headless, workload_lanes)
from lanemon.untrusted import json_visible

if TYPE_CHECKING:
    from lanemon.results.gauntlet import GauntletResult

MAX_HOPS = 500


def register(sub: argparse._SubParsersAction) -> None:
    from lanemon.folds.gauntlet_defaults import DEFAULT_HOPS, DEFAULT_REPS, DEFAULT_SYSTEM_PROMPT_TOKENS

    p = sub.add_parser(
        "gauntlet", help="the 20-hop agent gauntlet: follow a chain of files through tool calls",
        description="Play an agent harness against every lane: a fresh session per rep with a realistic system "
                    "prompt, one read_file tool and a chain of in-memory files, each naming the next; the last "
                    "holds a secret. Reports correct x/N, tool calls and wall time per rep, and per turn the "
                    "prompt tokens, TTFT (prefill) and decode time. Without --headless or --json it opens the "
                    "gauntlet screen. See docs/GAUNTLET.md.",
    )
    p.add_argument("--hops", type=positive_int, default=DEFAULT_HOPS, metavar="N",
                   help=f"files in the chain = tool calls a correct agent makes (default {DEFAULT_HOPS})")
    p.add_argument("--reps", type=positive_int, default=DEFAULT_REPS, metavar="N",
                   help=f"fresh sessions per lane (default {DEFAULT_REPS})")
    p.add_argument("--system-prompt-tokens", type=positive_int, default=DEFAULT_SYSTEM_PROMPT_TOKENS, metavar="N",
                   help=f"size of the agent's system prompt in tokens (default {DEFAULT_SYSTEM_PROMPT_TOKENS})")
    p.add_argument("--max-turns", type=positive_int, metavar="N",
                   help="requests per rep before giving up on a looping agent (default hops + 5)")
    p.add_argument("--stable-prompt", action="store_true",
                   help="no per-turn session header in the system prompt (a prefix-cache-friendly harness)")
    p.add_argument("--seed", type=int, metavar="N", help="seed for file names and secrets (default: fresh)")
    p.add_argument("--theme", metavar="NAME", help="colour theme for the gauntlet screen")
    add_workload_args(p)
    p.set_defaults(func=cmd_gauntlet)


def _config(args: argparse.Namespace):
    from lanemon.workloads.gauntlet import MIN_SYSTEM_PROMPT_TOKENS, GauntletConfig

    if args.hops > MAX_HOPS:
        raise UsageError(f"--hops {args.hops}: at most {MAX_HOPS}")
    if args.system_prompt_tokens < MIN_SYSTEM_PROMPT_TOKENS:
        raise UsageError(f"--system-prompt-tokens {args.system_prompt_tokens}: at least {MIN_SYSTEM_PROMPT_TOKENS}")
    if args.system_prompt_tokens > 200_000:
        raise UsageError(f"--system-prompt-tokens {args.system_prompt_tokens}: at most 200000")
    return GauntletConfig(hops=args.hops, reps=args.reps, system_prompt_tokens=args.system_prompt_tokens,
                          max_turns=args.max_turns, stable_prompt=args.stable_prompt, seed=args.seed,
                          time_scale=args.time_scale if args.demo else None)


def cmd_gauntlet(args: argparse.Namespace) -> int:
    config = _config(args)
    if args.headless or args.json:
        return _run_headless(args, config)
    return _run_tui(args, config)


def _run_headless(args: argparse.Namespace, config) -> int:
    from lanemon.workloads.gauntlet import GauntletRun, gauntlet_results

    with workload_lanes(args) as lanes:

        async def body(harness) -> None:
            await GauntletRun(harness, config, progress=err).run()

        run = run_headless(args, "gauntlet", lanes, body, extra={"bench": "gauntlet"})
        if run.down:
            err(f"lane down: {run.down}")
            return EXIT_FAIL
        interrupted = run.interrupted
        result = gauntlet_results(run.harness.events)
    if args.json:
        import orjson

        from lanemon.results.common import to_json_obj

        sys.stdout.write(json_visible(orjson.dumps(to_json_obj(result), option=orjson.OPT_INDENT_2).decode()) + "\n")
    else:
        from lanemon.cli.common import output_console

        print_result(result, output_console(getattr(args, "width", None)))
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


def print_result(result: GauntletResult, console=None) -> None:
    """The headless report: one table per lane (rep rows) plus the summary sentence."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from lanemon.reports.format import secs
    from lanemon.reports.sections.gauntlet import REP_LABELS, rep_cells

    console = console or Console()
    scale = result.config.time_scale
    for name, lane in result.lanes.items():
        title = f"lane {name}" + (f" · {lane.model}" if lane.model else "")
        table = Table(title=escape(title), title_justify="left")
        for col in REP_LABELS:  # the report's rep table, one lane at a time: the catalogue's labels
            table.add_column(col, justify="right" if col not in ("ok", "end") else "left", no_wrap=True)
        for r in range(lane.reps):
            cells = [escape(c) for c in rep_cells(lane, r)]
            cells[1] = f"[green]{cells[1]}[/]" if cells[1] == "✓" else f"[red]{cells[1]}[/]"
            table.add_row(*cells)
        console.print(table)
        console.print(f"  {lane.correct}/{lane.reps} correct · median wall {secs(lane.median_wall_s)}"
                      " · [dim]Σ over the rep's turns; malformed = tool calls with bad arguments[/]")
    console.print(escape(result.summary))
    if scale and scale != 1:  # the report's note: the figures are as measured
        console.print(f"[dim]times as measured on simulated lanes at --time-scale {scale:g}: divide by {scale:g} "
                      "for the simulated lanes' own seconds[/]")


def _run_tui(args: argparse.Namespace, config) -> int:
    from lanemon.sessions.gauntlet import GauntletSource

    with workload_lanes(args) as lanes:
        recorder = open_recorder(args, "gauntlet", [lane.public() for lane in lanes], extra={"bench": "gauntlet"})
        source = GauntletSource(lanes, config, mode="demo" if args.demo else "live", recorder=recorder)
        try:
            from lanemon.cli.launch import run_screen
        except ImportError as exc:  # pragma: no cover - a broken install
            raise UsageError(f"the terminal UI is not available: {exc}") from None
        try:
            code = run_screen(source, theme=args.theme, screen="gauntlet", refresh_hz=8.0)
        finally:
            recording_saved(recorder)
    if source.error:
        err(f"lane down: {source.error}")
        return EXIT_FAIL
    if source.result is not None:
        print(source.result.summary)
    return code
