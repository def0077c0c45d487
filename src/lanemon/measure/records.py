"""Fold a stream of events into per-request records (pure, no IO).

A :class:`RequestRecord` holds the timestamps of one request; the
:class:`Assembler` builds them from events in the order they arrive and hands
back each record when its request finishes (``done`` or ``error``).  Both the
live dashboard and every report use this one fold, so the numbers on screen and
in a report come from the same code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lanemon import events as schema
from lanemon.events import Event


@dataclass(slots=True)
class RequestRecord:
    lane: str
    req: str
    purpose: str = ""
    endpoint: str = ""
    model: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    sent_ns: int | None = None
    first_byte_ns: int | None = None
    token_ns: list[int] = field(default_factory=list)
    """Arrival time of every token-carrying chunk (reasoning or content)."""
    chunk_tokens: list[int | None] = field(default_factory=list)
    """Tokens in each chunk when the server said so (continuous usage), else None."""
    first_content_ns: int | None = None
    """First chunk carrying non-reasoning output (TTFO)."""
    reasoning_chunks: int = 0
    """Chunks carrying reasoning (a chunk carrying reasoning *and* content counts here too)."""
    reasoning_n: int | None = 0
    """Tokens of the reasoning-only chunks when every one of them said how many (continuous usage), else None."""
    text_parts: list[str] = field(default_factory=list)
    reasoning_parts: list[str] = field(default_factory=list)
    """The streamed reasoning text (``reasoning_content`` / ``reasoning``), kept apart from the answer."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    end_ns: int | None = None
    finish_reason: str | None = None
    server_request_id: str | None = None
    """The server's id for this request (``x-request-id`` / ``x-sim-request-id``), when it sent one."""
    error: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.end_ns is not None

    @property
    def finished(self) -> bool:
        return self.end_ns is not None

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    @property
    def reasoning_text(self) -> str:
        return "".join(self.reasoning_parts)


_TOKEN = schema.TOKEN
_REQUEST_KINDS = schema.REQUEST_KINDS


class Assembler:
    """Builds :class:`RequestRecord` objects from request events."""

    def __init__(self, keep_text: bool = True) -> None:
        self.open: dict[str, RequestRecord] = {}
        self.keep_text = keep_text

    def apply(self, ev: Event) -> RequestRecord | None:
        """Apply one event; return the record if this event finished its request."""
        req = ev.req
        if req is None:
            return None
        kind = ev.kind
        rec = self.open.get(req)
        if kind == _TOKEN:  # the hot path: hundreds per second per stream
            if rec is None:
                rec = self.open[req] = RequestRecord(lane=ev.lane or "?", req=req)
            d = ev.data
            rec.token_ns.append(ev.t)
            n = d.get("n")
            rec.chunk_tokens.append(n)
            if d.get("reasoning"):
                self._reasoning_token(rec, ev.t, d, n)
            else:
                if rec.first_content_ns is None:
                    rec.first_content_ns = ev.t
                if self.keep_text:
                    text = d.get("text")
                    if text:
                        rec.text_parts.append(text)
            return None
        if kind not in _REQUEST_KINDS:
            return None
        if rec is None:
            rec = self.open[req] = RequestRecord(lane=ev.lane or "?", req=req)
        d = ev.data
        if kind == schema.REQUEST:
            rec.sent_ns = ev.t
            rec.purpose = d.get("purpose", "")
            rec.endpoint = d.get("endpoint", "")
            rec.model = d.get("model")
            rec.meta = {k: v for k, v in d.items() if k not in ("purpose", "endpoint", "model", "prompt")}
        elif kind == schema.FIRST_BYTE:
            if rec.first_byte_ns is None:
                rec.first_byte_ns = ev.t
                rec.server_request_id = d.get("server_request_id")
        elif kind == schema.USAGE:
            rec.prompt_tokens = d.get("prompt_tokens", rec.prompt_tokens)
            rec.completion_tokens = d.get("completion_tokens", rec.completion_tokens)
            rec.cached_tokens = d.get("cached_tokens", rec.cached_tokens)
            rec.reasoning_tokens = d.get("reasoning_tokens", rec.reasoning_tokens)
        elif kind == schema.DONE:
            rec.end_ns = ev.t
            rec.finish_reason = d.get("finish_reason")
            return self.open.pop(ev.req)
        elif kind == schema.ERROR:
            rec.end_ns = ev.t
            rec.error = dict(d)
            return self.open.pop(ev.req)
        return None

    def _reasoning_token(self, rec: RequestRecord, t: int, d: dict[str, Any], n: int | None) -> None:
        rec.reasoning_chunks += 1
        # a chunk carrying both reasoning and content (coalescing servers) starts the output too
        content = d.get("content")
        if content and rec.first_content_ns is None:
            rec.first_content_ns = t
        if not content and rec.reasoning_n is not None:
            rec.reasoning_n = rec.reasoning_n + n if isinstance(n, int) else None
        elif content:
            rec.reasoning_n = None  # the split inside a mixed chunk is unknown
        if self.keep_text:
            if d.get("text"):
                rec.reasoning_parts.append(d["text"])
            if content:
                rec.text_parts.append(content)


def assemble(events) -> list[RequestRecord]:
    """All finished requests in ``events``, in finishing order."""
    asm = Assembler()
    out = []
    for ev in events:
        rec = asm.apply(ev)
        if rec is not None:
            out.append(rec)
    return out
