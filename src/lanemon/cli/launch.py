"""Opening the terminal UI for a command, optionally shared with read-only viewers (`--share`).

``add_ui_args`` adds the options every UI command takes; ``run_app`` opens the one App on a source,
or, with ``--share``, serves the session's events to viewers while it runs (docs/SHARE.md).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from lanemon.cli.common import UsageError, add_stall_arg, err
from lanemon.cli.common import positive_float as _positive
from lanemon.cli.common import err as _err
from lanemon.share.protocol import DEFAULT_HOST, BindAddress, ShareError, parse_port, parse_share_address

TOKEN_ENV = "LANEMON_SHARE_TOKEN"


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


def add_ui_args(p: argparse.ArgumentParser, record: bool = True, share: bool = True) -> None:
    p.add_argument("--theme", metavar="NAME", help="colour theme (files in themes/ or the config dir)")
    if share:
        add_share_args(p)
    if record:
        g = p.add_mutually_exclusive_group()
        g.add_argument("--record", type=Path, metavar="PATH", help="write the recording here (default: XDG data dir)")
        g.add_argument("--no-record", action="store_true", help="do not record this session")
        p.add_argument("--interval", type=_positive, metavar="S", help="seconds between probe requests per lane")
        add_stall_arg(p)


def run_app(source, theme: str | None, args: argparse.Namespace | None = None) -> int:
    if getattr(args, "share", None) is not None:  # --share / `lanemon share`: serve viewers meanwhile
        return run_app_shared(source, theme, args)
    try:
        from lanemon.ui.app import ThemeError, make_app
    except ImportError as exc:  # pragma: no cover - a broken install
        raise UsageError(f"the terminal UI is not available: {exc}") from None
    try:
        app = make_app(source, theme=theme)
    except ThemeError as exc:
        raise UsageError(str(exc)) from None
    app.run()
    for warning in getattr(app, "theme_warnings", []):
        _err(f"warning: {warning}")
    return app.return_code or 0


def lane_secrets(source: Any) -> list[str]:
    """Values that must never leave this machine (lane keys, header values, URL credentials and
    sensitive query values): a second guard (untrusted.lane_secrets)."""
    from lanemon.untrusted import lane_secrets as secrets

    return secrets(getattr(source, "lane_configs", None) or [])


def run_app_shared(source: Any, theme: str | None, args: argparse.Namespace) -> int:
    """Open the dashboard on ``source`` and serve it to viewers at ``args.share`` meanwhile."""
    import asyncio

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
    app.share = publisher  # the status bar says it is shared, to how many; `s` shows how to attach

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


def run_screen(source: Any = None, *, theme: str | None = None, **kw: Any) -> int:
    """Run the app until the user quits (the CLI's bench, gauntlet and compare --tui).

    Returns 0, or 1 when the source failed (said on stderr); an unknown theme raises
    ``UsageError`` (exit 2); theme warnings go to stderr after the screen closes.
    """
    from lanemon.ui.app import ThemeError, make_app

    try:
        app = make_app(source, theme=theme, **kw)
    except ThemeError as exc:
        raise UsageError(str(exc)) from None
    app.run()
    for warning in app.theme_warnings:
        err(f"warning: {warning}")
    if app.source_error is not None:
        err(f"{app.source.mode if app.source.mode == 'bench' else 'run'} failed: {app.source_error}")
        return 1
    return app.return_code or 0
