"""Streaming client for one lane: a request becomes a stream of typed events.

``LaneClient.stream()`` sends one OpenAI-style request with ``stream: true``,
parses the SSE body line by line (a bounded line splitter over the raw body, inflated within bounds
-- one line is capped at ``MAX_SSE_LINE`` -- + orjson: the cheapest
correct reader) and emits :class:`~lanemon.events.Event` objects stamped
with the session clock:

    request -> first_byte -> token* -> usage? -> done | error

Every failure becomes an ``error`` event with a class from the taxonomy in
:mod:`lanemon.events` (connect, timeout, http, malformed, cut,
cancelled) and the server's own message -- never an exception out of
``stream()`` (cancellation is re-raised after its event).  API keys go in the
Authorization header only; nothing about headers is ever emitted.
"""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpcore
import httpx
import orjson

from lanemon import __version__
from lanemon.config import LaneConfig, endpoint_url, public_url
from lanemon import events as schema
from lanemon.events import Clock, Event
from lanemon.measure.records import NO_DONE_NOTE, Assembler, RequestRecord
from lanemon.measure.server import sim_name
from lanemon.client.encoding import IDENTITY, body_chunks
from lanemon.client.errors import (ERROR_BODY_LIMIT, BodyTooLarge, Redirected, describe_exception,  # noqa: F401
                                   error_message_from_body, redirect_message)
from lanemon.client.guard import guard_transport
from lanemon.client.sse import N_CHOICES_MESSAGE
from lanemon.client.sse import MAX_SSE_LINE, SSELineTooLong, Stalled, _size, read_sse, sse_lines  # noqa: F401
from lanemon.untrusted import ID_LIMIT, MESSAGE_LIMIT, Redactor, inert
from lanemon.results.readings import ProbeResult, event_data
from lanemon.results.requests import FirstByte, Note, RequestError, RequestSent, error_data

Emit = Callable[[Event], None]

PROMPT_RECORD_LIMIT = 4096  # prompts up to this many characters are kept in the recording
MODELS_BODY_LIMIT = 16 << 20  # a /models answer larger than this is refused (thousands of models fit)
JSON_BODY_LIMIT = 32 << 20  # a non-streaming answer larger than this is refused
PROBE_DEADLINE = 30.0  # seconds a /models probe may take in all, however slowly the body drips
ENDPOINTS = {"chat": "/chat/completions", "completions": "/completions"}


async def read_capped(resp: httpx.Response, limit: int) -> bytes:
    """The whole body of ``resp``, or :class:`BodyTooLarge` as soon as it passes ``limit`` bytes."""
    buf = bytearray()
    async for chunk in body_chunks(resp, limit):
        buf += chunk
        if len(buf) > limit:
            raise BodyTooLarge(f"response body larger than {_size(limit)}: stopped reading it")
    return bytes(buf)


async def get_bounded(http: httpx.AsyncClient, method: str, url: str, *, limit: int, deadline: float,
                      on_retry: Callable[[BaseException], Awaitable[None]] | None = None,
                      **kw: Any) -> tuple[httpx.Response, bytes]:
    """One non-streaming call whose body is capped at ``limit`` bytes (an error body at
    ``ERROR_BODY_LIMIT``, cut, not refused) and which ends within ``deadline`` seconds
    (:class:`TimeoutError`) however the server keeps it alive.

    With ``on_retry``, a pooled connection the server had closed while idle (:func:`idle_closed`: closed
    before any response byte) is retried once on a new connection, inside the same deadline;
    ``on_retry(exc)`` is awaited first (to say so and drop the pool's idle connections)."""
    kw["headers"] = {"Accept-Encoding": IDENTITY, **(kw.get("headers") or {})}  # whoever's client it is
    async with asyncio.timeout(deadline):
        for attempt in (0, 1):
            try:
                async with http.stream(method, url, **kw) as resp:
                    if 300 <= resp.status_code < 400:
                        raise Redirected(resp)
                    if resp.status_code >= 400:
                        return resp, await _read_bounded(resp, ERROR_BODY_LIMIT)
                    return resp, await read_capped(resp, limit)
            except (httpx.RemoteProtocolError, httpx.WriteError) as exc:
                if attempt or on_retry is None or not idle_closed(exc):
                    raise
                await on_retry(exc)
    raise AssertionError("unreachable")


POOL_SWEEP_S = 1.0
"""Seconds between two sweeps of the whole pool for connections the server closed or whose keep-alive
ran out (:class:`LinearPool`); a connection about to be reused is checked every time."""


class LinearPool(httpcore.AsyncConnectionPool):
    """httpcore's connection pool, with a request assigned to a connection in time linear in the pool.

    httpcore 1.0 re-examines every connection each time a request is added or removed: for each idle one
    it counts the whole pool again (O(n²)) and asks the socket whether the server closed it (a ``poll``
    per idle connection).  With 64 warmed connections, a level's first wave of 64 requests spent tens of
    ms of the event loop (hundreds under load) in that bookkeeping before the last request was written,
    so the burst overlapped the first tokens, on the client and on the lane (issue 13: the C64 tail).

    Here the same decisions are made with less work: the count is taken once; the connection a request is
    about to get is checked for a server close or an expired keep-alive every time (as before), and the
    rest of the pool at most every :data:`POOL_SWEEP_S`.  So a connection the server closed is never
    reused; an idle one that is not needed is closed up to a second later than before.  And a connection
    already handed to a request that has not yet started on it is not handed to another (httpcore gives
    the first idle connection to every request of a burst until one starts on it, and the others each
    retry, one connection at a time).  Installed only on httpcore 1.0's own pool class
    (:func:`linear_pool`); anything else is left alone."""

    _swept = 0.0

    def _assign_requests_to_connections(self) -> list:
        closing: list = []
        conns = self._connections
        now = time.monotonic()
        sweep = now - self._swept >= POOL_SWEEP_S
        if sweep:
            self._swept = now
        for conn in list(conns):
            if conn.is_closed():
                conns.remove(conn)
            elif (sweep and conn.has_expired()) or (
                    conn.is_idle() and len(conns) > self._max_keepalive_connections):
                conns.remove(conn)
                closing.append(conn)
        # a connection handed to a request that has not started on it yet still reads as idle: not again
        taken = {id(r.connection) for r in self._requests if r.connection is not None}
        for pool_request in [r for r in self._requests if r.is_queued()]:
            origin = pool_request.request.url.origin
            found = None
            for conn in conns:
                if id(conn) not in taken and conn.can_handle_request(origin) and conn.is_available():
                    if not sweep and conn.has_expired():
                        closing.append(conn)  # removed below; the next available one is tried
                        continue
                    found = conn
                    break
            for conn in closing:
                if conn in conns:
                    conns.remove(conn)
            if found is None and len(conns) >= self._max_connections:
                idle = next((c for c in conns if c.is_idle()), None)
                if idle is None:
                    continue  # the request waits for a connection to come free
                conns.remove(idle)
                closing.append(idle)
            if found is None:
                found = self.create_connection(origin)
                conns.append(found)
            taken.add(id(found))
            pool_request.assign_to_connection(found)
        return closing


def linear_pool(transport: httpx.AsyncBaseTransport | None) -> bool:
    """Give httpx's transport :class:`LinearPool`'s assignment (True), if its pool is httpcore 1.0's own."""
    pool = getattr(transport, "_pool", None)
    if type(pool) is not httpcore.AsyncConnectionPool or not httpcore.__version__.startswith("1.0."):
        return False
    pool.__class__ = LinearPool
    return True


class LaneClient:
    """One lane's HTTP client (a pooled ``httpx.AsyncClient``)."""

    _ids = itertools.count(1)

    def __init__(
        self,
        lane: LaneConfig,
        *,
        clock: Clock,
        emit: Emit,
        stall_timeout: float | None = None,
        connect_timeout: float = 10.0,
        max_connections: int = 512,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        from lanemon.client.netstamp import floor_for

        self.lane = lane
        self.clock = clock
        self.floor, self.emit = floor_for(emit)
        """Arrival stamps are never earlier than the latest event delivered (client/netstamp.py)."""
        self.model: str | None = lane.model
        """The model id as recorded and shown (inert, redacted, cut); :attr:`wire_model` is the one sent."""
        self.wire_model: str | None = lane.model
        """The model id exactly as the server spelled it, sent back in request bodies (never recorded)."""
        self.redactor = Redactor.for_lane(lane)
        """Every server string passes this before it becomes an event (docs/SECURITY.md)."""
        self.public_url = public_url(lane.url)
        self.deadline = lane.deadline
        """Seconds a whole request may take (``lanes.toml`` ``deadline``, ``--deadline``)."""
        self.max_model_len: int | None = None
        """The model's context length from ``/models`` (vLLM's ``max_model_len``), when the lane says."""
        self.continuous_usage: bool | None = None
        """Whether the lane accepts ``stream_options.continuous_usage_stats`` (running usage on every
        chunk, so each token event knows how many tokens it carries); None until
        :meth:`detect_continuous_usage` ran (then it is asked for on every request)."""
        self.thinking: bool | None = None
        """``--thinking on|off``: sets ``chat_template_kwargs.thinking`` (and ``reasoning_effort`` when on)
        on every request; None leaves the lane's own defaults alone."""
        # no compression, please (a lane that compresses anyway is inflated within bounds: client/encoding.py)
        headers = {"User-Agent": f"lanemon/{__version__}", "Accept-Encoding": IDENTITY, **lane.headers}
        key = lane.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        read_timeout = stall_timeout if stall_timeout is not None else lane.timeout
        self.stall = read_timeout
        """Seconds a request may go without progress (a data line; keep-alive comments do not count)."""
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        if transport is None:  # token stamps at the bytes' arrival, not at their task's turn (client/netstamp.py)
            from lanemon.client.netstamp import stamping_transport

            transport = stamping_transport(limits) or httpx.AsyncHTTPTransport(limits=limits)
            linear_pool(transport)  # a burst's bookkeeping in linear time (LinearPool)
            guard_transport(transport)  # 1xx floods and oversized headers named and refused (client/guard.py)
        self.http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(connect=connect_timeout, read=read_timeout, write=30.0, pool=None),
            limits=limits,
            transport=transport,
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    def new_request_id(self) -> str:
        return f"{self.lane.name}-{next(self._ids)}"

    # ------------------------------------------------------------------ models
    async def warm(self, connections: int) -> int:
        """Open ``connections`` pooled connections before a timed wave (``GET /models`` on each at once), so
        the first requests of a level do not carry connection set-up; returns how many answered.  Nothing is
        emitted: a warm-up is not a measured request (the caller marks it)."""
        url = f"{self.lane.url}/models"

        async def one() -> bool:
            try:
                resp = await self.http.get(url, timeout=httpx.Timeout(10.0))
                await resp.aclose()
                return resp.status_code < 500
            except httpx.HTTPError:
                return False

        results = await asyncio.gather(*(one() for _ in range(max(0, connections))))
        return sum(results)

    async def probe_models(self) -> ProbeResult:
        """GET /models; emits one ``probe`` event and returns what it holds."""
        url = endpoint_url(self.lane.url, "/models")
        start = self.clock.now()
        data: ProbeResult
        try:
            resp, content = await get_bounded(self.http, "GET", url, limit=MODELS_BODY_LIMIT,
                                              deadline=min(PROBE_DEADLINE, self.deadline), timeout=httpx.Timeout(10.0),
                                              on_retry=self._retrying)
            latency = (self.clock.now() - start) / 1e9
            if resp.status_code >= 400:
                data = ProbeResult(ok=False, cls=schema.ERR_HTTP, status=resp.status_code, latency_s=latency,
                                   message=self.redactor.text(
                                       f"HTTP {resp.status_code}: {error_message_from_body(content, resp.status_code)}"))
            else:
                data = self._models_result(content, latency)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            cls, msg = describe_exception(exc, url)
            data = ProbeResult(ok=False, cls=cls, message=self.redactor.text(msg))
        self.emit(Event(self.clock.now(), schema.PROBE, self.lane.name, None, event_data(data)))
        return data

    def _models_result(self, body: bytes, latency: float) -> ProbeResult:
        try:
            obj = orjson.loads(body)
            ids = [m["id"] for m in obj["data"] if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"]]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return ProbeResult(ok=False, cls=schema.ERR_MALFORMED, latency_s=latency,
                               message="/models did not return an OpenAI model list")
        if not ids:
            return ProbeResult(ok=False, cls=schema.ERR_MALFORMED, latency_s=latency, message="/models lists no model")
        shown = [self.redactor.ident(i) for i in ids[:20]]  # the ids as recorded and shown
        if self.lane.model and self.lane.model not in ids:
            return ProbeResult(ok=False, cls="model", latency_s=latency, models=shown,
                               message=self.redactor.text(f"model {self.lane.model!r} is not served here "
                                                          f"(serving: {', '.join(shown[:5])})"))
        old, old_wire = self.model, self.wire_model
        self.wire_model = self.lane.model or (old_wire if old_wire in ids else ids[0])  # stay on a model still served
        self.model = self.lane.model or self.redactor.ident(self.wire_model)
        out = ProbeResult(ok=True, latency_s=latency, models=shown, model=self.model)
        ctx = next((m.get("max_model_len") for m in obj["data"] if isinstance(m, dict) and m.get("id") == self.wire_model),
                   None)  # vLLM (and SGLang) say how long a sequence the model may be
        self.max_model_len = ctx if isinstance(ctx, int) and not isinstance(ctx, bool) and 0 < ctx < 1 << 31 else None
        if self.max_model_len:
            out.max_model_len = self.max_model_len
        owner = next((m.get("owned_by") for m in obj["data"] if isinstance(m, dict) and m.get("id") == self.wire_model),
                     None)
        if owner == "lanemon-sim":  # lanemon's own simulator: reports made from it say so (reports/simulated.py)
            out.simulated = True
            simulates = next((m.get("simulates") for m in obj["data"]
                              if isinstance(m, dict) and m.get("id") == self.wire_model), None)
            if sim_name(simulates):  # the engine it simulates (tensorfold-exl3): screens and history name it
                out.simulates = simulates
        if old_wire and old_wire != self.wire_model:  # the lane swapped its model under us (unpinned lane)
            out.model_changed_from = old
        return out

    async def post_json(self, endpoint: str, body: dict[str, Any]) -> tuple[int | None, Any, float, str | None]:
        """Non-streaming POST: (status, parsed JSON or None, seconds, error message or None)."""
        url = endpoint_url(self.lane.url, ENDPOINTS[endpoint])
        start = self.clock.now()
        try:
            resp, content = await get_bounded(self.http, "POST", url, limit=JSON_BODY_LIMIT,
                                              deadline=self.deadline, content=orjson.dumps(body),
                                              headers={"Content-Type": "application/json"}, on_retry=self._retrying)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return None, None, (self.clock.now() - start) / 1e9, self.redactor.text(describe_exception(exc, url)[1])
        elapsed = (self.clock.now() - start) / 1e9
        if resp.status_code >= 400:
            msg = error_message_from_body(content, resp.status_code)
            return resp.status_code, None, elapsed, self.redactor.text(f"HTTP {resp.status_code}: {msg}")
        try:
            return resp.status_code, orjson.loads(content), elapsed, None
        except orjson.JSONDecodeError:
            return resp.status_code, None, elapsed, "response body is not JSON"

    # ---------------------------------------------------------------- requests
    def build_body(
        self,
        endpoint: str,
        *,
        prompt: str | None = None,
        messages: list[dict[str, Any]] | None = None,
        max_tokens: int | None = None,
        extra: dict[str, Any] | None = None,
        include_usage: bool = True,
    ) -> dict[str, Any]:
        """Request body: lane defaults < explicit arguments < ``extra``."""
        if endpoint not in ENDPOINTS:
            raise ValueError(f"unknown endpoint {endpoint!r}")
        body: dict[str, Any] = dict(self.lane.defaults)
        if self.wire_model:
            body["model"] = self.wire_model
        if endpoint == "chat":
            body["messages"] = messages if messages is not None else [{"role": "user", "content": prompt or ""}]
        else:
            body["prompt"] = prompt if prompt is not None else ""
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        body.update(extra or {})
        if self.thinking is not None:
            apply_thinking(body, self.thinking)
        body["stream"] = True
        if include_usage:
            opts = dict(body.get("stream_options") or {})
            opts.setdefault("include_usage", True)
            if self.continuous_usage:
                opts.setdefault("continuous_usage_stats", True)
            body["stream_options"] = opts
        return body

    async def detect_continuous_usage(self) -> bool:
        """Ask once whether the lane accepts ``stream_options.continuous_usage_stats``.

        Sends one tiny streaming request (1 token) through :meth:`stream`, recorded like any other
        request and labelled as what it is (purpose ``"detect"``, meta ``probe: "continuous_usage"``; the
        engine counts it too): HTTP 400 (or any failure, or token chunks without usage) means off.  The answer is kept in :attr:`continuous_usage` and used by every later
        :meth:`build_body`.  (It also warms the client: the first stream of a fresh client pays
        one-off costs that are not the lane's.)
        """
        ok = False
        for endpoint in ("completions", "chat"):
            body: dict[str, Any] = {"max_tokens": 1, "stream": True, "temperature": 0,
                                    "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
            if self.wire_model:
                body["model"] = self.wire_model
            if endpoint == "chat":
                body["messages"] = [{"role": "user", "content": "hi"}]
            else:
                body["prompt"] = "hi"
            probe = {"probe": "continuous_usage"}
            rec = await self.stream(endpoint, body, purpose="detect", meta=probe)
            status = (rec.error or {}).get("status")
            if status == 404 and endpoint == "completions":
                continue  # a chat-only lane: ask there
            ok = rec.ok and bool(rec.chunk_tokens) and all(isinstance(n, int) for n in rec.chunk_tokens)
            if not rec.ok and status == 400:  # refused: warm the client up with a plain tiny stream instead
                body["stream_options"] = {"include_usage": True}
                await self.stream(endpoint, body, purpose="detect", meta={"probe": "warm-up"})
            break
        self.continuous_usage = ok
        return ok

    async def stream(
        self,
        endpoint: str,
        body: dict[str, Any],
        *,
        purpose: str = "",
        req_id: str | None = None,
        meta: dict[str, Any] | None = None,
        sink: Emit | None = None,
    ) -> RequestRecord:
        """Send one streaming request; emit its events (to ``sink`` instead when given); return its
        finished record."""
        req = req_id or self.new_request_id()
        out = sink or self.emit
        lane = self.lane.name
        clock = self.clock
        asm = Assembler()
        clean = self._clean

        ended = False  # a done or error event was emitted (cancelled while finishing its body: no error)

        def emit(kind: str, data: dict[str, Any], t: int | None = None) -> RequestRecord | None:
            nonlocal ended
            if kind is not schema.REQUEST:  # server text (messages, ids, finish reasons): inert and redacted
                data = clean(data)
                if kind is schema.DONE or kind is schema.ERROR:
                    ended = True
            ev = Event(clock.now() if t is None else t, kind, lane, req, data)
            out(ev)
            return asm.apply(ev)

        url = endpoint_url(self.lane.url, ENDPOINTS[endpoint])
        prompt_text = body.get("prompt") if endpoint == "completions" else _messages_text(body.get("messages"))
        model = body.get("model")
        if model is not None:  # the recorded id: the shown one for the wire id, else cleaned
            model = self.model if (model == self.wire_model and self.model) else self.redactor.ident(model)
        sent = event_data(_request_sent(endpoint, purpose, model, body, prompt_text))
        if meta:  # the workload's tags (results/requests.RequestTags) after the request's own keys
            sent.update(meta)
        payload = orjson.dumps(body)
        n_choices = body.get("n")
        if type(n_choices) is int and n_choices > 1:  # never merged into one stream's figures
            emit(schema.REQUEST, sent)
            return emit(schema.ERROR, error_data(schema.ERR_OTHER, N_CHOICES_MESSAGE))  # type: ignore[return-value]
        # The request event is stamped when its connection is ready and its first byte is about to be written
        # (httpcore's trace), not when lanemon decided to send: with 64 requests started at once, the last of
        # them waits many ms for the pool, a connection and the loop, and that wait is lanemon's, not the lane's
        # (``queued_ms`` says how long it was).  Stamped *before* the write, a TTFT can only come out long when
        # lanemon is descheduled, never shorter than the server's own.
        t_init = clock.now()
        written = False

        def request_event(t: int | None) -> None:
            nonlocal written
            if not written:
                written = True
                emit(schema.REQUEST, sent if t is None else {**sent, "queued_ms": round((t - t_init) / 1e6, 3)},
                     t_init if t is None else t)

        async def trace(name: str, info: dict[str, Any]) -> None:
            if name == "http11.send_request_headers.started":
                request_event(clock.now())

        for attempt in (0, 1):
            answered = False
            try:
                return await self._send(url, payload, emit, (lane, req, out, asm), trace)
            except _Unanswered as cut:
                answered = cut.answered
                exc = cut.exc
            except asyncio.CancelledError:
                request_event(None)
                if not ended:
                    emit(schema.ERROR, error_data(schema.ERR_CANCELLED, "cancelled"))
                raise
            request_event(None)  # never written: the request event keeps the time it was initiated
            if attempt == 0 and not answered and idle_closed(exc, streaming=True):
                await self._retrying(exc, req, out)  # an idle pooled connection the server had closed
                continue
            cls, msg = describe_exception(exc, url)
            if isinstance(exc, TimeoutError):
                msg = f"no complete answer within the {self.deadline:g} s request deadline ({self.public_url})"
            if not answered and isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
                # accepted, then closed (or reset) before a single response byte: the lane refused the request
                cls, msg = schema.ERR_CONNECT, f"the server closed the connection without a response ({self.public_url})"
            return emit(schema.ERROR, error_data(cls, msg))  # type: ignore[return-value]
        raise AssertionError("unreachable")

    async def _retrying(self, exc: BaseException, req: str | None = None, out: Emit | None = None) -> None:
        """Say (a ``note`` event of the request) that a connection closed before any response is retried
        once, and drop the pool's idle connections so the retry opens a fresh one."""
        (out or self.emit)(retry_note(self.clock.now(), self.lane.name, exc, req))
        await drop_idle_connections(self.http)

    async def _send(self, url: str, payload: bytes, emit, sink, trace=None) -> RequestRecord:
        """One attempt of :meth:`stream`; a transport failure is raised as :class:`_Unanswered`.  ``trace`` is
        httpcore's trace callback (the request event is stamped as the request is written)."""
        answered = False
        lane, req, out, asm = sink
        clock = self.clock
        try:
            async with asyncio.timeout(self.deadline):  # the whole request, however the server keeps it alive
                async with self.http.stream(
                    "POST", url, content=payload, headers={"Content-Type": "application/json"},
                    extensions={"trace": trace} if trace is not None else None,
                ) as resp:
                    server_id = resp.headers.get("x-request-id") or resp.headers.get("x-sim-request-id")
                    first = FirstByte(status=resp.status_code,  # the server's id, to match server logs
                                      server_request_id=self.redactor.ident(server_id[:4096]) if server_id else None)
                    # when the headers' bytes arrived (client/netstamp.py), as the tokens are stamped
                    arrived = getattr(resp.extensions.get("network_stream"), "read_ns", None)
                    emit(schema.FIRST_BYTE, event_data(first),
                         max(arrived - clock.t0, self.floor.t) if arrived else None)
                    answered = True
                    if 300 <= resp.status_code < 400:  # never followed: named, with where it points
                        return emit(schema.ERROR, error_data(schema.ERR_HTTP, redirect_message(resp),
                                                         resp.status_code))  # type: ignore[return-value]
                    if resp.status_code >= 400:
                        raw = await _read_bounded(resp, ERROR_BODY_LIMIT)
                        msg = f"HTTP {resp.status_code}: {error_message_from_body(raw, resp.status_code)}"
                        retry = resp.headers.get("retry-after")
                        if retry:  # 429/503: when the server asks to be retried
                            msg += f" (Retry-After: {retry[:64]})"
                        err = RequestError(cls=schema.ERR_HTTP, status=resp.status_code, message=msg,
                                           retry_after=retry[:64] if retry else None)
                        return emit(schema.ERROR, event_data(err))  # type: ignore[return-value]
                    rec = await read_sse(resp, emit, (lane, req, out, asm), clock.t0,
                                         redactor=self.redactor, stall=self.stall, floor=self.floor)
                    if rec.ok and NO_DONE_NOTE not in rec.notes:  # stopped at [DONE]: the body's end is next
                        await finish_body(resp)
                    return rec
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise _Unanswered(exc, answered) from None

    def _clean(self, data: dict[str, Any]) -> dict[str, Any]:
        """An event's data with every server string inert, redacted and cut (numbers pass as they are)."""
        out: dict[str, Any] = {}
        text = self.redactor.text
        for key, value in data.items():
            if value is None or value.__class__ in (int, float, bool):
                out[key] = value
            elif value.__class__ is str:
                out[key] = text(value, MESSAGE_LIMIT if key == "message" else ID_LIMIT)
            else:
                out[key] = self.redactor.scrub(value)
        return out


BODY_END_WAIT = 0.05
"""Seconds a stream's body may take to end after its ``[DONE]`` before its connection is given up."""
BODY_END_LIMIT = 64 * 1024
"""Bytes after ``[DONE]`` read (and discarded) at most, waiting for the body's end."""


async def finish_body(resp: httpx.Response) -> bool:
    """Read a streamed body to its end after its ``[DONE]`` (the chunked terminator, a trailing blank line),
    so its connection goes back to the pool instead of being closed: stopped at ``[DONE]``, every
    streamed request cost a new connection, a cold one each time in a closed loop.  Bounded in bytes
    (:data:`BODY_END_LIMIT`, discarded unread) and time (:data:`BODY_END_WAIT`); a body that does not end
    by then is closed as before.  The request's figures were taken already: nothing here is measured.
    Only for a body whose reader stopped at ``[DONE]``: httpcore, asked for more of a body that has already
    ended, can loop without yielding.  In practice the end came with the ``[DONE]`` (52 of 52 streams from
    the simulator); when it must be waited for, the event loop meanwhile finalizes the SSE reader's
    abandoned iterator, which closes the response, and the connection is closed as it always was (the
    time bound is the safety net).  Returns whether the body ended."""
    got = 0
    try:
        async with asyncio.timeout(BODY_END_WAIT):
            async for chunk in resp.stream:  # continues the body where the SSE reader stopped
                got += len(chunk)
                if got > BODY_END_LIMIT:
                    return False
        return True
    except (TimeoutError, httpx.HTTPError, httpcore.ProtocolError, httpcore.NetworkError, RuntimeError):
        return False


class _Unanswered(Exception):
    """A transport failure of one attempt of a stream (``answered``: a response had begun)."""

    def __init__(self, exc: BaseException, answered: bool) -> None:
        super().__init__(str(exc))
        self.exc, self.answered = exc, answered


def idle_closed(exc: BaseException, streaming: bool = False) -> bool:
    """Whether a failure looks like a pooled keep-alive connection the server had closed while idle:
    closed or reset before any response byte (worth one retry on a new connection)."""
    if isinstance(exc, httpx.WriteError):
        return True
    if isinstance(exc, httpx.RemoteProtocolError):
        return streaming or "without sending a response" in str(exc)
    return streaming and isinstance(exc, httpx.ReadError)


def retry_note(t: int, lane: str, exc: BaseException, req: str | None = None, what: str = "") -> Event:
    """The ``note`` event saying a call met a pooled connection the server had closed and was retried once."""
    return Event(t, schema.NOTE, lane, req, event_data(Note(
        level="warning", retry=True,
        message=f"the server closed a pooled connection before answering{what} ({exc.__class__.__name__}); "
                "retried once on a new connection")))


def _request_sent(endpoint: str, purpose: str, model: str | None, body: dict[str, Any],
                  prompt_text: Any) -> RequestSent:
    """What a ``request`` event says was asked of the lane (before the workload's tags): the body's sampling keys
    when it set them, whether it asked for usage on every chunk, and the prompt (its text when short)."""
    sent = RequestSent(endpoint=endpoint, purpose=purpose, model=model)
    for key in ("max_tokens", "temperature", "seed", "reasoning_effort"):
        if key in body:
            setattr(sent, key, body[key])
    ctk = body.get("chat_template_kwargs")
    if isinstance(ctk, dict) and "thinking" in ctk:
        sent.thinking = ctk["thinking"]
    if (body.get("stream_options") or {}).get("continuous_usage_stats"):
        sent.continuous_usage = True
    if isinstance(prompt_text, str):
        sent.prompt_chars = len(prompt_text)
        if len(prompt_text) <= PROMPT_RECORD_LIMIT:
            sent.prompt = prompt_text
    return sent


async def drop_idle_connections(http: httpx.AsyncClient) -> None:
    """Close the idle connections of an httpx client's pool (best effort: a custom transport has none)."""
    pool = getattr(getattr(http, "_transport", None), "_pool", None)
    for conn in list(getattr(pool, "connections", None) or []):
        try:
            if conn.is_idle():
                await conn.aclose()
        except Exception:  # noqa: BLE001 - internals of the pool: never fail a request over them
            pass


REASONING_EFFORT_ON = "medium"


def apply_thinking(body: dict[str, Any], on: bool) -> dict[str, Any]:
    """Switch a thinking model on or off in a request body (in place; returns it).

    Sets ``chat_template_kwargs.thinking`` (merged with whatever template kwargs the body already
    has, e.g. from the lane's defaults) and, when on, ``reasoning_effort`` (the body's own value, else
    ``"medium"``); when off, ``reasoning_effort`` is removed.
    """
    kwargs = dict(body.get("chat_template_kwargs") or {})
    kwargs["thinking"] = bool(on)
    body["chat_template_kwargs"] = kwargs
    if on:
        body.setdefault("reasoning_effort", REASONING_EFFORT_ON)
    else:
        body.pop("reasoning_effort", None)
    return body


def _messages_text(messages: Any) -> str | None:
    if not isinstance(messages, list):
        return None
    parts = []
    for m in messages:
        if isinstance(m, dict):
            c = m.get("content")
            if isinstance(c, str):
                parts.append(c)
    return "\n".join(parts)


async def _read_bounded(resp: httpx.Response, limit: int) -> bytes:
    buf = bytearray()
    async for chunk in body_chunks(resp, 4 * limit):
        buf += chunk
        if len(buf) >= limit:
            break
    return bytes(buf[:limit])
