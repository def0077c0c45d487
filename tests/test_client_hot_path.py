"""The SSE reader's hot path (issue 23 item 4, client cost): a content token is appended to the request's
record in the reader instead of through ``Assembler.apply``, lines are split in the reader, and token texts
seen before are looked up instead of searched.  The record the client returns must be exactly the one its
own events assemble to, whatever the chunks carry; the look-up table stays bounded."""

from __future__ import annotations

import asyncio
import dataclasses

from lanemon.client.http import LaneClient
from lanemon.config import LaneConfig
from lanemon.events import Clock, Event
from lanemon.measure.records import assemble
from lanemon.untrusted import TOKEN_CACHE_CHARS, TOKEN_CACHE_ITEMS, Redactor
from scripted_server import DONE, ScriptedServer, sse, sse_head

CHAT = "/v1/chat/completions"


def _chunk(delta=None, finish=None, usage=None, choices=True):
    obj = {"id": "c", "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}] if choices else []}
    if usage is not None:
        obj["usage"] = usage
    return sse(obj)


def _mixed_stream() -> list:
    """Reasoning, then content, a text-less chunk with usage, control characters, a comment, a chunk split
    over two writes and CRLF line ends, several chunks in one write."""
    u = lambda n: {"prompt_tokens": 3, "completion_tokens": n, "total_tokens": 3 + n}  # noqa: E731
    parts = [sse_head(), _chunk({"role": "assistant", "content": ""}, usage=u(0))]
    parts += [0.002, _chunk({"reasoning_content": "think "}, usage=u(1))]
    parts += [0.002, _chunk({"reasoning_content": "more", "content": "Hi"}, usage=u(2))]
    parts += [0.002, _chunk({"content": "there\x1b[31m"}, usage=u(3))]
    parts += [0.002, b": keep-alive\n\n"]
    parts += [0.002, _chunk({"content": ""}, usage=u(4))]
    whole = _chunk({"content": " split"}, usage=u(5))
    parts += [0.002, whole[:20], 0.002, whole[20:]]
    parts += [0.002, _chunk({"content": " crlf"}, usage=u(6)).replace(b"\n", b"\r\n")]
    parts += [0.002, b"".join(_chunk({"content": f" w{i}"}, usage=u(7 + i)) for i in range(5))]
    parts += [0.002, _chunk({"content": " end"}, finish="stop", usage=u(12)), _chunk(usage=u(12), choices=False), DONE]
    return parts


async def _run(url):
    events: list[Event] = []
    client = LaneClient(LaneConfig("X", url, "m"), clock=Clock(), emit=events.append, stall_timeout=10)
    client.continuous_usage = True
    try:
        recs = [await client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=64)) for _ in range(2)]
    finally:
        await client.aclose()
    return recs, events


def test_the_record_returned_is_the_one_its_events_assemble_to() -> None:
    with ScriptedServer({CHAT: _mixed_stream()}) as srv:
        recs, events = asyncio.run(_run(srv.url))
    again = {r.req: r for r in assemble(events)}
    assert len(recs) == 2
    for rec in recs:
        assert rec.outcome == "complete"
        other = again[rec.req]
        assert dataclasses.asdict(rec) == dataclasses.asdict(other)
        assert rec.completion_tokens == 12 and len(rec.token_ns) == 12  # reasoning, blank and content chunks
        assert rec.text == "Hithere split crlf w0 w1 w2 w3 w4 end"  # the escape sequence is gone
        assert rec.token_ns == sorted(rec.token_ns)
    tokens = [ev for ev in events if ev.kind == "token"]
    assert all("\x1b" not in ev.data["text"] for ev in tokens)


def test_the_token_cache_is_bounded_and_cleans_like_the_search() -> None:
    r = Redactor(["sk-secret-value-123456"])
    texts = [f" t{i}" for i in range(3 * TOKEN_CACHE_ITEMS)] + ["x" * (TOKEN_CACHE_CHARS + 1)]
    for text in texts:
        assert r.token(text) == text
        assert len(r.token_cache) <= TOKEN_CACHE_ITEMS
    assert "x" * (TOKEN_CACHE_CHARS + 1) not in r.token_cache
    assert r.token("a\x1b[2Jb") == "ab" and r.token_cache["a\x1b[2Jb"] == "ab"
    assert r.token("sk-secret-value-123456") != "sk-secret-value-123456"
    assert r.token_cache["sk-secret-value-123456"] == r.token("sk-secret-value-123456")


def test_the_text_cache_is_bounded_and_cleans_as_the_uncached_path() -> None:
    """Redactor.text remembers short strings' results (a GPU reading's and a /metrics scrape's labels repeat every
    reading): a cached result is the one cleaning gives, per limit and newline mode, secrets redacted; long
    strings are never kept; the cache is emptied when full."""
    r, fresh = Redactor(["sk-secret-value-123456"]), lambda: Redactor(["sk-secret-value-123456"])
    hostile = ["a\x1b[2Jb", "sk-secret-value-123456", "token=abcdefgh12345678", "x\ny", "ok", "\u202egpu0"]
    for text in hostile:
        for limit, newlines in ((None, False), (8, False), (200, True)):
            first = r.text(text, limit, newlines=newlines)
            assert first == fresh().text(text, limit, newlines=newlines)
            cleaned = r.texts_cleaned
            assert r.text(text, limit, newlines=newlines) == first and r.texts_cleaned == cleaned  # from the cache
    assert "sk-secret-value-123456" not in r.text("sk-secret-value-123456")
    long = "y" * (TOKEN_CACHE_CHARS + 1)
    r.text(long)
    assert not any(key[0] == long for key in r.text_cache)
    for i in range(3 * TOKEN_CACHE_ITEMS):
        r.text(f"label{i}")
        assert len(r.text_cache) <= TOKEN_CACHE_ITEMS
