"""Streaming client for one lane: a request becomes a stream of typed events.

``LaneClient.stream()`` sends one OpenAI-style request with ``stream: true``,
parses the SSE body line by line (httpx ``aiter_lines`` + orjson: the cheapest
correct reader) and emits :class:`~lanemon.record.schema.Event` objects stamped
with the session clock:

    request -> first_byte -> token* -> usage? -> done | error

Every failure becomes an ``error`` event with a class from the taxonomy in
:mod:`lanemon.record.schema` (connect, timeout, http, malformed, cut,
cancelled) and the server's own message -- never an exception out of
``stream()`` (cancellation is re-raised after its event).  API keys go in the
Authorization header only; nothing about headers is ever emitted.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import httpx
import orjson

from lanemon import __version__
from lanemon.config import LaneConfig
from lanemon.record import schema
from lanemon.record.schema import Clock, Event
from lanemon.timeline import Assembler, RequestRecord

Emit = Callable[[Event], None]

PROMPT_RECORD_LIMIT = 4096  # prompts up to this many characters are kept in the recording
ERROR_BODY_LIMIT = 64 * 1024
ENDPOINTS = {"chat": "/chat/completions", "completions": "/completions"}


def error_message_from_body(body: bytes, status: int) -> str:
    """The server's own error message from an OpenAI-style (or any) error body."""
    text = body[:ERROR_BODY_LIMIT].decode("utf-8", errors="replace").strip()
    try:
        obj = orjson.loads(body[:ERROR_BODY_LIMIT])
    except orjson.JSONDecodeError:
        obj = None
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:500]
        if isinstance(err, str):
            return err[:500]
        if isinstance(obj.get("detail"), str):
            return obj["detail"][:500]
    first = text.splitlines()[0] if text else ""
    return first[:300] or f"HTTP {status} with an empty body"


def describe_exception(exc: BaseException, url: str) -> tuple[str, str]:
    """(error class, one-line message) for a transport exception."""
    if isinstance(exc, httpx.ConnectTimeout):
        return schema.ERR_TIMEOUT, f"connect timeout to {url}"
    if isinstance(exc, httpx.ReadTimeout):
        return schema.ERR_TIMEOUT, "no data from the server within the read/stall timeout"
    if isinstance(exc, httpx.TimeoutException):
        return schema.ERR_TIMEOUT, f"timeout talking to {url}"
    if isinstance(exc, httpx.ConnectError):
        return schema.ERR_CONNECT, f"{_connect_reason(exc)} ({url})"
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return schema.ERR_CUT, f"connection closed by the server mid-response ({exc.__class__.__name__})"
    if isinstance(exc, httpx.HTTPError):
        return schema.ERR_OTHER, f"{exc.__class__.__name__}: {exc}"
    return schema.ERR_OTHER, f"{exc.__class__.__name__}: {exc}"


def _connect_reason(exc: BaseException) -> str:
    """The root OS reason behind httpx's generic 'All connection attempts failed'."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 8:
        if isinstance(cur, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cur, OSError) and cur.strerror:
            return cur.strerror.lower()
        cur = cur.__cause__ or cur.__context__
        seen += 1
    text = str(exc)
    if "refused" in text.lower() or "All connection attempts failed" in text:
        return "connection refused"
    return text or "connection failed"


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
        self.lane = lane
        self.clock = clock
        self.emit = emit
        self.model: str | None = lane.model
        headers = {"User-Agent": f"lanemon/{__version__}", **lane.headers}
        key = lane.api_key()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        read_timeout = stall_timeout if stall_timeout is not None else lane.timeout
        self.http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(connect=connect_timeout, read=read_timeout, write=30.0, pool=None),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            transport=transport,
        )

    async def aclose(self) -> None:
        await self.http.aclose()

    def new_request_id(self) -> str:
        return f"{self.lane.name}-{next(self._ids)}"

    # ------------------------------------------------------------------ models
    async def probe_models(self) -> dict[str, Any]:
        """GET /models; emits and returns one ``probe`` event's data."""
        url = f"{self.lane.url}/models"
        start = self.clock.now()
        data: dict[str, Any]
        try:
            resp = await self.http.get(url, timeout=httpx.Timeout(10.0))
            latency = (self.clock.now() - start) / 1e9
            if resp.status_code >= 400:
                data = {
                    "ok": False,
                    "cls": schema.ERR_HTTP,
                    "status": resp.status_code,
                    "latency_s": latency,
                    "message": f"HTTP {resp.status_code}: {error_message_from_body(resp.content, resp.status_code)}",
                }
            else:
                data = self._models_result(resp.content, latency)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            cls, msg = describe_exception(exc, url)
            data = {"ok": False, "cls": cls, "message": msg}
        self.emit(Event(self.clock.now(), schema.PROBE, self.lane.name, None, data))
        return data

    def _models_result(self, body: bytes, latency: float) -> dict[str, Any]:
        try:
            obj = orjson.loads(body)
            ids = [m["id"] for m in obj["data"] if isinstance(m, dict) and isinstance(m.get("id"), str)]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return {"ok": False, "cls": schema.ERR_MALFORMED, "latency_s": latency,
                    "message": "/models did not return an OpenAI model list"}
        if not ids:
            return {"ok": False, "cls": schema.ERR_MALFORMED, "latency_s": latency, "message": "/models lists no model"}
        if self.lane.model and self.lane.model not in ids:
            return {"ok": False, "cls": "model", "latency_s": latency, "models": ids,
                    "message": f"model {self.lane.model!r} is not served here (serving: {', '.join(ids[:5])})"}
        self.model = self.lane.model or ids[0]
        return {"ok": True, "latency_s": latency, "models": ids[:20], "model": self.model}

    async def post_json(self, endpoint: str, body: dict[str, Any]) -> tuple[int | None, Any, float, str | None]:
        """Non-streaming POST: (status, parsed JSON or None, seconds, error message or None)."""
        url = f"{self.lane.url}{ENDPOINTS[endpoint]}"
        start = self.clock.now()
        try:
            resp = await self.http.post(url, content=orjson.dumps(body), headers={"Content-Type": "application/json"})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return None, None, (self.clock.now() - start) / 1e9, describe_exception(exc, url)[1]
        elapsed = (self.clock.now() - start) / 1e9
        if resp.status_code >= 400:
            msg = error_message_from_body(resp.content, resp.status_code)
            return resp.status_code, None, elapsed, f"HTTP {resp.status_code}: {msg}"
        try:
            return resp.status_code, orjson.loads(resp.content), elapsed, None
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
        if self.model:
            body["model"] = self.model
        if endpoint == "chat":
            body["messages"] = messages if messages is not None else [{"role": "user", "content": prompt or ""}]
        else:
            body["prompt"] = prompt if prompt is not None else ""
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        body.update(extra or {})
        body["stream"] = True
        if include_usage:
            opts = dict(body.get("stream_options") or {})
            opts.setdefault("include_usage", True)
            body["stream_options"] = opts
        return body

    async def stream(
        self,
        endpoint: str,
        body: dict[str, Any],
        *,
        purpose: str = "",
        req_id: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> RequestRecord:
        """Send one streaming request; emit its events; return its finished record."""
        req = req_id or self.new_request_id()
        lane = self.lane.name
        clock = self.clock
        asm = Assembler()

        def emit(kind: str, data: dict[str, Any], t: int | None = None) -> RequestRecord | None:
            ev = Event(clock.now() if t is None else t, kind, lane, req, data)
            self.emit(ev)
            return asm.apply(ev)

        url = f"{self.lane.url}{ENDPOINTS[endpoint]}"
        prompt_text = body.get("prompt") if endpoint == "completions" else _messages_text(body.get("messages"))
        sent: dict[str, Any] = {"endpoint": endpoint, "purpose": purpose, "model": body.get("model")}
        for key in ("max_tokens", "temperature", "seed"):
            if key in body:
                sent[key] = body[key]
        if isinstance(prompt_text, str):
            sent["prompt_chars"] = len(prompt_text)
            if len(prompt_text) <= PROMPT_RECORD_LIMIT:
                sent["prompt"] = prompt_text
        if meta:
            sent.update(meta)
        payload = orjson.dumps(body)
        emit(schema.REQUEST, sent)
        try:
            async with self.http.stream(
                "POST", url, content=payload, headers={"Content-Type": "application/json"}
            ) as resp:
                emit(schema.FIRST_BYTE, {"status": resp.status_code})
                if resp.status_code >= 400:
                    raw = await _read_bounded(resp, ERROR_BODY_LIMIT)
                    msg = error_message_from_body(raw, resp.status_code)
                    return emit(schema.ERROR, {"cls": schema.ERR_HTTP, "status": resp.status_code,
                                               "message": f"HTTP {resp.status_code}: {msg}"})  # type: ignore[return-value]
                return await self._read_sse(resp, emit)
        except asyncio.CancelledError:
            emit(schema.ERROR, {"cls": schema.ERR_CANCELLED, "message": "cancelled"})
            raise
        except Exception as exc:
            cls, msg = describe_exception(exc, url)
            return emit(schema.ERROR, {"cls": cls, "message": msg})  # type: ignore[return-value]

    async def _read_sse(self, resp: httpx.Response, emit) -> RequestRecord:
        finish_reason = None
        usage: dict[str, Any] | None = None
        last_completion = 0
        chunks = 0
        async for line in resp.aiter_lines():
            if not line or line[0] == ":":
                continue
            if not line.startswith("data:"):
                if line.startswith(("event:", "id:", "retry:")):
                    continue
                return emit(schema.ERROR, {"cls": schema.ERR_MALFORMED,
                                           "message": f"not an SSE line: {line[:80]!r}"})
            data = line[5:].strip()
            if data == "[DONE]":
                if usage is not None:
                    emit(schema.USAGE, usage)
                return emit(schema.DONE, {"finish_reason": finish_reason, "chunks": chunks})
            try:
                obj = orjson.loads(data)
            except orjson.JSONDecodeError:
                return emit(schema.ERROR, {"cls": schema.ERR_MALFORMED,
                                           "message": f"invalid JSON in SSE data: {data[:80]!r}"})
            if not isinstance(obj, dict):
                return emit(schema.ERROR, {"cls": schema.ERR_MALFORMED,
                                           "message": f"SSE data is not a JSON object: {data[:80]!r}"})
            if "error" in obj and not obj.get("choices"):
                err = obj["error"]
                msg = err.get("message") if isinstance(err, dict) else str(err)
                return emit(schema.ERROR, {"cls": schema.ERR_HTTP, "status": resp.status_code,
                                           "message": f"error in stream: {msg}"})
            u = obj.get("usage")
            n = None
            if isinstance(u, dict):
                usage = _usage_fields(u)
                ct = usage.get("completion_tokens")
                if isinstance(ct, int):
                    n = ct - last_completion
                    last_completion = ct
            choices = obj.get("choices") or ()
            if not choices:
                continue
            choice = choices[0]
            if not isinstance(choice, dict):
                continue
            fr = choice.get("finish_reason")
            if fr:
                finish_reason = fr
            delta = choice.get("delta")
            tok: dict[str, Any] | None = None
            if isinstance(delta, dict):  # chat
                content = delta.get("content")
                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                tools = delta.get("tool_calls")
                if reasoning:
                    tok = {"text": reasoning, "reasoning": True}
                    if content:  # both in one chunk: record the content too
                        tok["content"] = content
                elif content:
                    tok = {"text": content}
                elif tools:
                    tok = {"text": "", "tool_calls": tools}
            else:  # completions
                text = choice.get("text")
                if text:
                    tok = {"text": text}
            if tok is not None:
                if n is not None:
                    tok["n"] = n
                chunks += 1
                emit(schema.TOKEN, tok)
        # body ended without [DONE]
        return emit(schema.ERROR, {"cls": schema.ERR_CUT,
                                   "message": f"stream ended before [DONE] after {chunks} token chunks"})


def _usage_fields(u: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        if isinstance(u.get(key), int):
            out[key] = u[key]
    ptd = u.get("prompt_tokens_details")
    if isinstance(ptd, dict) and isinstance(ptd.get("cached_tokens"), int):
        out["cached_tokens"] = ptd["cached_tokens"]
    ctd = u.get("completion_tokens_details")
    if isinstance(ctd, dict) and isinstance(ctd.get("reasoning_tokens"), int):
        out["reasoning_tokens"] = ctd["reasoning_tokens"]
    return out


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
    async for chunk in resp.aiter_bytes():
        buf += chunk
        if len(buf) >= limit:
            break
    return bytes(buf[:limit])
