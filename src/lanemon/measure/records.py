"""Fold a stream of events into per-request records (pure, no IO).

A :class:`RequestRecord` holds the timestamps of one request; the
:class:`Assembler` builds them from events in the order they arrive and hands
back each record when its request finishes (``done`` or ``error``).  Both the
live dashboard and every report use this one fold, so the numbers on screen and
in a report come from the same code.

Every finished request has exactly one :attr:`RequestRecord.outcome`
(docs/METRICS.md, "Outcomes"):

* ``complete``  -- a ``finish_reason`` was seen and at least one token chunk arrived;
* ``truncated`` -- tokens arrived but the stream ended (``[DONE]`` or a cut
  connection) without a ``finish_reason``;
* ``empty``     -- the stream ended without a single content or reasoning token (chunks that carried
  tokens without text do not make a reply);
* ``error``     -- an error event (its class in ``error["cls"]``), or a
  malformed usage block (class ``malformed``, set here when the stream ends).

Only complete requests are :attr:`~RequestRecord.ok` and feed latency and rate
figures.  A complete request whose token chunks were read in one burst (the
gaps collapsed to the client's read granularity) carries the ``burst`` flag:
its decode rate is not the lane's.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from lanemon import events as schema
from lanemon.events import Event


COMPLETE, TRUNCATED, EMPTY, ERROR = "complete", "truncated", "empty", "error"
OUTCOMES = (COMPLETE, TRUNCATED, EMPTY, ERROR)

BURST = "burst"
"""Flag (``RequestRecord.flags``): the token chunks were read in one burst; no decode rate from them."""
BURST_GAP_NS = 50_000
"""Mean gap between successive token chunks below which a stream counts as one burst: 50 us is 20,000
chunks/s for one stream, ten times the fastest single-stream decode any lane reaches, and what reading
chunks that are already in the socket buffer costs this client (10-30 us each)."""
MAX_TOKENS_PER_CHUNK = 256
"""More completion tokens than this per token chunk is absurd usage (coalescing servers and speculative
decoding put a handful, not hundreds, in one chunk)."""

NO_DONE_NOTE = "stream ended with a finish_reason but without [DONE]"


@dataclass(slots=True)
class RequestRecord:
    lane: str
    req: str
    purpose: str = ""
    endpoint: str = ""
    model: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    sent_ns: int | None = None
    queued_ms: float | None = None
    """How long lanemon held the request before writing it (pool, connection set-up, its own loop): not the
    lane's time, so not in TTFT (docs/METRICS.md)."""
    first_byte_ns: int | None = None
    token_ns: list[int] = field(default_factory=list)
    """Arrival time of every token-carrying chunk: reasoning, content, tool-call arguments, or no text at all
    (a chunk whose running usage count rose, or whose logprobs name tokens, without text: ``blank_chunks``)."""
    blank_chunks: int = 0
    """Token-carrying chunks without text (tokens that decode to nothing on their own, held back by a
    detokeniser or parser): their tokens count where they arrived (docs/METRICS.md)."""
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
    finish_ns: int | None = None
    """Arrival of the chunk that carried the ``finish_reason`` (``done``'s ``finish_t``), when recorded."""
    server_request_id: str | None = None
    """The server's id for this request (``x-request-id`` / ``x-sim-request-id``), when it sent one."""
    error: dict[str, Any] | None = None
    flags: set[str] = field(default_factory=set)
    """Marks on the request's figures: ``"burst"`` (here) and ``"client_bound"`` (measure/load.py): its
    timestamps say when lanemon read the chunks, not when the lane wrote them."""
    notes: list[str] = field(default_factory=list)
    """Things worth saying about a request that still counts (e.g. no ``[DONE]`` after a finish_reason)."""
    usage_problem: str | None = None
    """Why the server's usage block is not believable (negative, boolean, non-integer ...), or None."""

    @property
    def outcome(self) -> str | None:
        """``complete`` / ``truncated`` / ``empty`` / ``error`` once finished, None while streaming."""
        if self.end_ns is None:
            return None
        if self.error is not None:
            if self.error.get("cls") == schema.ERR_CUT and self.token_ns:
                return TRUNCATED  # tokens came, then the connection was cut
            return ERROR
        if len(self.token_ns) <= self.blank_chunks:  # tokens perhaps, but not one with text
            return EMPTY
        if not self.finish_reason:
            return TRUNCATED
        return COMPLETE

    @property
    def ok(self) -> bool:
        """A complete request: the only kind whose timings feed latency and rate figures."""
        return self.outcome == COMPLETE

    @property
    def burst(self) -> bool:
        return BURST in self.flags or is_burst(self.token_ns)

    @property
    def finished(self) -> bool:
        return self.end_ns is not None

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    @property
    def reasoning_text(self) -> str:
        return "".join(self.reasoning_parts)


def is_burst(token_ns: list[int]) -> bool:
    """True when the token chunks' gaps collapsed to the client's read granularity: mean gap between the
    first and last token chunk below :data:`BURST_GAP_NS` (at least two chunks)."""
    n = len(token_ns)
    return n >= 2 and (token_ns[-1] - token_ns[0]) < BURST_GAP_NS * (n - 1)


def _bad_count(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return f"usage.{key} is {value!r}, not an integer"
    if value < 0:
        return f"usage.{key} is negative ({value})"
    return None


def usage_problem(rec: RequestRecord) -> str | None:
    """Why ``rec``'s usage cannot be true, or None: bad values (from the stream), a token count with no
    token chunk, more tokens than the chunks could carry, reasoning or cached counts above their totals."""
    if rec.usage_problem:
        return rec.usage_problem
    for key in ("prompt_tokens", "completion_tokens", "cached_tokens", "reasoning_tokens"):
        bad = _bad_count(key, getattr(rec, key))
        if bad:
            return bad
    for n in rec.chunk_tokens:
        bad = _bad_count("completion_tokens (running count)", n)
        if bad:
            return bad.replace("is negative", "went down by")
    ct = rec.completion_tokens
    chunks = len(rec.token_ns)
    if ct is not None:
        if ct > 0 and chunks == 0:
            return f"usage says {ct} completion tokens but no token chunk arrived"
        # reasoning the lane counted but did not stream (hidden reasoning) came in no chunk
        hidden = rec.reasoning_tokens if rec.reasoning_tokens is not None and not rec.reasoning_chunks else 0
        if ct - hidden > MAX_TOKENS_PER_CHUNK * chunks:
            return f"usage says {ct} completion tokens for {chunks} token chunks (absurd)"
        if rec.reasoning_tokens is not None and rec.reasoning_tokens > ct:
            return f"usage says {rec.reasoning_tokens} reasoning tokens of {ct} completion tokens"
    if rec.cached_tokens is not None and rec.prompt_tokens is not None and rec.cached_tokens > rec.prompt_tokens:
        return f"usage says {rec.cached_tokens} cached of {rec.prompt_tokens} prompt tokens"
    return None


def outcome_counts(records) -> dict[str, int]:
    """{"complete", "truncated", "empty", "error"} -> how many of the finished ``records``."""
    out = dict.fromkeys(OUTCOMES, 0)
    for rec in records:
        o = rec.outcome
        if o is not None:
            out[o] += 1
    return out


def finish(rec: RequestRecord) -> RequestRecord:
    """Judge a record that just ended: bad usage becomes a ``malformed`` error; a burst is flagged."""
    if rec.error is None:
        problem = usage_problem(rec)
        if problem:
            rec.error = {"cls": schema.ERR_MALFORMED, "message": problem}
    if rec.error is None and rec.finish_reason and is_burst(rec.token_ns):
        rec.flags.add(BURST)
    return rec


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
        if ev.__class__ is AssembledEvent:  # a compacted recording: the request arrives whole
            return _unpack(ev.record, self.open.pop(req, None))
        if ev.__class__ is OpenTokensEvent:  # ... or its tokens so far, when it never finished
            self.open[req] = _unpack(ev.record, rec)
            return None
        if kind == _TOKEN:  # the hot path: hundreds per second per stream
            if rec is None:
                rec = self.open[req] = RequestRecord(lane=ev.lane or "?", req=req)
            d = ev.data
            rec.token_ns.append(ev.t)
            n = d.get("n")
            rec.chunk_tokens.append(n)
            if d.get("reasoning"):
                self._reasoning_token(rec, ev.t, d, n)
            elif d.get("blank"):
                self._blank_token(rec, n)
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
            rec.queued_ms = d.get("queued_ms")
            rec.meta = {k: v for k, v in d.items()
                        if k not in ("purpose", "endpoint", "model", "prompt", "queued_ms")}
        elif kind == schema.FIRST_BYTE:
            if rec.first_byte_ns is None:
                rec.first_byte_ns = ev.t
                rec.server_request_id = d.get("server_request_id")
        elif kind == schema.USAGE:
            rec.prompt_tokens = d.get("prompt_tokens", rec.prompt_tokens)
            rec.completion_tokens = d.get("completion_tokens", rec.completion_tokens)
            rec.cached_tokens = d.get("cached_tokens", rec.cached_tokens)
            rec.reasoning_tokens = d.get("reasoning_tokens", rec.reasoning_tokens)
            if d.get("malformed"):
                rec.usage_problem = str(d["malformed"])[:300]
        elif kind == schema.DONE:
            rec.end_ns = ev.t
            fr = d.get("finish_reason")
            rec.finish_reason = fr if isinstance(fr, str) and fr else None
            ft = d.get("finish_t")
            if type(ft) is int and rec.finish_reason:
                rec.finish_ns = ft
            if d.get("note"):
                rec.notes.append(str(d["note"])[:300])
            return finish(self.open.pop(ev.req))
        elif kind == schema.ERROR:
            rec.end_ns = ev.t
            rec.error = dict(d)
            return self.open.pop(ev.req)
        return None

    @staticmethod
    def _blank_token(rec: RequestRecord, n: int | None) -> None:
        """A chunk whose tokens decoded to no text (yet): counted where it arrived; while the request is
        still reasoning (reasoning streamed, no answer yet) its tokens are reasoning tokens."""
        rec.blank_chunks += 1
        if rec.reasoning_chunks and rec.first_content_ns is None:
            rec.reasoning_chunks += 1
            if rec.reasoning_n is not None:
                rec.reasoning_n = rec.reasoning_n + n if isinstance(n, int) else None

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


# ---------------------------------------------------------------- compact event lists for big recordings
@dataclass(slots=True)
class AssembledEvent(Event):
    """A request's ``done`` / ``error`` event carrying the whole finished :class:`RequestRecord` (packed), in an
    event list from which that request's token events were dropped (:func:`compact_events`).  An
    :class:`Assembler` given it returns the record as if it had seen every token event."""

    record: Any = None


_RECORD_FIELDS = tuple(f.name for f in fields(RequestRecord))
_COPIED = {"meta": dict, "flags": set, "notes": list, "error": lambda e: dict(e) if e is not None else None}


def _pack(rec: RequestRecord) -> RequestRecord:
    """The record in compact, read-only form: token times as a C array (8 bytes each, not ~40), chunk counts as
    a tuple, the text joined into one string."""
    rec.token_ns = array("q", rec.token_ns)  # type: ignore[assignment]
    rec.chunk_tokens = tuple(rec.chunk_tokens)  # type: ignore[assignment]
    if len(rec.text_parts) > 1:
        rec.text_parts = ["".join(rec.text_parts)]
    if len(rec.reasoning_parts) > 1:
        rec.reasoning_parts = ["".join(rec.reasoning_parts)]
    return rec


def _unpack(packed: RequestRecord, into: RequestRecord | None) -> RequestRecord:
    """A fresh record with *packed*'s values (its mutable parts copied: a results function may flag it), filled
    into *into* when a fold already holds that request's open record (it keeps its reference)."""
    rec = into if into is not None else RequestRecord(lane=packed.lane, req=packed.req)
    for name in _RECORD_FIELDS:
        value = getattr(packed, name)
        copy = _COPIED.get(name)
        setattr(rec, name, copy(value) if copy is not None else value)
    return rec


@dataclass(slots=True)
class CompactEvents:
    """:func:`compact_events`' answer: the event list without token events, and what the full stream held."""

    events: list[Event]
    count: int
    """Events in the full stream (token events included)."""
    last_t: int | None
    """The largest ``t`` of the full stream."""


def compact_events(events: Iterable[Event]) -> CompactEvents:
    """One pass over *events* (e.g. a recording read from disk) that keeps every event but a request's token
    chunks, ``first_byte`` and ``usage``: those are folded, as they stream past, into the request's record,
    carried by its ``done`` / ``error`` event (:class:`AssembledEvent`), or, for a request still open at the
    end (a cut recording), by one :class:`OpenTokensEvent` where its last folded event stood.
    :func:`assemble` and every :class:`Assembler` over the compact list give the same records as over the
    full stream, in a fraction of the memory: a token chunk costs ~20 bytes (its time in a C array, its
    count, its text) instead of a ~600-byte Event, and no token event is held while its request streams,
    so a report of a 1.5 M-event recording does not hold 1.5 M events."""
    asm = Assembler()
    out: list[Event] = []
    last_folded: dict[str, tuple[int, Event]] = {}  # open requests: where their last folded event stood
    count, last_t = 0, None
    for ev in events:
        count += 1
        t = ev.t
        if last_t is None or t > last_t:
            last_t = t
        req = ev.req
        if req is None:
            out.append(ev)
            continue
        kind = ev.kind
        if kind in _FOLDED:  # token chunks, first byte, usage: all in the record
            asm.apply(ev)
            last_folded[req] = (len(out), ev)
            continue
        rec = asm.apply(ev)
        if rec is None:
            out.append(ev)
            continue
        last_folded.pop(req, None)
        out.append(AssembledEvent(ev.t, kind, ev.lane, req, ev.data, _pack(rec)))
    left = sorted((pos, ev.t, req, ev) for req, (pos, ev) in last_folded.items() if req in asm.open)
    if left:  # requests still open at the end: their state so far, where their last folded event stood
        merged: list[Event] = []
        j = 0
        for pos, _, req, ev in left:
            merged.extend(out[j:pos])
            j = pos
            merged.append(OpenTokensEvent(ev.t, ev.kind, ev.lane, req, {}, _pack(asm.open[req])))
        merged.extend(out[j:])
        out = merged
    return CompactEvents(out, count, last_t)


_FOLDED = frozenset({schema.TOKEN, schema.FIRST_BYTE, schema.USAGE})
"""Request events :func:`compact_events` folds into the record (nothing but an Assembler reads them)."""


@dataclass(slots=True)
class OpenTokensEvent(Event):
    """What a request that never finished had so far (token chunks, first byte, usage), as one event
    (:func:`compact_events`): an :class:`Assembler` given it holds that request open with all of it, as if it
    had seen each event."""

    record: Any = None
