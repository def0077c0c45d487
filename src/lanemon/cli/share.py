"""`lanemon share` / `lanemon attach`, and the `--share [HOST:]PORT` option of live, demo and replay.

``share`` is ``live`` (or ``--demo``) with the publisher on; ``attach`` opens the
same dashboard over a :class:`~lanemon.share.client.RemoteSource`, read-only.
Bad input (a bad URL, a port in use, a non-loopback host without
``--share-any-host``) exits 2; a refused or unreachable share exits 1.
Textual is imported only when the UI opens.  See docs/SHARE.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from lanemon.cli.common import UsageError, add_lane_args, err, positive_float
from lanemon.share.protocol import DEFAULT_HOST, DEFAULT_PORT, BindAddress, ShareError, parse_port, parse_share_address

EXIT_OK, EXIT_FAIL = 0, 1
TOKEN_ENV = "LANEMON_SHARE_TOKEN"


# ---------------------------------------------------------------- arguments
def share_address(text: str) -> BindAddress:
    """argparse type for ``--share [HOST:]PORT``."""
    try:
        return parse_share_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _port(text: str) -> int:
    try:
        return parse_port(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_share_args(p: argparse.ArgumentParser, *, option: bool = True) -> None:
    """``--share [HOST:]PORT`` (when ``option``) and ``--share-any-host``."""
    if option:
        p.add_argument("--share", type=share_address, metavar="[HOST:]PORT",
                       help="also serve this session to read-only viewers (`lanemon attach`) on this port; "
                            f"HOST defaults to {DEFAULT_HOST}")
    p.add_argument("--share-any-host", action="store_true",
                   help="allow sharing on a non-loopback address (reachable from other machines; not encrypted)")


def register(sub: argparse._SubParsersAction) -> None:
    from lanemon.cli.main import _add_ui_args

    p = sub.add_parser(
        "share", help="live dashboard, shared with read-only viewers over a websocket",
        description="Run `lanemon live` (or the demo with --demo) and serve its event stream to read-only "
                    "viewers: `lanemon attach ws://HOST:PORT --token T` on another terminal shows the same "
                    "dashboard. Loopback only unless --share-any-host; a fresh token is printed at start. "
                    "See docs/SHARE.md.",
    )
    p.add_argument("--port", type=_port, default=DEFAULT_PORT,
                   help=f"TCP port (0 picks a free one; default {DEFAULT_PORT})")
    p.add_argument("--host", default=DEFAULT_HOST, help=f"bind address (default {DEFAULT_HOST})")
    add_share_args(p, option=False)
    p.add_argument("--demo", action="store_true", help="share the demo (two simulated lanes) instead of your lanes")
    p.add_argument("--time-scale", type=positive_float, default=1.0, metavar="X",
                   help="with --demo: simulated durations are multiplied by X")
    add_lane_args(p)
    _add_ui_args(p, share=False)
    p.set_defaults(func=cmd_share)

    p = sub.add_parser(
        "attach", help="watch a shared session (read-only)",
        description="Open the dashboard on a session someone shares with `lanemon share` (or --share). "
                    "Read-only: p/space pauses only your display.",
    )
    p.add_argument("url", metavar="ws://HOST:PORT", help="the share's address, as printed by the publisher")
    p.add_argument("--token", metavar="T", help=f"the share's token (default: ${TOKEN_ENV})")
    p.add_argument("--theme", metavar="NAME", help="colour theme")
    p.set_defaults(func=cmd_attach)


# ---------------------------------------------------------------- share
def cmd_share(args: argparse.Namespace) -> int:
    from lanemon.cli import main as cli

    args.share = BindAddress(args.host, args.port)
    return cli.cmd_demo(args) if args.demo else cli.cmd_live(args)


def lane_secrets(source: Any) -> list[str]:
    """Values that must never leave this machine (lane keys, header values): a second guard."""
    from urllib.parse import urlsplit

    out: list[str] = []
    for lane in getattr(source, "lane_configs", None) or []:
        key = lane.api_key()
        if key:
            out.append(key)
        out.extend(v for v in (lane.headers or {}).values() if isinstance(v, str))
        try:
            password = urlsplit(lane.url).password  # error messages quote the URL
        except ValueError:
            password = None
        if password:
            out.append(password)
    return out


def run_app_shared(source: Any, theme: str | None, args: argparse.Namespace) -> int:
    """Open the dashboard on ``source`` and serve it to viewers at ``args.share`` meanwhile."""
    from lanemon.share.server import Publisher
    from lanemon.ui.app import ThemeError, make_app

    addr: BindAddress = args.share
    any_host = bool(getattr(args, "share_any_host", False))
    publisher = Publisher(source, host=addr.host, port=addr.port, allow_any_host=any_host, redact=lane_secrets(source))
    try:
        sock = publisher.bind()
    except ShareError as exc:
        raise UsageError(str(exc)) from None
    try:
        app = make_app(source, theme=theme)
    except ThemeError as exc:
        sock.close()
        raise UsageError(str(exc)) from None
    if not addr.loopback:
        err(f"warning: sharing on {addr.host}:{publisher.port}, reachable from other machines; ws:// is not "
            "encrypted, so anyone on the path can read the token and the events (prefer the loopback default "
            "and an SSH tunnel)")
    print(f"lanemon: sharing this {getattr(source, 'mode', 'live')} session read-only on {publisher.url}; "
          "viewers attach with:", file=sys.stderr)
    print(f"  {publisher.attach_command}", file=sys.stderr, flush=True)

    def notice(level: str, message: str) -> None:
        if app.is_running:
            app.notify(message, severity=level, timeout=6, markup=False)  # type: ignore[arg-type]

    publisher.on_notice = notice

    async def announce() -> None:
        while not app.is_running:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        app.notify(f"viewers attach with:\n{publisher.attach_command}", title=f"sharing on {publisher.url}",
                   timeout=30, markup=False)

    async def main() -> None:
        await publisher.start()
        task = asyncio.create_task(announce())
        try:
            await app.run_async()
        finally:
            task.cancel()
            await publisher.close()

    asyncio.run(main())
    for warning in getattr(app, "theme_warnings", []):
        err(f"warning: {warning}")
    s = publisher.stats
    print(f"lanemon: share ended: {s['viewers']} viewer(s) joined, {s['refused']} refused, "
          f"{s['dropped_slow']} dropped as too slow, {s['ignored']} viewer message(s) ignored", file=sys.stderr)
    return app.return_code or 0


# ---------------------------------------------------------------- attach
def cmd_attach(args: argparse.Namespace) -> int:
    from lanemon.share.client import RemoteSource
    from lanemon.ui.themes import ThemeError, load_themes, resolve_theme

    token = args.token or os.environ.get(TOKEN_ENV)
    if not token:
        raise UsageError(f"attach needs the share's token: --token T (printed by the publisher) or ${TOKEN_ENV}")
    try:
        source = RemoteSource(args.url, token)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        resolve_theme(args.theme, load_themes())
    except ThemeError as exc:
        raise UsageError(str(exc)) from None

    async def main() -> Any:
        from lanemon.ui.app import make_app

        try:
            await source.connect()
        except ShareError as exc:
            return exc
        app = make_app(source, theme=args.theme)
        await app.run_async()
        return app

    result = asyncio.run(main())
    if isinstance(result, ShareError):
        err(str(result))
        return EXIT_FAIL
    for warning in getattr(result, "theme_warnings", []):
        err(f"warning: {warning}")
    if source.error:
        err(f"share ended: {source.error}")
    return result.return_code or 0
