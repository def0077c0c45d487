"""`lanemon check URL_OR_LANE`: the post-boot smoke test of one lane."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from lanemon.cli.common import err, UsageError, add_lane_args
from lanemon.cli.live import _load
from lanemon.config import ConfigError, LaneConfig, validate_url

EXIT_OK = 0
EXIT_FAIL = 1


def register(sub) -> None:
    p = sub.add_parser("check", help="smoke-test one lane: models, completions, streaming, usage, tools, logprobs",
                       description="Run the post-boot smoke test against a URL or a configured lane name. "
                                   "Exit 0 only if every required check passes.")
    p.add_argument("target", metavar="URL_OR_LANE", help="e.g. http://127.0.0.1:8001/v1, or a lane name from the config")
    p.add_argument("--json", action="store_true", help="print the result as one JSON object")
    p.add_argument("--model", help="model id to use (default: first of /v1/models)")
    add_lane_args(p)

    p.set_defaults(func=cmd_check)


def _resolve_target(args: argparse.Namespace) -> LaneConfig:
    target = args.target
    if "://" in target:
        try:
            url = validate_url(target, "URL")
        except ConfigError as exc:  # 'URL: url ...' said it twice
            raise UsageError(str(exc).replace("URL: url ", "", 1)) from None
        return LaneConfig("check", url, args.model)
    config = _load(args)
    for lane in config.lanes:
        if lane.name == target:
            if args.model:  # every other setting of the lane kept (its deadline, telemetry, cost, ...)
                lane = dataclasses.replace(lane, model=args.model)
            return lane
    names = ", ".join(lane.name for lane in config.lanes) or "none configured"
    raise UsageError(f"{target!r} is neither a URL nor a configured lane (lanes: {names})")


def cmd_check(args: argparse.Namespace) -> int:
    import asyncio

    import orjson

    from lanemon.workloads.check import run_check

    lane = _resolve_target(args)
    report = asyncio.run(run_check(lane))
    if args.json:
        from lanemon.results.common import to_json_obj
        from lanemon.untrusted import json_visible  # bidi and zero-width characters as \uXXXX

        sys.stdout.write(json_visible(orjson.dumps(to_json_obj(report), option=orjson.OPT_INDENT_2).decode()) + "\n")
    else:
        from rich.console import Console
        from rich.table import Table

        from lanemon.untrusted import rich_escape as esc  # server text: inert, and no markup of its own

        table = Table(title=f"lanemon check {esc(report.url)}" + (f" · {esc(report.model)}" if report.model else ""))
        table.add_column("check")
        table.add_column("result")
        table.add_column("required")
        table.add_column("detail", overflow="fold")
        for c in report.checks:
            mark = "[green]PASS[/]" if c.passed else ("[red]FAIL[/]" if c.required else "[yellow]no[/]")
            table.add_row(c.name, mark, "yes" if c.required else "no", esc(c.detail))
        console = Console()
        console.print(table)
        passed = sum(c.passed for c in report.checks)
        verdict = "[green]passed[/]" if report.passed else "[red]FAILED[/]"
        console.print(f"{passed}/{len(report.checks)} checks passed; required checks {verdict}")
    hint = v1_hint(str(report.url), [c.detail for c in report.checks if not c.passed])
    if hint:
        err(hint)
    return EXIT_OK if report.passed else EXIT_FAIL


def v1_hint(url: str, failures: list[str]) -> str | None:
    """``hint: ...`` when a URL without ``/v1`` got 404s: OpenAI-compatible servers serve ``/v1/...``."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if path.endswith("/v1") or "/v1/" in path + "/" or not any("404" in str(f) for f in failures):
        return None
    endpoint = next((e for e in ENDPOINT_PATHS if path.endswith(e)), None)
    if endpoint is not None:  # an endpoint's URL, not the API root: /metrics/v1 would be no better
        root = f"{parts.scheme}://{parts.netloc}{path[: -len(endpoint)]}/v1"
        return (f"hint: {url} is the server's {endpoint} endpoint, not its API root, and the server answered 404; "
                f"OpenAI-compatible servers serve /v1/models and /v1/chat/completions: try {root}")
    return (f"hint: {url} has no /v1, and the server answered 404; OpenAI-compatible servers serve /v1/models "
            f"and /v1/chat/completions: try {url.rstrip('/')}/v1")


ENDPOINT_PATHS = ("/metrics", "/health", "/models", "/chat/completions", "/completions")
"""Paths that name one endpoint of a server (a Prometheus scrape, a health check, ...), not its API root."""


