"""The exporter's HTTP server: ``GET /metrics`` served off the measuring loop, from a cache (docs/MONITOR.md).

Serving metrics must never cost the measurement (issue 39, rows 16-17):

* the server runs **on its own thread and event loop**; the measuring loop only renders the exposition, **at
  most once per** :data:`RENDER_EVERY_S` (a scrape within that time gets the cached bytes; concurrent scrapes
  share one render), so 200 scrapers cost the probes what one does;
* a connection must send its whole request head (at most :data:`MAX_REQUEST_HEAD` bytes) within
  :data:`HEAD_DEADLINE_S`; at most :data:`MAX_CONNECTIONS` are open at once, and when a new one comes at the
  cap the **oldest one still sending its head is dropped** for it: slow connections cannot lock scrapers out;
* a ``Host`` that is not one of the server's own names is refused with 403 (DNS rebinding:
  lanemon/host_guard.py, the rule `lanemon web` uses);
* ``GET``/``HEAD`` of ``/metrics`` (and ``/``) only; one answer per connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable

from lanemon.host_guard import HostNames, is_loopback, is_wildcard

MAX_REQUEST_HEAD = 8192
HEAD_DEADLINE_S = 2.0
"""Seconds a connection has to send its request head (Prometheus sends it at once)."""
WRITE_DEADLINE_S = 5.0
MAX_CONNECTIONS = 64
RENDER_EVERY_S = 1.0
"""The exposition is rendered at most this often; scrapes in between get the cached bytes."""
RENDER_WAIT_S = 5.0
"""How long a scrape waits for the measuring loop to render (beyond: the cached bytes, or 503)."""
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""Prometheus text exposition format 0.0.4 (what prometheus_client's ``generate_latest`` writes)."""


def exposure_warning(host: str, port: int | str, flag: str = "--serve-metrics") -> str | None:
    """A loud line when the exporter is reachable from other machines (None on loopback)."""
    if is_loopback(host):
        return None
    where = "every network interface" if is_wildcard(host) else f"{host}, reachable from the network"
    return (f"WARNING: {flag} {host}:{port} binds {where}: anyone who can reach this machine can read the lanes' "
            "names, models and figures (no login); bind 127.0.0.1 unless it must be scraped from elsewhere")


class ExporterServer:
    """``GET /metrics`` over plain HTTP/1.1 on its own thread; ``render`` runs on the loop that called
    :meth:`start` (the measuring loop), at most once per :data:`RENDER_EVERY_S`."""

    def __init__(self, host: str, port: int, render: Callable[[], bytes], *,
                 render_every_s: float = RENDER_EVERY_S) -> None:
        self.host, self.port = host, port
        self.render = render
        self.render_every_s = render_every_s
        self.scrapes = 0
        self.renders = 0
        self.refused_hosts = 0
        self.evicted = 0
        self.names: HostNames | None = None
        self._owner: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._stopped: asyncio.Event | None = None
        self._cache: bytes | None = None
        self._cache_t = 0.0
        self._pending: asyncio.Future[bytes] | None = None
        self._conns: dict[asyncio.Task, bool] = {}
        """Open connections' handlers (insertion order: oldest first) -> still reading their head."""

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    # -- lifecycle (called on the owner loop) --------------------------------------------------------
    async def start(self) -> None:
        """Bind (OSError if it cannot) and serve on a daemon thread."""
        self._owner = asyncio.get_running_loop()
        ready: concurrent.futures.Future[int] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._main, args=(ready,), name="lanemon-exporter", daemon=True)
        self._thread.start()
        self.port = await asyncio.wrap_future(ready)
        self.names = HostNames(self.host, self.port)

    async def close(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None and self._stopped is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._stopped.set)
        if thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, thread.join, 3.0)
        self._thread = None

    # -- the server thread ---------------------------------------------------------------------------
    def _main(self, ready: concurrent.futures.Future[int]) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(ready))
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _serve(self, ready: concurrent.futures.Future[int]) -> None:
        self._stopped = asyncio.Event()
        try:
            self._server = await asyncio.start_server(self._handle, self.host, self.port, limit=MAX_REQUEST_HEAD,
                                                      reuse_address=True)
        except BaseException as exc:
            ready.set_exception(exc)
            return
        ready.set_result(self._server.sockets[0].getsockname()[1])
        await self._stopped.wait()
        self._server.close()
        open_now = list(self._conns)
        for task in open_now:
            task.cancel()
        if open_now:
            await asyncio.wait(open_now, timeout=2.0)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2.0)

    def _admit(self, task: asyncio.Task) -> bool:
        if len(self._conns) >= MAX_CONNECTIONS:
            slow = next((t for t, reading in self._conns.items() if reading), None)
            if slow is None:
                return False
            self._conns.pop(slow, None)
            slow.cancel()  # the oldest one still dripping its head makes room
            self.evicted += 1
        self._conns[task] = True
        return True

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        if not self._admit(task):
            writer.close()
            return
        try:
            status, ctype, body = await self._answer(reader, task)
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\nCache-Control: no-store\r\n\r\n").encode("ascii")
            writer.write(head + body)
            await asyncio.wait_for(writer.drain(), WRITE_DEADLINE_S)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError,
                asyncio.CancelledError):
            pass
        finally:
            self._conns.pop(task, None)
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(writer.wait_closed(), 1.0)

    async def _answer(self, reader: asyncio.StreamReader, task: asyncio.Task) -> tuple[str, str, bytes]:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_DEADLINE_S)
        except asyncio.LimitOverrunError:
            return "431 Request Header Fields Too Large", "text/plain", b"request head too large\n"
        self._conns[task] = False  # the head is in: no longer a candidate for eviction
        lines = head.split(b"\r\n")
        parts = lines[0].decode("latin-1").split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return "400 Bad Request", "text/plain", b"bad request\n"
        hosts = [ln.split(b":", 1)[1].strip().decode("latin-1") for ln in lines[1:]
                 if ln[:5].lower() == b"host:"]
        if len(hosts) != 1 or self.names is None or not self.names.host_ok(hosts[0]):
            self.refused_hosts += 1
            return "403 Forbidden", "text/plain", b"Host is not an address this exporter serves\n"
        method, target = parts[0], parts[1].split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"only GET\n"
        if target == "/metrics":
            self.scrapes += 1
            body = await self._body()
            if body is None:
                return "503 Service Unavailable", "text/plain", b"metrics not rendered in time\n"
            return "200 OK", CONTENT_TYPE, b"" if method == "HEAD" else body
        if target == "/":
            return "200 OK", "text/plain; charset=utf-8", b"lanemon exporter: GET /metrics\n"
        return "404 Not Found", "text/plain", b"not found: GET /metrics\n"

    async def _body(self) -> bytes | None:
        """The cached exposition, rendered anew on the owner loop when older than ``render_every_s``
        (one render at a time, shared by every scrape waiting for it)."""
        if self._cache is not None and time.monotonic() - self._cache_t < self.render_every_s:
            return self._cache
        if self._pending is None:
            done: concurrent.futures.Future[bytes] = concurrent.futures.Future()

            def job() -> None:
                if done.set_running_or_notify_cancel():
                    self.renders += 1
                    try:
                        done.set_result(self.render())
                    except BaseException as exc:  # handed to the scrape, never raised on the measuring loop
                        done.set_exception(exc)

            try:
                assert self._owner is not None
                self._owner.call_soon_threadsafe(job)
            except RuntimeError:  # the measuring loop has closed
                return self._cache
            self._pending = asyncio.wrap_future(done)
        pending = self._pending
        try:
            body = await asyncio.wait_for(asyncio.shield(pending), RENDER_WAIT_S)
        except Exception:
            return self._cache
        finally:
            if pending.done() and self._pending is pending:
                self._pending = None
        if self._cache is not body:
            self._cache, self._cache_t = body, time.monotonic()
        return body
