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

import pickle
import sys
import zlib
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

import orjson

from lanemon import events as schema
from lanemon.events import Event
from lanemon.results.requests import RequestError, read_error
from lanemon.measure.usage_checks import MAX_TOKENS_PER_CHUNK, usage_problem  # noqa: F401  (re-exported)


COMPLETE, TRUNCATED, EMPTY, ERROR = "complete", "truncated", "empty", "error"
OUTCOMES = (COMPLETE, TRUNCATED, EMPTY, ERROR)

BURST = "burst"
"""Flag (``RequestRecord.flags``): the token chunks were read in one burst; no decode rate from them."""
BURST_GAP_NS = 50_000
"""Mean gap between successive token chunks below which a stream counts as one burst: 50 us is 20,000
chunks/s for one stream, ten times the fastest single-stream decode any lane reaches, and what reading
chunks that are already in the socket buffer costs this client (10-30 us each)."""

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
    """Reasoning tokens when every reasoning chunk said how many tokens it carried (continuous usage), else None;
    a chunk carrying reasoning *and* answer adds its reasoning part (:func:`split_mixed`)."""
    split_chunks: int = 0
    """Chunks carrying reasoning and answer whose tokens were split between the two by the length of each part's
    text (the usage block did not say): only their split, so ``reasoning_n``, is estimated."""
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
    error: RequestError | None = None
    """Why the request failed (its ``error`` event, typed), or None."""
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
            if self.error.cls == schema.ERR_CUT and self.token_ns:
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
            rec.error = RequestError(cls=schema.ERR_MALFORMED, message=problem)
    if rec.error is None and rec.finish_reason and is_burst(rec.token_ns):
        rec.flags.add(BURST)
    return rec


_TOKEN = schema.TOKEN
_REQUEST_KINDS = schema.REQUEST_KINDS


MAX_OPEN = 32_768
"""Requests an :class:`Assembler` holds open at once.  A client's in-flight requests number its concurrency
(hundreds, a few thousand for an open-loop load); a recording with more open at once is cut or hostile (a file
of 1.5 M request starts with no end held 1.5 M records: ~3 GB)."""


class Assembler:
    """Builds :class:`RequestRecord` objects from request events."""

    def __init__(self, keep_text: bool = True) -> None:
        self.open: dict[str, RequestRecord] = {}
        self.keep_text = keep_text
        self.dropped = 0
        """Open requests given up because more than :data:`MAX_OPEN` were open at once (the oldest first)."""
        self.dropped_reqs: list[str] = []
        """Their ids, until the caller clears the list (:func:`compact_events` does, as it goes)."""

    def _opened(self) -> None:
        """After a request was opened: past :data:`MAX_OPEN`, the oldest open one is given up (a recording
        whose requests start and never end -- a cut file, or one written to exhaust memory -- keeps no more)."""
        if len(self.open) > MAX_OPEN:
            req = next(iter(self.open))
            del self.open[req]
            self.dropped += 1
            if len(self.dropped_reqs) < 4 * MAX_OPEN:
                self.dropped_reqs.append(req)

    def apply(self, ev: Event) -> RequestRecord | None:
        """Apply one event; return the record if this event finished its request."""
        req = ev.req
        if req is None:
            return None
        kind = ev.kind
        rec = self.open.get(req)
        cls = ev.__class__
        if cls is StoredAssembled:  # read back from an EventStore: a record of its own, its parts moved, not copied
            return _unpack(ev.take_record(), self.open.pop(req, None), self.keep_text, copy=False)
        if cls is AssembledEvent:  # a compacted recording: the request arrives whole
            return _unpack(ev.record, self.open.pop(req, None), self.keep_text)
        if cls is OpenTokensEvent:  # ... or its tokens so far, when it never finished
            self.open[req] = _unpack(ev.record, rec, self.keep_text)
            if rec is None:
                self._opened()
            return None
        if kind == _TOKEN:  # the hot path: hundreds per second per stream
            if rec is None:
                rec = self.open[req] = RequestRecord(lane=ev.lane or "?", req=req)
                self._opened()
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
            self._opened()
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
            rec.error = read_error(d)
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
        if rec.reasoning_n is not None:
            if not isinstance(n, int) or isinstance(n, bool):
                rec.reasoning_n = None  # a chunk that did not say how many tokens: the count is unknown
            elif not content:
                rec.reasoning_n += n
            else:  # the end of the reasoning and the start of the answer in one chunk: split its tokens
                part, estimated = split_mixed(n, d.get("nr"), d.get("text"), content)
                rec.reasoning_n += part
                rec.split_chunks += estimated
        if self.keep_text:
            if d.get("text"):
                rec.reasoning_parts.append(d["text"])
            if content:
                rec.text_parts.append(content)


def split_mixed(n: int, said: Any, reasoning: Any, answer: Any) -> tuple[int, bool]:
    """(reasoning tokens of a chunk of *n* tokens carrying reasoning and answer text, estimated): what its usage
    block said (*said*: the rise of ``completion_tokens_details.reasoning_tokens`` in the chunk) when it is
    possible; else split by the length of each part's text, each part at least one token (it carried text)."""
    if type(said) is int and 0 <= said <= n:
        return said, False
    if n <= 0:
        return 0, False
    lr = len(reasoning) if isinstance(reasoning, str) else 0
    la = len(answer) if isinstance(answer, str) else 0
    part = round(n * lr / (lr + la)) if lr + la else n // 2
    return (min(n - 1, max(1, part)) if n >= 2 else part), True


def assemble(events, *, keep_text: bool = True) -> list[RequestRecord]:
    """All finished requests in ``events``, in finishing order (without their text unless *keep_text*)."""
    return list(iter_records(events, keep_text=keep_text))


def iter_records(events, *, keep_text: bool = True):
    """:func:`assemble` one record at a time, as each request finishes (nothing kept once it is handed on)."""
    asm = Assembler(keep_text)
    for ev in events:
        rec = asm.apply(ev)
        if rec is not None:
            yield rec


# ---------------------------------------------------------------- compact event lists for big recordings
class AssembledEvent(Event):
    """A request's ``done`` / ``error`` event carrying the whole finished :class:`RequestRecord` (packed), in an
    event list from which that request's token events were dropped (:func:`compact_events`).  An
    :class:`Assembler` given it returns the record as if it had seen every token event.  (Untracked by the
    cyclic collector like every :class:`Event`: a record never refers to its event.)"""

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


def _unpack(packed: RequestRecord, into: RequestRecord | None, keep_text: bool = True, *,
            copy: bool = True) -> RequestRecord:
    """A fresh record with *packed*'s values (its mutable parts copied: a results function may flag it), filled
    into *into* when a fold already holds that request's open record (it keeps its reference); without the
    text unless *keep_text* (as an ``Assembler(keep_text=False)`` keeps none).  ``copy=False``: *packed* is a
    fresh record nobody else holds (:meth:`StoredAssembled.take_record`), its parts are moved as they are."""
    if into is None and not copy:
        rec = packed
    else:
        rec = into if into is not None else RequestRecord(lane=packed.lane, req=packed.req)
        for name in _RECORD_FIELDS:
            value = getattr(packed, name)
            copier = _COPIED.get(name) if copy else None
            setattr(rec, name, copier(value) if copier is not None else value)
    if not keep_text:  # empty and read-only: a finished record's text is never added to
        rec.text_parts = ()  # type: ignore[assignment]
        rec.reasoning_parts = ()  # type: ignore[assignment]
    return rec


class EventStore:
    """A re-iterable event sequence kept as compressed blocks of :data:`BLOCK` events (pickled, zlib level 6):
    memory follows the compressed bytes (~40-100 per event), not Python objects (600-3,000 bytes per event), and
    at most one block's events are alive while it is iterated.  Each pass decodes the events afresh (new
    objects: a consumer that changes one changes only its copy).  ``insert(pos, ev)`` places *ev* before the
    event at *pos* (after everything for ``pos == len``), as :func:`compact_events` does for open requests."""

    BLOCK = 512

    __slots__ = ("_blocks", "_pending", "_n", "_inserts", "_inserted")

    def __init__(self, events: Iterable[Event] = ()) -> None:
        self._blocks: list[bytes] = []
        self._pending: list[tuple] = []
        self._n = 0
        self._inserts: dict[int, list[Event]] = {}
        self._inserted = 0
        for ev in events:
            self.append(ev)

    def append(self, ev: Event) -> None:
        self._pending.append(_flat(ev))
        self._n += 1
        if len(self._pending) >= self.BLOCK:
            self._blocks.append(zlib.compress(pickle.dumps(self._pending, protocol=5), 6))
            self._pending = []

    def insert(self, pos: int, ev: Event) -> None:
        self._inserts.setdefault(pos, []).append(ev)
        self._inserted += 1

    def __len__(self) -> int:
        return self._n + self._inserted

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Iterator[Event]:
        inserts = self._inserts
        pos = 0
        for block in self._block_lists():
            for item in block:
                if inserts and pos in inserts:
                    yield from inserts[pos]
                yield _unflat(item)
                pos += 1
        if inserts and pos in inserts:
            yield from inserts[pos]

    def _block_lists(self) -> Iterator[list[tuple]]:
        for blob in self._blocks:
            yield pickle.loads(zlib.decompress(blob))
        yield self._pending

    @property
    def stored_bytes(self) -> int:
        """Compressed bytes held (the blocks), for the bench and tests."""
        return sum(len(b) for b in self._blocks)

    @property
    def live_items(self) -> int:
        """Python-level items held outside the compressed blocks: the block being filled and the inserted
        events.  Bounded by :data:`BLOCK` plus the requests still open at the end, whatever the request count."""
        return len(self._pending) + self._inserted


def _flat(ev: Event) -> tuple:
    """An event as stored: its data (and its record) as bytes, decoded only when a pass reads them."""
    cls = ev.__class__
    if cls is Event or cls is StoredEvent:
        return (ev.t, ev.kind, ev.lane, ev.req, _dump_data(ev.data))
    if cls is AssembledEvent or cls is StoredAssembled:
        rec = ev.record
        return (ev.t, ev.kind, ev.lane, ev.req, _dump_data(ev.data),
                pickle.dumps(tuple(getattr(rec, name) for name in _RECORD_FIELDS), protocol=5))
    return (ev.t, ev.kind, ev.lane, ev.req, None, None, pickle.dumps(ev, protocol=5))  # any other kind of event


def _unflat(item: tuple) -> Event:
    n = len(item)
    if n == 5:
        t, kind, lane, req, raw = item
        return StoredEvent(t, kind, lane, req, None, raw)  # data None: decoded on first access
    if n == 6:
        t, kind, lane, req, raw, rec_raw = item
        return StoredAssembled(t, kind, lane, req, None, None, raw, rec_raw)
    return pickle.loads(item[6])


def _dump_data(data: dict[str, Any]) -> bytes:
    if not data:
        return b""
    try:
        raw = orjson.dumps(data)
        if orjson.loads(raw) == data:  # JSON types only (a recording's): the compact form
            return raw
    except (TypeError, orjson.JSONEncodeError):
        pass
    return pickle.dumps(data, protocol=5)  # tuples, NaN, big integers ...: exactly as they were


def _load_data(raw: bytes) -> dict[str, Any]:
    if not raw:
        return {}
    return pickle.loads(raw) if raw[:1] == b"\x80" else orjson.loads(raw)


def reiterable(events: Iterable[Event]) -> "list[Event] | EventStore | tuple":
    """*events* as something that can be iterated more than once without holding it as a list when it is
    already re-iterable (a list, a tuple or an :class:`EventStore`)."""
    if isinstance(events, (list, tuple, EventStore)):
        return events
    return list(events)


@dataclass(slots=True)
class CompactEvents:
    """:func:`compact_events`' answer: the event sequence without token events, and what the full stream held."""

    events: EventStore
    count: int
    """Events in the full stream (token events included)."""
    last_t: int | None
    """The largest ``t`` of the full stream."""
    dropped: int = 0
    """Open requests given up past :data:`MAX_OPEN` (:func:`dropped_warning`)."""


def compact_events(events: Iterable[Event]) -> CompactEvents:
    """One pass over *events* (e.g. a recording read from disk) that keeps every event but a request's token
    chunks, ``first_byte`` and ``usage``: those are folded, as they stream past, into the request's record,
    carried by its ``done`` / ``error`` event (:class:`AssembledEvent`), or, for a request still open at the
    end (a cut recording), by one :class:`OpenTokensEvent` where its last folded event stood.
    :func:`assemble` and every :class:`Assembler` over the compact sequence give the same records as over the
    full stream.  The kept events go to an :class:`EventStore` (compressed blocks), so neither the token
    chunks nor the other events are held as Python objects: a report of a 1.5 M-event recording holds a few
    tens of MB of compressed blocks, plus what its results functions keep."""
    asm = Assembler()
    out = EventStore()
    last_folded: dict[str, tuple[int, Event]] = {}  # open requests: where their last folded event stood
    count, last_t = 0, None
    for ev in events:
        count += 1
        t = ev.t
        if last_t is None or t > last_t:
            last_t = t
        req = ev.req
        if req is None:
            if ev.kind not in _UNREAD:
                out.append(ev)
            continue
        kind = ev.kind
        if kind in _FOLDED:  # token chunks, first byte, usage: all in the record
            asm.apply(ev)
            last_folded[req] = (len(out), ev)
            if asm.dropped_reqs:
                _forget(last_folded, asm)
            continue
        rec = asm.apply(ev)
        if asm.dropped_reqs:
            _forget(last_folded, asm)
        if rec is None:
            out.append(ev)
            continue
        last_folded.pop(req, None)
        out.append(AssembledEvent(ev.t, kind, ev.lane, req, ev.data, _pack(rec)))
    # requests still open at the end: their state so far, where their last folded event stood
    for pos, _, req, ev in sorted((pos, ev.t, req, ev) for req, (pos, ev) in last_folded.items() if req in asm.open):
        out.insert(pos, OpenTokensEvent(ev.t, ev.kind, ev.lane, req, {}, _pack(asm.open[req])))
    return CompactEvents(out, count, last_t, asm.dropped)


def _forget(last_folded: dict[str, tuple[int, Event]], asm: Assembler) -> None:
    for req in asm.dropped_reqs:
        last_folded.pop(req, None)
    asm.dropped_reqs.clear()


def dropped_warning(dropped: int) -> str:
    """What a report or an export says when :data:`MAX_OPEN` was passed."""
    return (f"{dropped} requests never finished while more than {MAX_OPEN:,} were open at once: given up, "
            "oldest first (a recording with that many requests in flight is cut or was not written by lanemon)")


_DATA_SLOT = Event.__dict__["data"]


class StoredEvent(Event):
    """An event read back from an :class:`EventStore`: its ``data`` is decoded from ``_raw`` on first access (a pass
    that looks only at ``kind`` and ``lane`` decodes nothing).  Made as ``StoredEvent(t, kind, lane, req, None,
    raw)``: ``data`` None is "not decoded yet" (an event's data is always a dict).  Equal to another
    ``StoredEvent`` with the same ``t``, ``kind``, ``lane``, ``req`` and decoded ``data``, as an :class:`Event` is."""

    _raw: bytes = b""

    @property
    def data(self) -> dict[str, Any]:  # type: ignore[override]
        d = _DATA_SLOT.__get__(self)
        if d is None:
            d = _load_data(self._raw)
            _DATA_SLOT.__set__(self, d)
        return d

    @data.setter
    def data(self, value: dict[str, Any]) -> None:
        _DATA_SLOT.__set__(self, value)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _key(self) == _key(other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __repr__(self) -> str:
        names = ("t", "kind", "lane", "req", "data", "record")
        return f"{self.__class__.__name__}({', '.join(f'{k}={v!r}' for k, v in zip(names, _key(self)))})"


def _key(ev: Event) -> tuple:
    """What a stored event is compared by (decoded): its :class:`Event` fields, and a stored record's record."""
    key = (ev.t, ev.kind, ev.lane, ev.req, ev.data)
    return key + (ev.record,) if isinstance(ev, AssembledEvent) else key


_UNREAD = frozenset({schema.HOST, schema.NOTE, schema.ALERT})
"""Kinds no report, comparison or export reads (this machine's samples, log notes, alert transitions): counted
in :attr:`CompactEvents.count`, not kept (a file of large notes cost its size in the store)."""

_FOLDED = frozenset({schema.TOKEN, schema.FIRST_BYTE, schema.USAGE})
"""Request events :func:`compact_events` folds into the record (nothing but an Assembler reads them)."""


class OpenTokensEvent(Event):
    """What a request that never finished had so far (token chunks, first byte, usage), as one event
    (:func:`compact_events`): an :class:`Assembler` given it holds that request open with all of it, as if it
    had seen each event."""

    record: Any = None


_RECORD_SLOT = AssembledEvent.__dict__["record"]


_METAS: dict[tuple, dict[str, Any]] = {}


def _shared_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Equal request metas read back as one dict (a bench's requests repeat a few dozen metas thousands of
    times; nothing changes a finished record's meta).  At most 4,096 kept, then the cache starts again."""
    try:
        key = tuple(meta.items())
        hit = _METAS.get(key)
    except TypeError:  # a list or dict value: not shared
        return {_shared(k): v for k, v in meta.items()}
    if hit is None:
        if len(_METAS) >= 4096:
            _METAS.clear()
        hit = _METAS[key] = {_shared(k): _shared(v) for k, v in meta.items()}
    return hit


def _shared(value: Any) -> Any:
    """A short string as one shared object (``sys.intern``); anything else as it is."""
    return sys.intern(value) if value.__class__ is str and len(value) <= 64 else value


class StoredAssembled(AssembledEvent):
    """An :class:`AssembledEvent` read back from an :class:`EventStore`: data and record decoded on first
    access (``None`` in either is "not decoded yet"; a stored one always has a record).  Made as
    ``StoredAssembled(t, kind, lane, req, None, None, raw, rec_raw)``."""

    _raw: bytes = b""
    _rec_raw: bytes = b""

    data = StoredEvent.data
    __eq__, __ne__, __repr__ = StoredEvent.__eq__, StoredEvent.__ne__, StoredEvent.__repr__

    @property
    def record(self) -> RequestRecord:  # type: ignore[override]
        rec = _RECORD_SLOT.__get__(self)
        if rec is None:
            rec = RequestRecord(*pickle.loads(self._rec_raw))
            # each record was pickled on its own: its names and meta keys come back as fresh strings, the same
            # few thousand times over; shared, a record costs half as much
            rec.lane, rec.purpose, rec.endpoint = _shared(rec.lane), _shared(rec.purpose), _shared(rec.endpoint)
            rec.model, rec.finish_reason = _shared(rec.model), _shared(rec.finish_reason)
            rec.meta = _shared_meta(rec.meta)
            _RECORD_SLOT.__set__(self, rec)
        return rec

    @record.setter
    def record(self, value: Any) -> None:
        _RECORD_SLOT.__set__(self, value)

    def take_record(self) -> RequestRecord:
        """The record, handed over: a later read of ``record`` decodes a new one (so no two folds share it)."""
        rec = self.record
        _RECORD_SLOT.__set__(self, None)
        return rec
