"""``lanemon agree`` (greedy agreement) and ``lanemon kl`` (logprob divergence)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from lanemon.cli.common import (EXIT_INTERRUPTED, UsageError, add_workload_args, err, positive_int, run_headless,
                                workload_lanes)
from lanemon.config import LaneConfig
from lanemon.untrusted import json_visible

if TYPE_CHECKING:
    from lanemon.results.agree import AgreeResult
    from lanemon.results.kl import KlResult

R = TypeVar("R")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "agree", help="greedy agreement: where do two lanes' temperature-0 continuations first differ?",
        description="Send the same raw-text prompts to two lanes at temperature 0 and report, per prompt, the "
                    "first word where the continuations differ; summary: exact matches, median first divergence, "
                    "prompts agreeing for >= 10 words, prompts diverging at word 0. A signature of quantization "
                    "on open-ended text, not a quality verdict (see `lanemon qeval`).")
    p.add_argument("--prompts", type=positive_int, default=40, metavar="N", help="how many prompts (default 40)")
    p.add_argument("--tokens", type=positive_int, default=128, metavar="N", help="tokens per continuation (128)")
    p.add_argument("--prompt-file", metavar="F", help="your own prompts, one per line")
    add_workload_args(p)
    p.set_defaults(func=cmd_agree)

    p = sub.add_parser(
        "kl", help="teacher-forced logprob divergence of each lane against a reference lane",
        description="KL(reference || lane) per token over the reference lane's greedy continuation, from top-k "
                    "prompt logprobs (echo). Lanes that refuse logprobs are reported as 'not exposed' with the "
                    "server's message and exit code 3. Estimator: docs/AGREE.md.")
    p.add_argument("--reference", required=True, metavar="LANE", help="the reference lane (e.g. the native one)")
    p.add_argument("--prompts", type=positive_int, default=8, metavar="N", help="how many prompts (default 8)")
    p.add_argument("--tokens", type=positive_int, default=32, metavar="N", help="teacher tokens per prompt (32)")
    p.add_argument("--top-k", type=positive_int, default=5, metavar="K", help="logprobs per position (5)")
    add_workload_args(p)
    p.set_defaults(func=cmd_kl)


def _prompts(args: argparse.Namespace) -> list[str]:
    from lanemon.workloads.agree import load_agree_prompts

    try:
        prompts = load_agree_prompts(args.prompt_file if getattr(args, "prompt_file", None) else None)
    except OSError as exc:
        raise UsageError(f"--prompt-file: cannot read {args.prompt_file}: {exc.strerror or exc}") from None
    if not prompts:
        raise UsageError("no prompts to send")
    if args.prompts > len(prompts):
        if getattr(args, "prompt_file", None):
            raise UsageError(f"--prompts {args.prompts}: the file has only {len(prompts)} prompts")
        prompts = (prompts * (args.prompts // len(prompts) + 1))
    return prompts[: args.prompts]


def _progress(label: str, quiet: bool):
    if quiet:
        return None, None
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.console import Console

    progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                        console=Console(stderr=True), transient=True)
    task = progress.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        progress.update(task, completed=done, total=total)

    return progress, update


def _run(args: argparse.Namespace, command: str, lanes: list[LaneConfig], body, results_fn: Callable[..., R]
         ) -> tuple[R | None, bool]:
    """Run ``body(harness, progress)`` headless with a Rich progress bar; results from the events."""
    progress, update = _progress(command, args.json)

    async def run_body(harness) -> None:
        if progress is None:
            await body(harness, update)
            return
        with progress:
            await body(harness, update)

    run = run_headless(args, command, lanes, run_body)
    if run.down:
        err(f"lane down: {run.down}")
        return None, False
    return results_fn(run.harness.events), run.interrupted


def cmd_agree(args: argparse.Namespace) -> int:
    import orjson

    from lanemon.results.common import to_json_obj
    from lanemon.workloads.agree import agree_results, public, run_agree

    prompts = _prompts(args)
    with workload_lanes(args) as lanes:
        if len(lanes) < 2:
            raise UsageError("agree needs two lanes (--lanes A,B)")
        lanes = lanes[:2]

        async def body(harness, update):
            await run_agree(harness, prompts, tokens=args.tokens, progress=update)

        result, interrupted = _run(args, "agree", lanes, body, agree_results)
        if result is None:
            return 1  # a lane was down (said on stderr)
    if args.json:
        sys.stdout.write(json_visible(orjson.dumps(to_json_obj(public(result))).decode()) + "\n")  # bidi, zero-width: \uXXXX
    else:
        _print_agree(result, getattr(args, "width", None))
    return EXIT_INTERRUPTED if interrupted else 0


def _print_agree(r: AgreeResult, width: int | None = None) -> None:
    from rich.table import Table

    from lanemon.cli.common import output_console

    from lanemon.measure.catalogue import label
    from lanemon.reports.format import share

    console = output_console(width)
    a, b = (r.lanes + ["?", "?"])[:2]
    table = Table(title=f"greedy agreement {a} vs {b}: first differing word per prompt")
    table.add_column("words", justify="right")
    table.add_column(label("agree_bucket"), justify="right")
    table.add_column(label("agree_bucket_share"), justify="right")
    table.add_column("")
    for bucket, count in r.histogram.items():
        part = r.histogram_share.get(bucket)
        table.add_row(bucket, str(count), share(part), "█" * round(30 * (part or 0)))
    console.print(table)
    med = r.median_first_divergence_word
    console.print(
        f"{r.exact}/{r.total} exact matches; median first divergence at word "
        f"{'—' if med is None else f'{med:g}'}; {r.agree_ge_10_words}/{r.total} agree for ten or more words; "
        f"{r.diverge_at_0}/{r.total} diverge at word 0"
        + (f"; {r.errors} prompts errored" if r.errors else "")
    )
    console.print("[dim]Greedy agreement is a divergence signature, not a quality verdict: see `lanemon qeval`.[/]")


def cmd_kl(args: argparse.Namespace) -> int:
    import orjson

    from lanemon.workloads.agree import load_agree_prompts
    from lanemon.results.common import to_json_obj
    from lanemon.workloads.kl import EXIT_NOT_EXPOSED, kl_results, run_kl

    prompts = load_agree_prompts()[: args.prompts]
    with workload_lanes(args) as lanes:
        names = [lane.name for lane in lanes]
        if args.reference not in names:
            raise UsageError(f"--reference {args.reference!r} is not a lane (lanes: {', '.join(names)})")
        if len(lanes) < 2:
            raise UsageError("kl needs a reference lane and at least one other lane")

        async def body(harness, update):
            await run_kl(harness, prompts, reference=args.reference, tokens=args.tokens, k=args.top_k,
                         progress=update)

        result, interrupted = _run(args, "kl", lanes, body, kl_results)
        if result is None:
            return 1  # a lane was down (said on stderr)
    if args.json:
        sys.stdout.write(json_visible(orjson.dumps(to_json_obj(result)).decode()) + "\n")  # bidi, zero-width: \uXXXX
    else:
        _print_kl(result, getattr(args, "width", None))
    for name, v in result.lanes.items():
        if v.status == "not_exposed":
            err(f"not exposed by lane {name}: {v.message}")
    if interrupted:
        return EXIT_INTERRUPTED
    statuses = [v.status for v in result.lanes.values()]
    if any(s == "error" for s in statuses):
        return 1
    if any(s in ("not_exposed", "skipped") for s in statuses):
        return EXIT_NOT_EXPOSED
    return 0


def _print_kl(r: KlResult, width: int | None = None) -> None:
    from rich.table import Table

    from lanemon.reports.format import pct  # a p99 over fewer than 100 positions says so

    from lanemon.cli.common import output_console

    console = output_console(width)
    table = Table(title=f"teacher-forced KL(reference {r.reference} || lane), top-{r.k} with tail bucket")
    from lanemon.measure.catalogue import label

    for col in ("lane", "status", label("kl"), label("kl_position", "p50"), label("kl_position", "p99"),
                label("kl_positions"), "detail"):  # the catalogue's labels
        table.add_column(col)
    for name, v in r.lanes.items():
        def f(x):
            return "—" if x is None else f"{x:.4f}"
        table.add_row(name, str(v.status), f(v.kl), f(v.kl_p50), pct(v.kl_p99, 99, v.positions, None, f), str(v.positions),
                      v.message or "")
    console.print(table)
