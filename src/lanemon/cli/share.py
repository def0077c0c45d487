"""`lanemon share` / `lanemon attach`, and the `--share [HOST:]PORT` option of live, demo and replay.

``share`` is ``live`` (or ``--demo``) with the publisher on; ``attach`` opens the
same dashboard over a :class:`~lanemon.share.client.RemoteSource`, read-only.
Bad input (a bad URL, a port in use, a non-loopback host without
``--share-any-host``) exits 2; a refused or unreachable share exits 1.
Textual is imported only when the UI opens.  See docs/SHARE.md.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from lanemon.cli import live
from lanemon.cli.common import EXIT_FAIL, UsageError, add_lane_args, err, positive_float
from lanemon.cli.launch import TOKEN_ENV, _port, add_share_args, add_ui_args
from lanemon.share.protocol import DEFAULT_HOST, DEFAULT_PORT, BindAddress, ShareError


# ---------------------------------------------------------------- arguments
def register(sub: argparse._SubParsersAction) -> None:
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
    add_ui_args(p, share=False)
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
    args.share = BindAddress(args.host, args.port)
    return live.cmd_demo(args) if args.demo else live.cmd_live(args)


# ---------------------------------------------------------------- attach
def cmd_attach(args: argparse.Namespace) -> int:
    import asyncio

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
