"""The doors of `lanemon web` (issue 24, item 2): who may open a session, and how many.

textual-serve starts a copy of the served command for every websocket to ``/ws``, from any web page
(no ``Origin`` check), under any ``Host`` (DNS rebinding), without limit and without a login.
:class:`GuardedServer` is textual-serve's ``Server`` with one aiohttp middleware in front of every
route, which refuses before any session starts:

* a ``Host`` that is not an address this server serves (403): the bind address, and for loopback
  ``localhost``; for a wildcard bind any IP literal, ``localhost`` and this machine's names;
* an ``Origin`` that is not ``http://`` one of those hosts on this port (403); ``/ws`` needs one
  (browsers always send it);
* a request without the session token (403) -- ``?token=`` in the URL, as notebook servers do,
  which sets an HttpOnly, SameSite=Strict cookie for the page's own requests (static files excepted;
  ``--no-token`` turns this off);
* a websocket over ``max_sessions`` open ones (503, "N sessions open already").

Inside a session, a browser's messages are bounded: 64 KiB per websocket message (aiohttp's ``max_msg_size``:
a larger frame, or a compressed one that inflates past it, closes the socket with 1009 unbuffered), terminal sizes
clamped to :data:`MAX_COLUMNS` x :data:`MAX_ROWS`, anything that is not a known message ignored.
Each refusal is one plain-text line for the browser, and one log line.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from aiohttp import WSMsgType, web
from textual_serve.server import Server

from lanemon.host_guard import HostNames, is_ip, parse_host

log = logging.getLogger("lanemon.web")

MAX_SESSIONS = 4
"""Browser tabs (each runs its own lanemon process) at once, by default."""
MAX_MESSAGE = 64 * 1024
"""Bytes of one websocket message from a browser."""
MAX_COLUMNS, MAX_ROWS = 1000, 500
"""The largest terminal a browser may ask for (a huge one would make every child allocate it)."""
TOKEN_PARAM = "token"


_hostname = parse_host  # the Host rule is lanemon/host_guard.py's, shared with the exporter
_is_ip = is_ip


class Doors(HostNames):
    """The host, origin, token and session rules of one server (pure apart from the machine's names)."""

    def __init__(self, host: str, port: int, token: str | None, max_sessions: int = MAX_SESSIONS) -> None:
        super().__init__(host, port)
        self.token = token
        self.max_sessions = max_sessions
        self.sessions = 0
        self.cookie = f"lanemon_web_{port}"

    def origin_ok(self, value: str) -> bool:
        scheme, sep, rest = value.partition("://")
        return bool(sep) and scheme.lower() == "http" and self.host_ok(rest)

    def token_ok(self, request: web.Request) -> tuple[bool, bool]:
        """(allowed, came in the URL)."""
        if self.token is None:
            return True, False
        given = request.query.get(TOKEN_PARAM)
        if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            return True, True
        cookie = request.cookies.get(self.cookie)
        return cookie is not None and hmac.compare_digest(cookie.encode(), self.token.encode()), False

    def refusal(self, request: web.Request) -> tuple[int, str] | None:
        """Why ``request`` may not go on (HTTP status, one line), or None."""
        host = request.headers.get("Host")
        if not self.host_ok(host):
            return 403, f"lanemon web: Host {(host or '(none)')[:80]!r} is not an address this server serves"
        origin = request.headers.get("Origin")
        ws = request.path == "/ws"
        if origin is not None and not self.origin_ok(origin):
            return 403, f"lanemon web: pages from {origin[:80]!r} may not use this server"
        if ws and origin is None:
            return 403, "lanemon web: a session must come from this server's own page (no Origin)"
        if request.path.startswith("/static/"):
            return None
        if not self.token_ok(request)[0]:
            return 403, ("lanemon web: this server needs its token: open the URL `lanemon web` printed "
                         "(http://HOST:PORT/?token=...)")
        if ws and self.sessions >= self.max_sessions:
            return 503, (f"lanemon web: {self.sessions} sessions open already (at most {self.max_sessions}: "
                         "--max-sessions); close a tab and reload")
        return None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        refused = self.refusal(request)
        if refused is not None:
            status, text = refused
            log.warning("refused %s %s from %s: %s", request.method, request.path[:80], request.remote, text)
            return web.Response(status=status, text=text + "\n")
        if request.path != "/ws":
            response = await handler(request)
            if self.token is not None and self.token_ok(request)[1]:
                response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path="/")
            return response
        query = request.rel_url.query
        size = {"width": _clamp(query.get("width"), 80, MAX_COLUMNS), "height": _clamp(query.get("height"), 24, MAX_ROWS)}
        request = request.clone(rel_url=request.rel_url.update_query(size))
        self.sessions += 1
        try:
            return await handler(request)
        finally:
            self.sessions -= 1


def _clamp(value: Any, default: int, most: int) -> int:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return default
    return max(1, min(most, n))


class TokenFilter(logging.Filter):
    """Rewrites a log record's text with the session token (and any ``token=`` query value) redacted."""

    def __init__(self, token: str | None) -> None:
        super().__init__()
        from lanemon.untrusted import Redactor

        self.redactor = Redactor([token] if token else [])

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        clean = self.redactor(text)
        if clean != text:
            record.msg, record.args = clean, ()
        return True


class GuardedServer(Server):
    """textual-serve's Server behind :class:`Doors` (module docstring)."""

    def __init__(self, command: str, *, doors: Doors, **kw: Any) -> None:
        super().__init__(command, **kw)
        self.doors = doors

    def serve(self, debug: bool = False) -> None:
        """textual-serve's server, its access log without the session token (aiohttp logs every request
        line and ``Referer``: the page and each of its static files carry ``?token=``)."""
        logging.getLogger("aiohttp.access").addFilter(TokenFilter(self.doors.token))
        super().serve(debug)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.doors.middleware)
        return app

    async def handle_index(self, request: web.Request) -> web.StreamResponse:
        """The page, its websocket and static URLs on the host the browser asked for (validated by the
        doors): opened as ``localhost`` its socket goes to ``localhost`` too, where its token cookie is
        (textual-serve writes the bind address, which on a wildcard bind no browser can reach)."""
        saved = self.public_url
        self.public_url = f"http://{request.host}"
        try:  # textual-serve reads public_url before its first await: no other request sees this one's
            return await super().handle_index(request)
        finally:
            self.public_url = saved

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: lanemon printed the URL to open, with its token (textual-serve's banner has none)."""

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """textual-serve's websocket handler with the message size capped where the socket reads it
        (``max_msg_size``): a frame that says it is larger than :data:`MAX_MESSAGE`, or a compressed message
        that inflates past it, closes the socket with 1009 before its bytes are buffered (aiohttp's default
        buffers up to 4 MiB, which :meth:`_process_messages` then ignored)."""
        import asyncio

        from textual_serve.app_service import AppService
        from textual_serve.server import to_int

        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        app_service: Any = None
        try:
            await websocket.prepare(request)
            app_service = AppService(self.command, write_bytes=websocket.send_bytes, write_str=websocket.send_str,
                                     close=websocket.close, download_manager=self.download_manager,
                                     debug=self.debug)
            await app_service.start(width, height)
            try:
                await self._process_messages(websocket, app_service)
            finally:
                await app_service.stop()
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # as textual-serve: one session's failure is logged, the server goes on
            log.warning("session ended: %s", error)
        finally:
            if app_service is not None:
                await app_service.stop()
        return websocket

    async def _process_messages(self, websocket: web.WebSocketResponse, app_service: Any) -> None:
        """textual-serve's message loop with every message bounded and checked (module docstring)."""
        import orjson

        async for message in websocket:
            if message.type != WSMsgType.TEXT or len(message.data) > MAX_MESSAGE:
                continue
            try:
                envelope = orjson.loads(message.data)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(envelope, list) or not envelope or not isinstance(envelope[0], str):
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await app_service.send_bytes(data.encode("utf-8"))
            elif kind == "resize" and isinstance(data, dict):
                await app_service.set_terminal_size(_clamp(data.get("width"), 80, MAX_COLUMNS),
                                                    _clamp(data.get("height"), 24, MAX_ROWS))
            elif kind == "ping" and isinstance(data, (str, int, float)):
                await websocket.send_json(["pong", data if not isinstance(data, str) else data[:256]])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()
