"""The SSE reader's template (issue 23 item 4, client cost): a content chunk of a stream, checked once, is
taken as the stream's template, and a later line that is the same bytes around another plain text becomes
that text's token without parsing the chunk again.  Whatever the lines carry, the events and the record
must be exactly those of the general parser (the template turned off); and a plain stream's chunks must
not each be parsed (counted: orjson.loads calls, not time)."""

from __future__ import annotations

import asyncio
import types

import orjson

import lanemon.client.sse as sse_mod
from lanemon.client.http import LaneClient
from lanemon.config import LaneConfig
from lanemon.events import Clock
from scripted_server import DONE, ScriptedServer, sse_head

CHAT = "/v1/chat/completions"
P = b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"'
S = b'"},"finish_reason":null}]}'


def _line(mid: bytes, prefix: bytes = P, suffix: bytes = S) -> bytes:
    return prefix + mid + suffix + b"\n\n"


def _stream(lines: list[bytes], batched: bool = True) -> list:
    body = b"".join(lines) + DONE
    if batched:
        return [sse_head(), body]
    return [sse_head(), *[x for piece in lines for x in (0.001, piece)], DONE]


TRICKY = [
    _line(b"Hello"),  # the template is taken here
    _line(b" world"),
    _line("é ünïcödé 語".encode()),  # raw UTF-8: plain
    _line(b"\\u00e9 escaped"),  # an escape: the general parser
    _line(b'a\\"b'),
    _line(b'x"},"finish_reason":null}],"z":[{"q":{"r":"'),  # a quote: other JSON around the same bytes
    _line(b""),  # empty text: no token
    _line(b"\xff\xfe bad utf-8"),  # not UTF-8: the general parser (U+FFFD)
    _line(b"y", suffix=b'"},"finish_reason":null}],"usage":{"completion_tokens":9}}'),
    _line(b"z", prefix=P.replace(b'"c1"', b'"c2"')),
    b": comment\n\n",
    _line(b" again"),
    _line(b"end", suffix=b'"},"finish_reason":"length"}]}'),
]
ECHO = [  # the text also appears outside the delta (the first occurrence is not the content)
    b'data: {"echo":{"content":"A"},"choices":[{"index":0,"delta":{"content":"A"}}]}\n\n',
    b'data: {"echo":{"content":"A"},"choices":[{"index":0,"delta":{"content":"B"}}]}\n\n',
    b'data: {"echo":{"content":"C"},"choices":[{"index":0,"delta":{"content":"A"}}]}\n\n',
]
DUPLICATE = [  # a duplicate key: whichever text the parser keeps, the template must keep the same
    b'data: {"choices":[{"index":0,"delta":{"content":"A","content":"B"}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"C","content":"D"}}]}\n\n',
    b'data: {"choices":[{"index":0,"delta":{"content":"E","content":"B"}}]}\n\n',
]
CONTROL = [_line(b"ok"), _line(b"raw\x01control")]  # invalid JSON: a malformed error, as before
INJECTED = [_line(b"ok"), _line(b'x"},"finish_reason":"stop"}],"z":{"q":"')]  # the same: not a JSON object
TAB = [_line(b"ok"), _line(b"raw\ttab")]
REASONING = [
    _line(b"ok"),
    b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"x",'
    b'"reasoning_content":"r"},"finish_reason":null}]}\n\n',
    _line(b"ok2"),
]


async def _run(url: str, n: int = 2):
    events = []
    client = LaneClient(LaneConfig("X", url, "m"), clock=Clock(), emit=events.append, stall_timeout=10)
    try:
        recs = [await client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=64)) for _ in range(n)]
    finally:
        await client.aclose()
    return recs, events


def _view(recs, events):
    """Everything but the clock: each event's kind and data, each record's figures."""
    evs = [(e.kind, {k: v for k, v in e.data.items() if k not in ("finish_t", "queued_ms")}) for e in events
           if e.kind not in ("request", "first_byte")]
    rs = [(r.outcome, r.text, len(r.token_ns), list(r.chunk_tokens), r.finish_reason, r.completion_tokens,
           r.error and r.error.cls, r.error and r.error.message, sorted(r.notes)) for r in recs]
    return evs, rs


def _both(monkeypatch, parts):
    with ScriptedServer({CHAT: parts}) as srv:
        got = _view(*asyncio.run(_run(srv.url)))
    monkeypatch.setattr(sse_mod, "TEMPLATE_TRIES", 0)
    with ScriptedServer({CHAT: parts}) as srv:
        general = _view(*asyncio.run(_run(srv.url)))
    monkeypatch.undo()
    return got, general


def test_template_lines_give_exactly_what_the_general_parser_gives(monkeypatch) -> None:
    for lines in (TRICKY, ECHO, DUPLICATE, CONTROL, TAB, INJECTED, REASONING):
        for batched in (True, False):
            got, general = _both(monkeypatch, _stream(lines, batched))
            assert got == general, (lines[:2], batched)
    got, _ = _both(monkeypatch, _stream(TRICKY))
    texts = [d.get("text") for kind, d in got[0] if kind == "token"]
    assert texts[:7] == ["Hello", " world", "é ünïcödé 語", "é escaped", 'a"b', "x", "\ufffd\ufffd bad utf-8"]
    assert texts[-3:] == ["z", " again", "end"] and got[1][0][0] == "complete"
    for lines in (CONTROL, TAB, INJECTED):
        assert _both(monkeypatch, _stream(lines))[0][1][0][6] == "malformed"


def test_a_plain_streams_chunks_are_not_each_parsed(monkeypatch) -> None:
    calls = 0

    def counting(raw):
        nonlocal calls
        calls += 1
        return orjson.loads(raw)

    monkeypatch.setattr(sse_mod, "orjson", types.SimpleNamespace(
        loads=counting, dumps=orjson.dumps, JSONDecodeError=orjson.JSONDecodeError))
    lines = [_line(f" tok{i % 97}".encode()) for i in range(300)]
    lines.append(_line(b"", suffix=b'"},"finish_reason":"length"}]}'))
    with ScriptedServer({CHAT: _stream(lines)}) as srv:
        recs, events = asyncio.run(_run(srv.url, n=1))
    assert recs[0].outcome == "complete" and len(recs[0].token_ns) == 300
    assert sum(e.kind == "token" for e in events) == 300
    assert calls <= 10, calls  # the template's own check and the chunks that are not plain tokens
