"""The share publisher: serves a source's event stream to read-only websocket viewers.

A :class:`Publisher` subscribes to a source's bus (live, demo or replay) and
keeps every event, encoded once, in a bounded in-memory log.  A viewer that
presents the session token first receives a snapshot (the header and the log so
far), then the live events, batched every ``flush_interval`` seconds.

Publishing never waits for a viewer: the bus subscriber only encodes and
appends; a flusher task hands batches to each viewer's bounded queue, and one
task per viewer writes them to its socket.  A viewer whose queue overflows is
dropped (close 4408), never waited for.  The subscriber may run on another thread than the
publisher's loop (a measuring source runs on its own, sessions/runner.py): the log, the pending batch and
the join of a new viewer are kept consistent by one lock.  Viewers cannot act on the session:
everything they send after the hello is read, counted and ignored.

Viewer slots belong to viewers (issue 24): a connection holds one of ``max_viewers`` only once its hello
carried the token.  It has ``hello_timeout`` from its handshake (which itself must end within that
time) to say hello.  A viewer says it at once; a connection still silent after a short grace
(``P.HELLO_GRACE_S``) joins a small pre-authentication budget (``max_pending`` in all,
``max_pending_per_address`` per address), and one more silent connection closes the *oldest* of its
address (or of the address holding the most): silent sockets reopened in a loop cannot keep out a
viewer, whose hello never waits on the budget.
Refused connections are counted (``stats``) and summed up on the publisher's screen at most once per
``P.REFUSAL_NOTICE_S``, never one notice each.

What travels: the header (lanemon version, mode, each lane's name, URL without
credentials or query, model) and :class:`~lanemon.events.Event` objects
-- the very lines a recording holds.  Lane API keys and headers live only in
:class:`~lanemon.config.LaneConfig` and never enter an event; as a second
guard, any value passed in ``redact`` is replaced by ``[redacted]`` wherever it
would appear in a message, and every event that carries server text (and the header)
passes :class:`lanemon.untrusted.Redactor` again: URL userinfo, sensitive query
parameters, bearer values and key shapes are removed even from text that did not
come through the client.  No Textual here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
import socket
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec
import orjson
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed

from lanemon import __version__
from lanemon import events as schema
from lanemon.events import Event
from lanemon.results.requests import note_data
from lanemon.share import protocol as P
from lanemon.untrusted import Redactor

log = logging.getLogger("lanemon.share")
_ws_log = logging.getLogger("lanemon.share.websockets")
_ws_log.addHandler(logging.NullHandler())
_ws_log.propagate = False  # handshake noise (port scanners, browsers) must not scribble over the TUI

REDACTED = b"[redacted]"
EVENTS_PREFIX = {True: b'{"type":"events","snapshot":true,"events":[',
                 False: b'{"type":"events","snapshot":false,"events":['}
EVENTS_SUFFIX = b"]}"
LIVE_MESSAGE = b'{"type":"live"}'
SERVER_TEXT_KINDS = frozenset({schema.PROBE, schema.LANE, schema.FIRST_BYTE, schema.DONE, schema.ERROR,
                               schema.SERVER_METRICS, schema.GPU})
"""Event kinds whose data carries server text: redacted again here (the client cleaned it already)."""
LONG_STRING = 4096  # an oversized event keeps this much of each long string field

Notice = Callable[[str, str], None]
"""``(level, message)``: a viewer joined, was refused or dropped (for the publisher's own UI)."""


class _Viewer:
    __slots__ = ("ws", "peer", "queue", "queued_bytes", "wake", "closed", "gone", "ignored", "sent_messages")

    def __init__(self, ws: ServerConnection) -> None:
        self.ws = ws
        self.peer = _peer(ws)
        self.gone = False
        """The viewer closed its side (its reader ended)."""
        self.queue: deque[bytes] = deque()
        self.queued_bytes = 0
        self.wake = asyncio.Event()
        self.closed = False
        self.ignored = 0
        self.sent_messages = 0


class Publisher:
    """Serve ``source.bus`` to viewers; see the module docstring and docs/SHARE.md.

    ``source`` needs ``bus``, ``lanes`` (public lane dicts) and ``mode``.  The
    publisher subscribes at construction, so events published before
    :meth:`start` are in the snapshot too.  Use ``async with publisher:`` or
    :meth:`start` / :meth:`close` inside the event loop that runs the source.
    """

    def __init__(
        self,
        source: Any,
        *,
        host: str = P.DEFAULT_HOST,
        port: int = P.DEFAULT_PORT,
        sock: socket.socket | None = None,
        token: str | None = None,
        allow_any_host: bool = False,
        redact: Iterable[str] = (),
        max_viewers: int = P.MAX_VIEWERS,
        max_log_events: int = 500_000,
        max_log_bytes: int = 96 << 20,
        max_message: int = P.MAX_MESSAGE,
        flush_interval: float = 0.05,
        queue_messages: int = 256,
        queue_bytes: int = 16 << 20,
        hello_timeout: float = P.HELLO_TIMEOUT_S,
        max_pending: int = P.MAX_PENDING,
        max_pending_per_address: int = P.MAX_PENDING_PER_ADDRESS,
        refusal_notice_s: float = P.REFUSAL_NOTICE_S,
        max_ignored: int = 10_000,
        close_timeout: float = 2.0,
        on_notice: Notice | None = None,
    ) -> None:
        if max_message < 1024:
            raise ValueError("max_message must be at least 1024 bytes")
        self.source = source
        self.host = host
        self.port = port
        self.allow_any_host = allow_any_host
        self.token = token or secrets.token_urlsafe(24)
        self.max_viewers = max_viewers
        self.max_log_events = max_log_events
        self.max_log_bytes = max_log_bytes
        self.max_message = max_message
        self.max_event = max_message - len(EVENTS_PREFIX[False]) - len(EVENTS_SUFFIX) - 16
        self.flush_interval = flush_interval
        self.queue_messages = queue_messages
        self.queue_bytes = queue_bytes
        self.hello_timeout = hello_timeout
        self.max_pending = max(1, max_pending)
        self.max_pending_per_address = max(1, max_pending_per_address)
        self.refusal_notice_s = refusal_notice_s
        self.max_ignored = max_ignored
        self.close_timeout = close_timeout
        self.on_notice = on_notice
        redact = list(redact)
        self._redact = self._redact_patterns(redact)
        self._redactor = Redactor(redact)
        self._sock = sock
        self._server: Server | None = None
        self._flusher: asyncio.Task | None = None
        self._tasks: set[asyncio.Task] = set()
        self._log: deque[bytes] = deque()
        self._log_bytes = 0
        self._pending: list[bytes] = []
        self._lock = threading.Lock()  # _log, _pending and the viewers' joining, across the bus's thread
        self._viewers: set[_Viewer] = set()
        self._unauthed: dict[ServerConnection, str] = {}  # waiting for their hello, oldest first -> address
        self._evicted: set[ServerConnection] = set()
        self._refusals: dict[str, int] = {}  # since the last summary notice
        self._last_refused_peer = ""
        self._last_summary = float("-inf")
        self._closing = False
        self.dropped_events = 0
        """Events evicted from the log (older than the last ``max_log_events``)."""
        self.stats: dict[str, int] = dict.fromkeys(
            ("events", "viewers", "refused", "bad_token", "no_hello", "evicted", "busy", "dropped_slow",
             "dropped_chatty", "ignored", "messages_sent", "redacted", "truncated"), 0)
        """``refused``: connections refused before they joined (``bad_token`` + ``no_hello``, of which
        ``evicted`` were closed to make room for a newer one); ``busy``: viewers with the token refused
        because ``max_viewers`` were watching."""
        self._unsubscribe = source.bus.subscribe(self._on_event)

    # -- addresses -------------------------------------------------------------

    def bind(self) -> socket.socket:
        """Bind the listening socket now (before the UI opens); ShareError with one line on failure."""
        if self._sock is None:
            self._sock = P.bind_socket(self.host, self.port, allow_any_host=self.allow_any_host)
        self.port = self._sock.getsockname()[1]
        return self._sock

    @property
    def url(self) -> str:
        host = self.host
        if host in ("0.0.0.0", "::", ""):
            host = socket.gethostname()
        elif ":" in host:
            host = f"[{host}]"
        return f"ws://{host}:{self.port}"

    @property
    def attach_command(self) -> str:
        return f"lanemon attach {self.url} --token {self.token}"

    @property
    def viewers(self) -> int:
        return len(self._viewers)

    # -- lifecycle -------------------------------------------------------------

    async def start(self) -> None:
        sock = self.bind()
        self._server = await serve(
            self._handle, sock=sock, max_size=P.MAX_INCOMING, max_queue=4, compression=None,
            close_timeout=self.close_timeout, ping_interval=20, ping_timeout=20, logger=_ws_log,
            server_header=None, open_timeout=self.hello_timeout,  # a handshake that dawdles is closed
        )
        self._flusher = asyncio.create_task(self._flush_loop(), name="lanemon-share-flush")

    async def close(self) -> None:
        """Stop accepting, flush what is pending, close every viewer (1001) and stop listening."""
        if self._closing:
            return
        self._closing = True
        self._unsubscribe()
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
        self._flush()
        # let the viewers' writers drain what they hold (briefly), then close them all
        deadline = asyncio.get_running_loop().time() + 0.5
        while any(v.queue for v in self._viewers) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        for viewer in list(self._viewers):
            self._drop(viewer, P.CLOSE_GOING_AWAY, P.REASON_STOPPED, notice=False)
        if self._server is not None:
            self._server.close(close_connections=False)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=self.close_timeout + 1)
        if self._server is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), self.close_timeout + 1)
            for conn in list(self._server.connections):
                conn.transport.abort()
        elif self._sock is not None:
            self._sock.close()

    async def __aenter__(self) -> "Publisher":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the bus side: encode once, never wait ----------------------------------

    @staticmethod
    def _redact_patterns(values: Iterable[str]) -> list[tuple[bytes, ...]]:
        out = []
        for value in values:
            if isinstance(value, str) and len(value) >= 6:
                raw = value.encode()
                escaped = orjson.dumps(value)[1:-1]
                out.append((raw, escaped) if escaped != raw else (raw,))
        return out

    def _scrub(self, data: bytes) -> bytes:
        for patterns in self._redact:
            for pattern in patterns:
                if pattern in data:
                    data = data.replace(pattern, REDACTED)
                    self.stats["redacted"] += 1
        return data

    def encode(self, ev: Event) -> bytes:
        """One event as the JSON bytes viewers receive (public URL, redacted, under the size bound)."""
        obj = ev.to_json_obj()
        if ev.kind == schema.LANE and "url" in ev.data:
            obj["data"] = {**ev.data, "url": P.public_url(ev.data["url"])}
        if ev.kind in SERVER_TEXT_KINDS and "data" in obj:  # the rest: exact secrets only (the bytes scrub below)
            cleaned = self._redactor.deep(obj["data"])
            if cleaned != obj["data"]:
                self.stats["redacted"] += 1
                obj["data"] = cleaned
        data = self._scrub(orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS))
        if len(data) > self.max_event:
            data = self._shrink(obj)
        return data

    def _shrink(self, obj: dict[str, Any]) -> bytes:
        self.stats["truncated"] += 1
        d = {k: (v[:LONG_STRING] if isinstance(v, str) else v) for k, v in (obj.get("data") or {}).items()}
        d["_truncated"] = True
        data = self._scrub(orjson.dumps({**obj, "data": d}, option=orjson.OPT_NON_STR_KEYS))
        if len(data) > self.max_event:
            data = self._scrub(orjson.dumps({**obj, "data": {"_truncated": True}}))
        return data

    def _on_event(self, ev: Event) -> None:
        try:
            data = self.encode(ev)
        except (TypeError, orjson.JSONEncodeError) as exc:  # an event that is not JSON: a NOTE instead
            data = orjson.dumps(Event(ev.t, schema.NOTE, ev.lane, ev.req,
                                      note_data(f"share: event not sent ({exc})", "warning")).to_json_obj())
        with self._lock:
            self.stats["events"] += 1
            self._log.append(data)
            self._log_bytes += len(data)
            while len(self._log) > self.max_log_events or (self._log_bytes > self.max_log_bytes and len(self._log) > 1):
                self._log_bytes -= len(self._log.popleft())
                self.dropped_events += 1
            if self._viewers:
                self._pending.append(data)

    # -- batching and fan-out ---------------------------------------------------

    def batches(self, items: Iterable[bytes], snapshot: bool) -> Iterator[bytes]:
        """Events joined into ``events`` messages, each under ``max_message`` bytes."""
        prefix = EVENTS_PREFIX[snapshot]
        base = len(prefix) + len(EVENTS_SUFFIX)
        chunk: list[bytes] = []
        size = base
        for item in items:
            if chunk and size + len(item) + 1 > self.max_message:
                yield prefix + b",".join(chunk) + EVENTS_SUFFIX
                chunk, size = [], base
            chunk.append(item)
            size += len(item) + 1
        if chunk:
            yield prefix + b",".join(chunk) + EVENTS_SUFFIX

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval)
            self._flush()
            if self._refusals:
                self._summarise_refusals()

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        if not pending or not self._viewers:
            return
        messages = list(self.batches(pending, snapshot=False))
        for viewer in list(self._viewers):
            for msg in messages:
                if viewer.queue and (len(viewer.queue) >= self.queue_messages
                                     or viewer.queued_bytes + len(msg) > self.queue_bytes):
                    self._drop(viewer, P.CLOSE_TOO_SLOW, P.REASON_TOO_SLOW)
                    break
                viewer.queue.append(msg)
                viewer.queued_bytes += len(msg)
            viewer.wake.set()

    def _snapshot(self) -> list[bytes]:
        """The log without the events still pending a flush (those reach the new viewer by the flush)."""
        n = len(self._log) - len(self._pending)
        if n <= 0:
            return []
        if n == len(self._log):
            return list(self._log)
        out = list(self._log)
        del out[n:]
        return out

    def header(self, snapshot_events: int) -> bytes:
        lanes = self._redactor.deep(msgspec.to_builtins([P.public_lane(lane)
                                                          for lane in getattr(self.source, "lanes", [])]))
        return self._scrub(orjson.dumps({
            "type": "header", "protocol": P.PROTOCOL, "lanemon": __version__,
            "mode": str(getattr(self.source, "mode", "live")), "lanes": lanes,
            "snapshot_events": snapshot_events, "dropped_events": self.dropped_events,
        }))

    # -- one connection ---------------------------------------------------------

    def _notice(self, level: str, message: str) -> None:
        log.info("%s", message)
        if self.on_notice is not None:
            try:
                self.on_notice(level, message)
            except Exception:  # the UI may be gone; sharing goes on
                pass

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _close_conn(self, ws: ServerConnection, code: int, reason: str) -> None:
        """Close with ``code``; a peer that does not read cannot block us: abort after the timeout."""
        try:
            await asyncio.wait_for(ws.close(code, reason), self.close_timeout)
        except (asyncio.TimeoutError, OSError, ConnectionClosed):
            pass
        finally:
            if ws.transport is not None and not ws.transport.is_closing():
                ws.transport.abort()

    def _drop(self, viewer: _Viewer, code: int, reason: str, notice: bool = True) -> None:
        if viewer.closed:
            return
        viewer.closed = True
        viewer.queue.clear()
        viewer.queued_bytes = 0
        viewer.wake.set()
        self._viewers.discard(viewer)
        if code == P.CLOSE_TOO_SLOW:
            self.stats["dropped_slow"] += 1
        elif code == P.CLOSE_READ_ONLY:
            self.stats["dropped_chatty"] += 1
        if notice:
            self._notice("warning", f"share: viewer {viewer.peer} dropped: {reason} ({len(self._viewers)} watching)")
        self._spawn(self._close_conn(viewer.ws, code, reason))

    async def _hello(self, ws: ServerConnection) -> str | None:
        """None when the first message is a hello with the token; else why not (a ``stats`` key)."""
        grace = min(P.HELLO_GRACE_S, self.hello_timeout / 2)
        try:
            try:
                raw = await asyncio.wait_for(ws.recv(), grace)  # a viewer: never counted in the budget
            except asyncio.TimeoutError:
                self._admit(ws)  # silent so far: into the pre-authentication budget (may close the oldest)
                raw = await asyncio.wait_for(ws.recv(), self.hello_timeout - grace)  # recv() may be cancelled
        except (asyncio.TimeoutError, ConnectionClosed):
            return "no_hello"
        try:
            msg = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return "bad_token"
        good = isinstance(msg, dict) and msg.get("type") == "hello" and P.tokens_match(msg.get("token"), self.token)
        return None if good else "bad_token"

    # -- refusals: counted, summed up on screen ----------------------------------

    def _refused(self, kind: str, peer: str) -> None:
        """Count one refused connection (``kind``: a ``stats`` key) and say so, summed up (at most one
        notice per ``refusal_notice_s``)."""
        self.stats[kind] += 1
        if kind in ("bad_token", "no_hello"):
            self.stats["refused"] += 1
        self._refusals[kind] = self._refusals.get(kind, 0) + 1
        self._last_refused_peer = peer
        self._summarise_refusals()

    def _summarise_refusals(self) -> None:
        now = asyncio.get_running_loop().time()
        if not self._refusals or now - self._last_summary < self.refusal_notice_s:
            return
        counts, self._refusals = self._refusals, {}
        self._last_summary = now
        n = sum(v for k, v in counts.items() if k != "evicted")  # evicted ones are counted as no_hello too
        words = {"bad_token": "bad token", "no_hello": "no hello in time", "busy": "too many viewers"}
        detail = ", ".join(f"{words.get(k, k)}: {v}" for k, v in counts.items() if k != "evicted")
        if counts.get("evicted"):
            detail += f" ({counts['evicted']} closed to make room for newer connections)"
        what = f"a connection from {self._last_refused_peer}" if n == 1 else \
            f"{n} connections (the last from {self._last_refused_peer})"
        self._notice("warning", f"share: refused {what}: {detail}; {self.stats['refused'] + self.stats['busy']} "
                                "refused in all")

    # -- one connection ---------------------------------------------------------

    def _admit(self, ws: ServerConnection) -> None:
        """Put ``ws`` (silent past the grace) in the pre-authentication budget, closing the oldest silent
        connection of its address (or of the address holding the most) when the budget is full."""
        addr = _address(ws)
        mine = [c for c, a in self._unauthed.items() if a == addr]
        victim = None
        if len(mine) >= self.max_pending_per_address:
            victim = mine[0]
        elif len(self._unauthed) >= self.max_pending:
            per: dict[str, int] = {}
            for a in self._unauthed.values():
                per[a] = per.get(a, 0) + 1
            crowd = max(per, key=per.__getitem__)
            victim = next(c for c, a in self._unauthed.items() if a == crowd)
        if victim is not None:
            del self._unauthed[victim]
            self._evicted.add(victim)
            self._spawn(self._close_conn(victim, P.CLOSE_TRY_AGAIN, P.REASON_NO_HELLO))
        self._unauthed[ws] = addr

    async def _handle(self, ws: ServerConnection) -> None:
        if self._closing:
            await self._close_conn(ws, P.CLOSE_GOING_AWAY, P.REASON_STOPPED)
            return
        try:
            refused = await self._hello(ws)
        finally:
            self._unauthed.pop(ws, None)
        if ws in self._evicted:  # closed to make room (its close is under way)
            self._evicted.discard(ws)
            self.stats["evicted"] += 1
            self._refusals["evicted"] = self._refusals.get("evicted", 0) + 1
            self._refused("no_hello", _peer(ws))
            return
        if refused is not None:
            self._refused(refused, _peer(ws))
            await self._close_conn(ws, P.CLOSE_BAD_TOKEN, P.REASON_BAD_TOKEN)
            return
        if self._closing:
            await self._close_conn(ws, P.CLOSE_GOING_AWAY, P.REASON_STOPPED)
            return
        if len(self._viewers) >= self.max_viewers:
            self._refused("busy", _peer(ws))
            await self._close_conn(ws, P.CLOSE_TRY_AGAIN, P.REASON_TOO_MANY)
            return
        viewer = _Viewer(ws)
        # no await (and, across threads, the lock) between taking the snapshot and joining the fan-out:
        # nothing is lost or doubled
        with self._lock:
            snapshot = self._snapshot()
            self._viewers.add(viewer)
        header = self.header(len(snapshot))
        self.stats["viewers"] += 1
        self._notice("information", f"share: viewer {viewer.peer} joined ({len(self._viewers)} watching)")
        reader = asyncio.create_task(self._read_rest(viewer))
        try:
            await self._write(viewer, header, snapshot)
        except ConnectionClosed:
            pass
        finally:
            reader.cancel()
            if viewer.closed:  # dropped: let the close task send its code before websockets sends 1000
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(ws.wait_closed(), self.close_timeout + 1)
            else:
                viewer.closed = True
                self._viewers.discard(viewer)
                if not self._closing:
                    self._notice("information",
                                 f"share: viewer {viewer.peer} left ({len(self._viewers)} watching)")

    async def _send(self, viewer: _Viewer, msg: bytes) -> None:
        await viewer.ws.send(msg, text=True)
        viewer.sent_messages += 1
        self.stats["messages_sent"] += 1

    async def _write(self, viewer: _Viewer, header: bytes, snapshot: list[bytes]) -> None:
        await self._send(viewer, header)
        for msg in self.batches(snapshot, snapshot=True):
            if viewer.closed:
                return
            await self._send(viewer, msg)
        del snapshot[:]
        await self._send(viewer, LIVE_MESSAGE)
        while not viewer.closed and not viewer.gone:
            if not viewer.queue:
                viewer.wake.clear()
                await viewer.wake.wait()
                continue
            msg = viewer.queue.popleft()
            viewer.queued_bytes -= len(msg)
            await self._send(viewer, msg)

    async def _read_rest(self, viewer: _Viewer) -> None:
        """Read and ignore whatever a viewer sends after its hello (viewers cannot act)."""
        try:
            async for _ in viewer.ws:
                viewer.ignored += 1
                self.stats["ignored"] += 1
                if viewer.ignored > self.max_ignored:
                    self._drop(viewer, P.CLOSE_READ_ONLY, P.REASON_READ_ONLY)
                    return
        except ConnectionClosed:
            pass
        viewer.gone = True  # the connection is closed: wake the writer so the handler ends
        viewer.wake.set()


def _address(ws: ServerConnection) -> str:
    try:
        return str(ws.remote_address[0])
    except (TypeError, IndexError):
        return "?"


def _peer(ws: ServerConnection) -> str:
    try:
        host, port = ws.remote_address[:2]
        return f"{host}:{port}"
    except (TypeError, ValueError):
        return "?"
