"""Fault injection for the simulator: an ASGI middleware wrapped around the sim app.

``create_app(..., faults=["drop:50@0.3", "http:503#5"])`` wraps the Starlette
app in :class:`FaultMiddleware`; ``lanemon sim --fault SPEC`` (repeatable) and
``lanemon demo --fault-a SPEC --fault-b SPEC`` reach it.  The wire behaviour of
every kind is documented in docs/FAULTS.md.  Spec syntax::

    KIND[:ARG[:ARG]][@PROB|#EVERY]

``@0.3`` fires on each request with probability 0.3 (seeded by the sim's
``--seed``); ``#5`` fires on every 5th eligible request (the 5th, 10th, ...);
no selector fires on every request.  Faults apply to the generation endpoints
(``POST /v1/completions`` and ``/v1/chat/completions``), except
``models-change`` which changes ``GET /v1/models``.  Every request a fault
actually hit carries ``"faults": ["drop:50@0.3", ...]`` in the sim's
ground-truth trace (``GET /sim/trace``).

Faults that need the raw connection (``refuse``, ``drop``, ``slowheaders``)
reach the asyncio transport through uvicorn's ``send`` (the middleware must be
the outermost ASGI app, which is why it wraps Starlette rather than sitting in
its middleware list).  The spec syntax is parsed in :mod:`lanemon.sim.fault_spec`.
Never imports Textual or the web stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import Any, Callable

import orjson

from .fault_spec import KINDS, FaultSpec, parse_fault, parse_faults

__all__ = ["FaultSpec", "FaultMiddleware", "parse_fault", "parse_faults", "KINDS"]

GEN_PATHS = {"/v1/completions": "completions", "/v1/chat/completions": "chat.completions"}
HUGE_SLICE = 256 * 1024
NEST_DEPTH = 5000
BAD_UTF8 = b"\xff\xfe\xc3("  # never valid UTF-8: two bytes that cannot start a sequence, one broken pair

_REASONS = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 408: "Request Timeout",
            409: "Conflict", 413: "Payload Too Large", 422: "Unprocessable Entity", 429: "Too Many Requests",
            500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable",
            504: "Gateway Timeout"}
# OpenAI-style error bodies: (message, type, code)
_HTTP_ERRORS = {
    400: ("Invalid request: the request could not be parsed", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    404: ("The model does not exist or you do not have access to it.", "invalid_request_error",
          "model_not_found"),
    413: ("Request too large: the request body exceeds the server's limit.", "invalid_request_error",
          "request_too_large"),
    429: ("Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
    503: ("The server is overloaded or not ready yet.", "server_error", "service_unavailable"),
}


# ---------------------------------------------------------------------------
# Raw connection access (uvicorn)
# ---------------------------------------------------------------------------


def _cycle_of(send: Callable) -> Any:
    """uvicorn's RequestResponseCycle behind ``send`` (it has ``.transport`` and ``.disconnected``)."""
    cycle = getattr(send, "__self__", None)
    return cycle if cycle is not None and hasattr(cycle, "transport") else None


def _disconnected(cycle: Any) -> bool:
    return bool(cycle is not None and getattr(cycle, "disconnected", False))


async def _close(cycle: Any) -> None:
    """Close the TCP connection (pending bytes are flushed first), then wait until uvicorn saw it.

    Once the cycle is marked disconnected, uvicorn neither writes a 500 for a
    response we never started nor logs an error for one we did not finish.
    """
    if cycle is None:
        raise ConnectionResetError("fault: no raw transport to close (not served by uvicorn)")
    cycle.transport.close()
    deadline = time.monotonic() + 5.0
    while not _disconnected(cycle) and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    cycle.disconnected = True


async def _raw_write(cycle: Any, data: bytes) -> None:
    if _disconnected(cycle):
        raise ConnectionResetError("client went away")
    cycle.transport.write(data)
    while cycle.transport.get_write_buffer_size() > 1 << 20:
        if _disconnected(cycle) or cycle.transport.is_closing():
            raise ConnectionResetError("client went away")
        await asyncio.sleep(0.002)


# ---------------------------------------------------------------------------
# Middleware
# ---------------------------------------------------------------------------


class FaultMiddleware:
    """ASGI middleware injecting the faults in *faults* into the sim app *app*.

    *sim* is the app's ``SimState`` (for trace records and the model list);
    *seed* seeds the ``@PROB`` draws.  ``.state`` is the wrapped app's, so
    ``app.state.sim`` keeps working.
    """

    def __init__(self, app: Any, faults: Any, *, sim: Any = None, seed: int = 0) -> None:
        self.app = app
        self.faults = parse_faults(faults)
        self.sim = sim if sim is not None else getattr(getattr(app, "state", None), "sim", None)
        self._rng = random.Random(f"lanemon-faults-{seed}")
        self._counts = [0] * len(self.faults)
        self._models_requests = 0
        self.fired: dict[str, int] = {str(f): 0 for f in self.faults}
        self._change = next((f for f in self.faults if f.kind == "models-change"), None)
        self._old_models: list[str] = list(self.sim.profile.models) if self.sim is not None else []
        self._new_models = [f"{m}-v2" for m in self._old_models]
        self.t_start = time.perf_counter()
        """When the schedules (``after=``, ``for=``) start counting: the app's creation, just before it serves."""
        self._slow = [f for f in self.faults if f.kind == "slow"]
        if self._slow and self.sim is not None:
            self.sim.lane.slowdown = self.slowdown

    def slowdown(self) -> tuple[float, list[str]]:
        """The ``slow`` faults' combined factor right now, and the specs that apply (the engine asks at admission)."""
        elapsed = time.perf_counter() - self.t_start
        factor, hit = 1.0, []
        for f in self._slow:
            x = f.slow_factor(elapsed)
            if x > 1.0:
                factor *= x
                hit.append(str(f))
                self.fired[str(f)] = self.fired.get(str(f), 0) + 1
        return factor, hit

    @property
    def state(self) -> Any:
        return self.app.state

    def __getattr__(self, name: str) -> Any:  # the wrapped app's routes, router, ...
        if name == "app":
            raise AttributeError(name)
        return getattr(self.app, name)

    @property
    def models_changed(self) -> bool:
        """True once /v1/models answered the new list (from the start with ``models-change:0``)."""
        if self._change is None:
            return False
        n = self._change.args[0]
        return n == 0 or self._models_requests > n

    # -- selection -----------------------------------------------------------
    def _pick(self) -> list[FaultSpec]:
        out = []
        elapsed = time.perf_counter() - self.t_start
        for i, f in enumerate(self.faults):
            if f.kind in ("models-change", "slow") or not f.active(elapsed):
                continue
            self._counts[i] += 1
            if f.every is not None:
                hit = self._counts[i] % f.every == 0
            elif f.prob is not None:
                hit = self._rng.random() < f.prob
            else:
                hit = True
            if hit:
                out.append(f)
        return out

    # -- trace -----------------------------------------------------------------
    def _find_record(self, rid: str | None) -> dict | None:
        if self.sim is None or not rid:
            return None
        for rec in reversed(self.sim.lane.trace):
            if rec.get("id") == rid:
                return rec
        return None

    def _fault_record(self, scope: dict, t0: float, spec: FaultSpec, *, stream: bool = False,
                      status: int | None = None, message: str = "") -> dict | None:
        if self.sim is None:
            return None
        rec = self.sim.lane.new_record(GEN_PATHS.get(scope["path"], scope["path"]), stream, t0)
        rec["http_status"] = status
        rec["error"] = message
        rec["faults"] = [str(spec)]
        self.sim.lane.finish(rec, "error")
        return rec

    def _mark(self, rec: dict | None, spec: FaultSpec) -> None:
        self.fired[str(spec)] = self.fired.get(str(spec), 0) + 1
        if rec is not None:
            rec.setdefault("faults", [])
            if str(spec) not in rec["faults"]:
                rec["faults"].append(str(spec))

    # -- ASGI -----------------------------------------------------------------
    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path, method = scope["path"], scope.get("method", "GET")
        if path == "/v1/models" and method == "GET" and self._change is not None:
            self._models_requests += 1
            if self.models_changed:
                self.fired[str(self._change)] += self._models_requests == self._change.args[0] + 1
                return await self._models(send)
            return await self.app(scope, receive, send)
        if path not in GEN_PATHS or method != "POST":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        picked = self._pick()
        if not picked and not self.models_changed:
            return await self.app(scope, receive, send)
        for f in picked:
            if f.kind == "restart":  # the engine restarted just before this request: its counters start again
                self._mark(None, f)
                if self.sim is not None:
                    from .metrics_endpoint import restart

                    restart(self.sim)
                continue
            if f.kind == "refuse":
                self._mark(None, f)
                self._fault_record(scope, t0, f, message="connection closed without a response (fault refuse)")
                return await _close(_cycle_of(send))
            if f.kind == "http":
                return await self._http_error(scope, receive, send, t0, f)
        if self.models_changed:
            receive = await self._rename_model(scope, receive, send, t0)
            if receive is None:
                return None
        stream = _StreamFaults(self, [f for f in picked if f.kind not in ("refuse", "http", "restart")], send,
                               scope)
        await self.app(scope, receive, stream.send)
        await stream.finish()
        return None

    async def _models(self, send: Callable) -> None:
        sim = self.sim
        created = sim.created if sim is not None else int(time.time())
        ctx = sim.profile.context_len if sim is not None else None
        body = orjson.dumps({"object": "list", "data": [
            {"id": m, "object": "model", "created": created, "owned_by": "lanemon-sim", "max_model_len": ctx}
            for m in self._new_models]})
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"x-sim-fault", str(self._change).encode())]})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _read_body(self, receive: Callable) -> bytes:
        parts = []
        while True:
            msg = await receive()
            if msg["type"] == "http.disconnect":
                break
            parts.append(msg.get("body", b""))
            if not msg.get("more_body"):
                break
        return b"".join(parts)

    async def _http_error(self, scope: dict, receive: Callable, send: Callable, t0: float, f: FaultSpec) -> None:
        status, fmt, retry = f.args
        raw = await self._read_body(receive)  # read it all so the connection stays usable (keep-alive)
        try:
            req = orjson.loads(raw)
        except orjson.JSONDecodeError:
            req = None
        stream = isinstance(req, dict) and req.get("stream") is True
        message, type_, code = _HTTP_ERRORS.get(status, (f"{_REASONS.get(status, 'Error')} (injected)",
                                                         "server_error" if status >= 500 else "invalid_request_error",
                                                         None))
        if status == 404 and isinstance(req, dict) and isinstance(req.get("model"), str):
            message = f"The model `{req['model']}` does not exist or you do not have access to it."
        reason = _REASONS.get(status, "Error")
        if fmt == "json":
            body = orjson.dumps({"error": {"message": message, "type": type_, "param": None, "code": code}})
            ctype = b"application/json"
        elif fmt == "text":
            body = f"{status} {reason}: {message}\n".encode()
            ctype = b"text/plain; charset=utf-8"
        else:
            body = (f"<html>\r\n<head><title>{status} {reason}</title></head>\r\n<body>\r\n<center><h1>{status} "
                    f"{reason}</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n").encode()
            ctype = b"text/html"
        rec = self._fault_record(scope, t0, f, stream=stream, status=status, message=message)
        self.fired[str(f)] += 1
        headers = [(b"content-type", ctype), (b"content-length", str(len(body)).encode()),
                   (b"x-sim-fault", str(f).encode())]
        if rec is not None:
            headers.append((b"x-sim-request-id", rec["id"].encode()))
        if retry is not None:
            headers.append((b"retry-after", str(retry).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _rename_model(self, scope: dict, receive: Callable, send: Callable, t0: float) -> Callable | None:
        """After models-change: the new ids are served (as the old ones), the old ids are 404."""
        raw = await self._read_body(receive)
        try:
            req = orjson.loads(raw)
        except orjson.JSONDecodeError:
            req = None
        if isinstance(req, dict) and isinstance(req.get("model"), str):
            model = req["model"]
            if model in self._old_models:
                spec = FaultSpec("http", (404, "json", None), text=f"{self._change} (old model)")
                message = f"The model `{model}` does not exist."
                self._fault_record(scope, t0, spec, stream=req.get("stream") is True, status=404, message=message)
                body = orjson.dumps({"error": {"message": message, "type": "invalid_request_error",
                                               "param": "model", "code": "model_not_found"}})
                await send({"type": "http.response.start", "status": 404,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return None
            if model in self._new_models:
                req["model"] = self._old_models[self._new_models.index(model)]
                raw = orjson.dumps(req)
        sent = False

        async def replay() -> dict:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            return await receive()

        return replay


class _StreamFaults:
    """The ``send`` wrapper of one generation response: applies the picked stream-level faults."""

    def __init__(self, mw: FaultMiddleware, faults: list[FaultSpec], send: Callable, scope: dict) -> None:
        self.mw = mw
        self.inner = send
        self.cycle = _cycle_of(send)
        self.scope = scope
        self.by_kind: dict[str, FaultSpec] = {}
        for f in faults:
            self.by_kind.setdefault(f.kind, f)
        self.rename = [(f'"model":"{o}"'.encode(), f'"model":"{n}"'.encode())
                       for o, n in zip(mw._old_models, mw._new_models)] if mw.models_changed else []
        self.rec: dict | None = None
        self.sse = False
        self.raw = False  # slowheaders: we write the HTTP response ourselves
        self.chunked = True
        self.tokens = 0
        self.dead = False
        self.done_sent = False
        self.ended = False
        self.pending: set[str] = set(self.by_kind)
        self.held = ""  # textless: text held back from a text-less chunk, sent with the next one

    def _apply(self, kind: str) -> FaultSpec | None:
        """The fault of *kind* if it is still to be applied (then it counts as applied)."""
        if kind in self.pending:
            self.pending.discard(kind)
            spec = self.by_kind[kind]
            self.mw._mark(self.rec, spec)
            return spec
        return None

    async def _out(self, data: bytes, more: bool = True) -> None:
        if not data and more:
            return
        if self.raw:
            if self.chunked:
                frame = (f"{len(data):x}\r\n".encode() + data + b"\r\n") if data else b""
                if not more:
                    frame += b"0\r\n\r\n"
            else:
                frame = data
            if frame:
                await _raw_write(self.cycle, frame)
            if not more:
                await _close(self.cycle)
            return
        if _disconnected(self.cycle):
            raise ConnectionResetError("client went away")
        await self.inner({"type": "http.response.body", "body": data, "more_body": more})

    async def _drop(self) -> None:
        self.dead = True
        await _close(self.cycle)
        raise ConnectionResetError("connection dropped by fault")

    async def send(self, message: dict) -> None:
        if self.dead:
            raise ConnectionResetError("connection dropped by fault")
        if message["type"] == "http.response.start":
            try:
                await self._start(message)
            except ConnectionResetError:  # dropped (drop:0) or gone during slow headers: the app's next
                self.dead = True          # body write fails inside its own OSError handling
            return
        if message["type"] != "http.response.body":
            return await self.inner(message)
        body = message.get("body", b"")
        more = bool(message.get("more_body", False))
        for old, new in self.rename:
            body = body.replace(old, new)
        if not self.sse or not body:
            await self._out(body, more)
            if not more:
                self.ended = True
            return
        buf = bytearray()
        parts = body.split(b"\n\n")
        tail = parts.pop()  # b"" when the body ends with a full event
        for ev in parts:
            await self._event(ev, buf)
        buf += tail
        await self._out(bytes(buf), more)
        if not more:
            self.ended = True

    async def _start(self, message: dict) -> None:
        headers = list(message.get("headers", []))
        hmap = {k.lower(): v for k, v in headers}
        self.rec = self.mw._find_record(hmap.get(b"x-sim-request-id", b"").decode() or None)
        self.sse = hmap.get(b"content-type", b"").startswith(b"text/event-stream")
        if self.rename and self.rec is not None:
            self.mw._mark(self.rec, self.mw._change)
        if not self.sse:  # stream faults need a stream; slowheaders works on any response
            self.pending &= {"slowheaders"}
        spec = self._apply("slowheaders") if self.cycle is not None else None
        if spec is not None:
            self.raw = True
            self.chunked = b"content-length" not in hmap
            await self._dribble_head(message["status"], headers, spec.args[0])
        else:
            await self.inner(message)
        if self.sse:
            await self._after_tokens()  # faults set to fire after 0 tokens

    async def _dribble_head(self, status: int, headers: list, seconds: float) -> None:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'OK') if status != 200 else 'OK'}".encode()]
        lines += [k + b": " + v for k, v in headers]
        if self.chunked:
            lines.append(b"transfer-encoding: chunked")
        lines.append(b"connection: close")
        head = b"\r\n".join(lines) + b"\r\n\r\n"
        gap = seconds / len(head)
        for i in range(len(head)):
            await _raw_write(self.cycle, head[i:i + 1])
            await asyncio.sleep(gap)

    async def _event(self, ev: bytes, buf: bytearray) -> None:
        """Process one SSE event (without its blank line) into *buf*; may flush *buf* and act."""
        final = ev.strip() == b"data: [DONE]"
        obj = None
        if ev.startswith(b"data: {"):
            with contextlib.suppress(orjson.JSONDecodeError):
                obj = orjson.loads(ev[6:])
        if isinstance(obj, dict) and not _carries_token(obj):
            final = final or _finishes(obj)
        if final and self.pending & {"drop", "stall"}:  # a reply shorter than N: act before its end
            await self._after_tokens(buf, at_end=True)
        if ev.strip() == b"data: [DONE]":
            if self._apply("nodone"):
                return
            buf += ev + b"\n\n"
            return
        if isinstance(obj, dict) and "usage" in obj and "nousage" in self.by_kind:
            self._apply("nousage")
            obj.pop("usage", None)
            if not obj.get("choices"):
                return
            ev = b"data: " + orjson.dumps(obj)
        carries = isinstance(obj, dict) and _carries_token(obj)
        if "textless" in self.by_kind and isinstance(obj, dict) and (carries or self.held):
            ev = self._textless(obj, carries, ev)
        if carries and "badutf8" in self.pending:
            for key in (b'"content":"', b'"text":"'):
                at = ev.find(key)
                if at >= 0:
                    self._apply("badutf8")
                    at += len(key)
                    ev = ev[:at] + BAD_UTF8 + ev[at:]
                    break
        buf += ev + b"\n\n"
        if carries:
            self.tokens += 1
            if self.pending - {"nodone", "nousage", "badutf8", "textless"}:
                await self._after_tokens(buf)

    def _textless(self, obj: dict, carries: bool, ev: bytes) -> bytes:
        """``textless:K``: every K-th token chunk (never the first, never one that finishes) goes out with
        empty text -- its tokens still counted by the running usage -- and its text rides on the next chunk
        (what a detokeniser does with a token that is half a character, or a parser holding markup back)."""
        choices = obj.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            return ev
        c = choices[0]
        d = c.get("delta")
        key, box = ("content", d) if isinstance(d, dict) else ("text", c)
        if not isinstance(box.get(key), str) and not self.held:
            return ev
        text = box.get(key) if isinstance(box.get(key), str) else ""
        k = self.by_kind["textless"].args[0]
        if (carries and self.tokens > 0 and (self.tokens + 1) % k == 0 and not _finishes(obj)
                and key in box and not (isinstance(d, dict) and (d.get("reasoning_content") or d.get("tool_calls")))):
            self._apply("textless")
            self.held += text
            box[key] = ""
        elif self.held:
            box[key] = self.held + text
            self.held = ""
        else:
            return ev
        return b"data: " + orjson.dumps(obj)

    async def _after_tokens(self, buf: bytearray | None = None, at_end: bool = False) -> None:
        """Faults that fire after a number of token chunks: malformed, huge, stall, drop.

        ``at_end``: the reply is ending with fewer tokens than a stall's or drop's N; they act now.
        """
        n = self.tokens
        if n == 1 and "malformed" in self.pending:
            mode = self._apply("malformed").args[0]  # type: ignore[union-attr]
            buf = buf if buf is not None else bytearray()
            buf += _malformed_line(mode, self.scope["path"])
        if n == 1 and "huge" in self.pending:
            spec = self._apply("huge")
            await self._flush(buf)
            await self._huge(int(spec.args[0] * (1 << 20)))  # type: ignore[union-attr]
        if "stall" in self.pending and (n == self.by_kind["stall"].args[1] or at_end):
            spec = self._apply("stall")
            await self._flush(buf)
            await self._stall(spec.args[0])  # type: ignore[union-attr]
        if "drop" in self.pending and (n == self.by_kind["drop"].args[0] or at_end):
            self._apply("drop")
            await self._flush(buf)
            await self._drop()

    async def _stall(self, seconds: float) -> None:
        """Write nothing for *seconds*; stop early (ConnectionResetError) once the client has gone."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            if _disconnected(self.cycle):
                raise ConnectionResetError("client went away during the stall")
            await asyncio.sleep(min(left, 0.05))

    async def _flush(self, buf: bytearray | None) -> None:
        if buf:
            data = bytes(buf)
            buf.clear()
            await self._out(data)

    async def _huge(self, size: int) -> None:
        chat = self.scope["path"].endswith("/chat/completions")
        head = (b'data: {"choices":[{"index":0,"delta":{"content":"' if chat
                else b'data: {"choices":[{"index":0,"text":"')
        tail = (b'"},"finish_reason":null}]}\n\n' if chat else b'","finish_reason":null}]}\n\n')
        await self._out(head)
        block = b"x" * HUGE_SLICE
        left = size
        while left > 0:
            await self._out(block if left >= HUGE_SLICE else block[:left])
            left -= HUGE_SLICE
        await self._out(tail)

    async def finish(self) -> None:
        """After the app returned: a raw (slowheaders) response must still be ended and closed."""
        if self.raw and not self.ended and not self.dead:
            with contextlib.suppress(ConnectionError, OSError):
                await _close(self.cycle)


def _carries_token(obj: dict) -> bool:
    choices = obj.get("choices")
    if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
        return False
    c = choices[0]
    d = c.get("delta")
    if isinstance(d, dict):
        return bool(d.get("content") or d.get("reasoning_content") or d.get("reasoning") or d.get("tool_calls"))
    return bool(c.get("text"))


def _finishes(obj: dict) -> bool:
    """A chunk that ends the reply: it has a finish_reason, or it is the usage-only chunk."""
    choices = obj.get("choices")
    if not choices:
        return "usage" in obj
    return isinstance(choices[0], dict) and choices[0].get("finish_reason") is not None


def _malformed_line(mode: str, path: str) -> bytes:
    key = b'"delta":{"content":' if path.endswith("/chat/completions") else b'"text":'
    if mode == "line":
        return b"this line is not server-sent events\n\n"
    if mode == "array":
        return b'data: [{"choices":[]}]\n\n'
    if mode == "nested":  # valid JSON, nested deeper than any sane parser allows (orjson stops at 1024)
        start = b'"delta":{"content":"x"}' if path.endswith("/chat/completions") else b'"text":"x"'
        return (b'data: {"choices":[{"index":0,' + start + b',"logprobs":' + b"[" * NEST_DEPTH
                + b"]" * NEST_DEPTH + b"}]}\n\n")
    return b'data: {"choices":[{"index":0,' + key + b'"trunc\n\n'  # json: cut off mid-object
