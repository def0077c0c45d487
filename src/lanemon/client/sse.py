"""The SSE side of the streaming client: a bounded line splitter and the chunk parser.

``sse_lines`` splits a response body into lines without ever buffering more than
``MAX_SSE_LINE`` bytes of one line; ``read_sse`` turns the lines of an OpenAI-style
stream into ``token`` / ``usage`` / ``done`` / ``error`` events (see
:mod:`lanemon.client.http`, which sends the request and owns the client).
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import orjson

from lanemon import events as schema
from lanemon.events import Event
from lanemon.client.encoding import body_chunks
from lanemon.measure.records import NO_DONE_NOTE, RequestRecord
from lanemon.untrusted import Redactor
from lanemon.results.readings import StreamEnd, Usage, event_data
from lanemon.results.requests import error_data

MAX_SSE_LINE = 16 * 1024 * 1024  # one SSE line longer than this is a malformed stream (never buffered whole)


class Stalled(Exception):
    """Bytes kept arriving (keep-alive comments, a one-byte drip) but no data for the stall window."""


class Progress:
    """When the stream last made progress (a token, usage or the end); :func:`sse_lines` checks it
    whenever bytes arrive, so keep-alive comments and drips cannot keep a request alive."""

    __slots__ = ("t", "stall")

    def __init__(self, stall: float) -> None:
        self.stall = stall
        self.t = time.monotonic()

    def check(self) -> None:
        idle = time.monotonic() - self.t
        if idle > self.stall:
            raise Stalled(f"no data from the server for {idle:.0f} s (only keep-alive bytes; stall window "
                          f"{self.stall:g} s)")


_NO_REDACTION = Redactor()


class ReadClock:
    """When the body bytes being parsed were read (``perf_counter_ns``): every chunk that came in one
    network read carries that read's time, so a burst (many chunks in one read) has no gaps at all
    instead of gaps that measure how long lanemon took to parse them."""

    __slots__ = ("t", "floor", "t0")

    def __init__(self, floor=None, t0: int = 0) -> None:
        self.t = 0
        self.floor = floor
        """A :class:`~lanemon.client.netstamp.StampFloor` (session ns): an arrival stamp is never earlier."""
        self.t0 = t0


async def read_sse(resp: httpx.Response, emit, hot: tuple, t0: int, *, redactor: Redactor | None = None,
                   stall: float | None = None, floor=None) -> RequestRecord:
    """Parse the SSE body; ``hot`` = (lane, req, out, asm) lets token events skip ``emit``'s layers: each
    token event goes to ``out`` and into ``asm`` (the request's :class:`~lanemon.measure.records.Assembler`;
    a plain content token is appended to its open record here, as ``Assembler.apply`` would).

    Token text passes ``redactor.token`` (escape sequences and control characters out, configured
    secrets redacted; one regex search when there is nothing to do, a look-up for a text seen before);
    text that is not a string is ignored.  With ``stall``, a stream that makes no progress for that many
    seconds while bytes keep coming fails with :class:`Stalled`.

    A ``data:`` line that is a whole JSON object on its own is handled when it arrives (the common case:
    the chunk's time is that line's); otherwise the event's ``data:`` lines are joined with ``"\n"``
    and parsed at the blank line that ends the event, as the SSE spec says.  A stream that ends after a
    ``finish_reason`` but without ``[DONE]`` is done (with a note); without one it is cut.  A choice
    other than index 0 (``n > 1``) is refused, never merged into choice 0.  ``done`` carries
    ``finish_t``: when the chunk with the ``finish_reason`` arrived.

    The body is split into lines here (as :func:`sse_lines` does, bounded the same way) rather than
    through that generator: one loop per network read, the per-token work kept to the parse, one event
    and the record's appends (issue 23: client cost).
    """
    lane, req, out, asm = hot
    apply = asm.apply
    rec = asm.open.get(req)
    keep_text = asm.keep_text
    red = redactor or _NO_REDACTION
    clean = red.token
    cached = red.token_cache.get
    progress = Progress(stall) if stall else None
    mono = time.monotonic
    loads = orjson.loads
    JSONDecodeError = orjson.JSONDecodeError
    TOKEN = schema.TOKEN
    finish_reason = None
    finish_t: int | None = None
    usage: Usage | None = None
    last_completion = 0
    last_reasoning: int | None = 0  # the running reasoning_tokens of the last usage block, None when it lacked it
    nr: int | None = None  # the rise of reasoning_tokens in this chunk, when its usage and the last one said
    chunks = 0
    pending: list[bytes] = []  # data lines of an event that is not one whole JSON line
    read = ReadClock(floor, t0)
    # the line splitter (sse_lines, inlined)
    limit = MAX_SSE_LINE
    partial: list[bytes] = []
    size = 0
    skip_lf = False
    perf_ns = time.perf_counter_ns
    net = resp.extensions.get("network_stream")
    if not hasattr(net, "read_ns") or floor is None:  # no arrival stamps: when this task reads it
        net = None
    # a content chunk of this stream taken as a template (_template): a later line that is the same bytes
    # around another plain text is that text's token without parsing the chunk again
    special = _SPECIAL
    tp = ts = None
    tpl = tsl = 0
    derive = TEMPLATE_TRIES
    body = body_chunks(resp).__aiter__()
    ended = False
    while not ended:
        try:
            chunk = await body.__anext__()
        except StopAsyncIteration:
            ended = True  # the rest of a last line without its end, then the blank line the body's end is
            lines = [b"".join(partial), b""] if partial else [b""]
            t = read.t - t0
        else:
            arrived = net.read_ns if net is not None else None
            if arrived:  # when the bytes arrived, but never before an event already delivered
                fl = floor.t + t0
                read.t = arrived if arrived > fl else fl
            else:
                read.t = perf_ns()
            t = read.t - t0
            if progress is not None:
                progress.check()
            if skip_lf and chunk[:1] == b"\n":
                chunk = chunk[1:]
            skip_lf = False
            if b"\r" in chunk:
                skip_lf = chunk.endswith(b"\r")
                chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
            lines = chunk.split(b"\n")
            last = lines.pop()
            if partial and lines:
                partial.append(lines[0])
                lines[0] = b"".join(partial)
                partial.clear()
                size = 0
            if last:
                size += len(last)
                if size > limit:
                    raise SSELineTooLong(f"an SSE line longer than {_size(limit)}: stopped reading it")
                partial.append(last)
        progressed = False
        for line in lines:
            if len(line) > limit:
                raise SSELineTooLong(f"an SSE line longer than {_size(limit)}: stopped reading it")
            content = None
            if tp is not None and line.startswith(tp) and line.endswith(ts) and len(line) > tpl + tsl \
                    and not pending:
                # the stream's own chunk with another text (the template, checked when it was taken): the
                # text between is a plain JSON string body (no quote, escape or control byte) of valid UTF-8,
                # so this line parses to that chunk with this text, and goes where the general path sends it
                mid = line[tpl:len(line) - tsl]
                if special(mid) is None:
                    try:
                        content = mid.decode()
                    except UnicodeDecodeError:
                        content = None
            if content is None:
                data = None
                if not line:  # a blank line ends an event (and the body ends with one): dispatch a multi-line data
                    if not pending:
                        continue
                    data = b"\n".join(pending)
                    pending.clear()
                    if data == b"[DONE]":
                        return _done(emit, usage, finish_reason, finish_t, chunks)
                    try:
                        obj = loads(data)
                    except JSONDecodeError:
                        try:  # invalid UTF-8 inside a token: decode with U+FFFD, as browsers and the SDKs do
                            obj = loads(_text(data))
                        except JSONDecodeError:
                            return emit(schema.ERROR, error_data(schema.ERR_MALFORMED,
                                                                 f"invalid JSON in SSE data: {_text(data)[:80]!r}"))
                elif line[:5] != b"data:":
                    if line[:1] == b":" or line.startswith((b"event:", b"id:", b"retry:")):
                        continue
                    return emit(schema.ERROR, error_data(schema.ERR_MALFORMED,
                                                         f"not an SSE line: {_text(line)[:80]!r}"))
                elif pending:  # the next line of a multi-line data field
                    pending.append(line[5:].strip())
                    continue
                else:
                    try:  # JSON allows the space after "data:" (and around the object): no copy to strip it
                        obj = loads(line[5:])
                    except JSONDecodeError:
                        data = line[5:].strip()
                        if data == b"[DONE]":
                            return _done(emit, usage, finish_reason, finish_t, chunks)
                        try:
                            obj = loads(data)
                        except JSONDecodeError:  # part of a multi-line field, or bad UTF-8: judged at the event's end
                            pending.append(data)
                            continue
                if type(obj) is not dict:
                    data = line[5:].strip() if data is None else data
                    return emit(schema.ERROR, error_data(schema.ERR_MALFORMED,
                                                         f"SSE data is not a JSON object: {_text(data)[:80]!r}"))
                choices = obj.get("choices")
                if not choices and "error" in obj:
                    err = obj["error"]
                    msg = err.get("message") if isinstance(err, dict) else str(err)
                    return emit(schema.ERROR, error_data(schema.ERR_HTTP, f"error in stream: {msg}", resp.status_code))
                n = None
                u = obj.get("usage")
                if u and type(u) is dict:
                    usage = _usage_fields(u)
                    ct = usage.completion_tokens
                    if ct is not None:
                        n = ct - last_completion
                        last_completion = ct
                    rt = usage.reasoning_tokens
                    nr = rt - last_reasoning if rt is not None and last_reasoning is not None else None
                    last_reasoning = rt
                if not choices or type(choices) is not list:
                    continue
                choice = choices[0]
                if type(choice) is not dict:
                    continue
                if len(choices) > 1 or choice.get("index", 0) not in (0, None):
                    return emit(schema.ERROR, error_data(schema.ERR_OTHER, N_CHOICES_MESSAGE))
                fr = choice.get("finish_reason")
                if fr:
                    if finish_t is None:
                        finish_t = t
                    finish_reason = fr[:64] if type(fr) is str else _text(orjson.dumps(fr)[:64])
                delta = choice.get("delta")
                tok: dict[str, Any] | None = None
                if delta is not None and type(delta) is dict:  # chat
                    content = delta.get("content")
                    if type(content) is not str:  # null, or odd but valid JSON (a number, a list): no text
                        content = None
                    if content and "reasoning_content" not in delta and "reasoning" not in delta:
                        # the common case, decided in one look-up: a content token (below)
                        if n is None and not u and not fr and data is None and derive and tp is None:
                            derive -= 1  # a whole data line, nothing but its text to change: take it as the template
                            found = _template(line, obj, content)
                            if found is not None:
                                tp, ts = found
                                tpl, tsl = len(tp), len(ts)
                        if n is not None:
                            text = cached(content)
                            if text is None:
                                text = clean(content)
                            chunks += 1
                            progressed = True
                            ev = Event(t, TOKEN, lane, req, {"text": text, "n": n})
                            out(ev)
                            if rec is not None:
                                rec.token_ns.append(t)
                                rec.chunk_tokens.append(n)
                                if rec.first_content_ns is None:
                                    rec.first_content_ns = t
                                if keep_text and text:
                                    rec.text_parts.append(text)
                            else:
                                rec = asm.open.get(req)
                                apply(ev)
                            continue
                    else:
                        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                        if type(reasoning) is not str:
                            reasoning = None
                        if reasoning:
                            tok = {"text": clean(reasoning), "reasoning": True}
                            if content:  # both in one chunk: record the content too
                                tok["content"] = clean(content)
                                if n is not None and nr is not None:  # and how many of its tokens reasoned
                                    tok["nr"] = nr
                        elif content:
                            tok = {"text": clean(content)}
                        else:
                            tools = delta.get("tool_calls")
                            if tools and type(tools) is list:
                                tok = {"text": "", "tool_calls": red.scrub(tools, 16384)}
                        content = None
                else:  # completions
                    text = choice.get("text")
                    if text and type(text) is str:
                        tok = {"text": clean(text)}
                if content is None:
                    if tok is None:  # no text: tokens still arrived if usage advanced or logprobs name them
                        blank = n if n is not None else _logprob_tokens(choice.get("logprobs"))
                        if blank is not None and blank > 0:
                            tok = {"text": "", "blank": True}
                            if n is None:
                                n = blank
                    if tok is not None or n is not None:
                        progressed = True
                    if tok is not None:
                        if n is not None:
                            tok["n"] = n
                        chunks += 1
                        ev = Event(t, TOKEN, lane, req, tok)  # == emit(TOKEN, tok), inlined: the hot path
                        out(ev)
                        apply(ev)
                        rec = asm.open.get(req)
                    continue
            # a content token (the common case: a template line, or decided in one look-up above), n None
            text = cached(content)
            if text is None:
                text = clean(content)
            chunks += 1
            progressed = True
            ev = Event(t, TOKEN, lane, req, {"text": text})  # == emit(TOKEN, ...), inlined
            out(ev)
            if rec is not None:  # Assembler.apply of a content token, inlined
                rec.token_ns.append(t)
                rec.chunk_tokens.append(None)
                if rec.first_content_ns is None:
                    rec.first_content_ns = t
                if keep_text and text:
                    rec.text_parts.append(text)
            else:
                rec = asm.open.get(req)
                apply(ev)
        if progressed and progress is not None:  # once a read: the stall window counts from here
            progress.t = mono()
    # body ended without [DONE]: done if the lane said why it finished, else cut
    if finish_reason is not None:
        return _done(emit, usage, finish_reason, finish_t, chunks, note=NO_DONE_NOTE)
    return emit(schema.ERROR, error_data(schema.ERR_CUT, f"stream ended before [DONE] after {chunks} token chunks"))


_SPECIAL = re.compile(rb'["\\\x00-\x1f]').search
"""A byte that makes a JSON string's text differ from its bytes (a quote, an escape) or invalid (a control)."""
TEMPLATE_TRIES = 4
"""How many content chunks of one stream may be tried as its template (a stream whose chunks differ
elsewhere too, a counter or a timestamp, stops trying after these)."""
_PROBE = "~lanemon~"


def _template(line: bytes, obj: dict, content: str) -> tuple[bytes, bytes] | None:
    """``line`` (``data:`` and a chunk, parsed to ``obj``, whose only text is ``content``) split around its
    content text: (the bytes before the text, the bytes after), or None.  Checked by parsing the line with
    another text in that place: it must give ``obj`` with that text as ``choices[0].delta.content`` and
    nothing else changed.  Then any line that is those bytes around a plain JSON string body (no quote, no
    escape, no control byte: :data:`_SPECIAL`) of valid UTF-8 parses to ``obj`` with that text, and
    :func:`read_sse` takes it as such without parsing it."""
    if content == _PROBE:
        return None
    enc = orjson.dumps(content)
    if _SPECIAL(enc, 1, len(enc) - 1) is not None:
        return None
    start = 0
    for _ in range(4):
        i = line.find(enc, start)
        if i < 0:
            return None
        before, after = line[:i + 1], line[i + len(enc) - 1:]
        try:
            probe = orjson.loads((before + _PROBE.encode() + after)[5:])
            delta = probe["choices"][0]["delta"]
            if delta["content"] == _PROBE:
                delta["content"] = content
                if probe == obj:
                    return before, after
        except (orjson.JSONDecodeError, LookupError, TypeError):
            pass
        start = i + 1
    return None


def _logprob_tokens(lp: Any) -> int:
    """Tokens a choice's ``logprobs`` names (chat ``content`` entries, completions ``tokens``), 0 if none."""
    if type(lp) is not dict:
        return 0
    entries = lp.get("content")
    if entries is None:
        entries = lp.get("tokens")
    return len(entries) if type(entries) is list else 0


N_CHOICES_MESSAGE = ("the stream carries several choices (n > 1): lanemon measures one choice per request "
                     "and does not merge them; send n=1")


def _done(emit, usage: Usage | None, finish_reason: str | None, finish_t: int | None, chunks: int,
          note: str | None = None) -> RequestRecord:
    if usage is not None:
        emit(schema.USAGE, event_data(usage))
    end = StreamEnd(finish_reason=finish_reason, chunks=chunks, finish_t=finish_t, note=note or None)
    return emit(schema.DONE, event_data(end))


def _count(value: Any) -> bool:
    return type(value) is int  # not bool, not float, not a string of digits


def _usage_fields(u: dict[str, Any]) -> Usage:
    """The usage block's counts (*u*: the chunk's ``usage`` object, untrusted JSON); a count that is not an integer
    (a bool, a float, a string, ...) is dropped and named under ``malformed`` (negative and absurd counts are
    judged in measure/records.py)."""
    out = Usage()
    bad: list[str] = []

    def take(src: dict[str, Any], key: str, name: str, path: str) -> None:
        if key not in src or src[key] is None:
            return
        if _count(src[key]):
            setattr(out, name, src[key])
        else:
            bad.append(f"usage.{path} is {_text(orjson.dumps(src[key], default=str)[:40])}, not an integer")

    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        take(u, key, key, key)
    ptd = u.get("prompt_tokens_details")
    if isinstance(ptd, dict):
        take(ptd, "cached_tokens", "cached_tokens", "prompt_tokens_details.cached_tokens")
    ctd = u.get("completion_tokens_details")
    if isinstance(ctd, dict):
        take(ctd, "reasoning_tokens", "reasoning_tokens", "completion_tokens_details.reasoning_tokens")
    if bad:
        out.malformed = bad[0]
    return out


class SSELineTooLong(Exception):
    """One line of the stream passed ``MAX_SSE_LINE`` bytes; the client stops reading (class malformed)."""


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


async def sse_lines(resp: httpx.Response, limit: int = MAX_SSE_LINE, *, progress: Progress | None = None,
                    final_blank: bool = False, read_clock: ReadClock | None = None):
    """The body's lines (LF, CRLF or CR ends) as bytes, without their line ends (and one empty line
    after the last when ``final_blank``: the end of the body ends an event too).  ``read_clock.t`` is
    set to the time of each network read before its lines are yielded: when the read's bytes reached the
    process (client/netstamp.py), else when this task got them.

    Like httpx's ``aiter_lines`` but bounded: a compressed body is inflated in bounded steps
    (client/encoding.py); a line longer than *limit* bytes
    raises :class:`SSELineTooLong` as soon as it passes the limit instead of
    being buffered whole (a 100 MB line costs at most *limit* bytes).
    """
    pending: list[bytes] = []
    size = 0
    skip_lf = False
    perf_ns = time.perf_counter_ns
    net = resp.extensions.get("network_stream") if read_clock is not None else None
    if not hasattr(net, "read_ns") or read_clock.floor is None:  # no arrival stamps: when this task reads it
        net = None
    async for chunk in body_chunks(resp):  # decompressed within bounds, if the lane compressed anyway
        if read_clock is not None:
            arrived = net.read_ns if net is not None else None
            if arrived:  # when the bytes arrived, but never before an event already delivered
                floor = read_clock.floor.t + read_clock.t0
                read_clock.t = arrived if arrived > floor else floor
            else:
                read_clock.t = perf_ns()
        if progress is not None:
            progress.check()
        if skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        skip_lf = False
        if b"\r" in chunk:
            skip_lf = chunk.endswith(b"\r")
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        last = lines.pop()
        for piece in lines:
            if pending:
                pending.append(piece)
                piece = b"".join(pending)
                pending.clear()
                size = 0
            if len(piece) > limit:
                raise SSELineTooLong(f"an SSE line longer than {_size(limit)}: stopped reading it")
            yield piece
        if last:
            size += len(last)
            if size > limit:
                raise SSELineTooLong(f"an SSE line longer than {_size(limit)}: stopped reading it")
            pending.append(last)
    if pending:
        yield b"".join(pending)
    if final_blank:
        yield b""


def _size(n: int) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n} bytes"
