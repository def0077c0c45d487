"""Events are not tracked by Python's cyclic collector (issue 23 item 4, client cost): a sink that keeps a
client's token events (the client-cost bench keeps up to 100,000) must not give every collection that many more
objects to walk.  Counted (objects the collector tracks), not timed.  Every kind of event keeps what it was: its
constructor, equality, pickling, JSON form and the big-recording store's lazily decoded ones."""

from __future__ import annotations

import asyncio
import copy
import gc
import pickle

import msgspec
import pytest

from lanemon.client.http import LaneClient
from lanemon.config import LaneConfig
from lanemon.events import TOKEN, Clock, Event
from lanemon.measure.records import (AssembledEvent, EventStore, OpenTokensEvent, RequestRecord, StoredAssembled,
                                     StoredEvent, assemble)
from scripted_server import DONE, ScriptedServer, sse_head

CHAT = "/v1/chat/completions"
P = b'data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"'
S = b'"},"finish_reason":null}]}\n\n'
END = P + b'"},"finish_reason":"length"}]}\n\n'


def _body(tokens: int, escaped: bool) -> list:
    """A stream of *tokens* content chunks: plain ones (the reader's template path) or each with an escape (the
    general parser's path)."""
    mid = (lambda i: f"\\u00e9{i % 97}".encode()) if escaped else (lambda i: f" tok{i % 97}".encode())
    return [sse_head(), b"".join(P + mid(i) + S for i in range(tokens)) + END + DONE]


def _tracked_after(parts: list, kept: list) -> int:
    """Objects the collector tracks after one request whose events the sink *kept*, everything else freed."""
    async def run() -> None:
        client = LaneClient(LaneConfig("X", srv.url, "m"), clock=Clock(), emit=kept.append, stall_timeout=10)
        try:
            await client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=4096))
        finally:
            await client.aclose()

    with ScriptedServer({CHAT: parts}) as srv:
        asyncio.run(run())
    gc.collect()
    return len(gc.get_objects())


@pytest.mark.parametrize("escaped", [False, True], ids=["template", "general"])
def test_kept_token_events_give_the_collector_nothing_to_walk(escaped) -> None:
    """4,000 more token events kept: at most a few dozen more tracked objects (the dataclass events added one
    each: 4,000 more; a token's ``data`` dict of strings is untracked by CPython itself)."""
    _tracked_after(_body(50, escaped), [])  # imports, caches and the first connection out of the way
    small_kept: list = []
    small = _tracked_after(_body(200, escaped), small_kept)
    large_kept: list = []
    large = _tracked_after(_body(4200, escaped), large_kept)
    tokens = [e for e in large_kept if e.kind == TOKEN]
    assert len(tokens) == 4200 and sum(e.kind == TOKEN for e in small_kept) == 200
    assert not any(gc.is_tracked(e) or gc.is_tracked(e.data) for e in tokens)
    assert large - small < 100, (small, large)
    rec = assemble(large_kept)[0]  # the events still assemble their request
    assert rec.outcome == "complete" and len(rec.token_ns) == 4200 and rec.text.endswith(("28", "é28"))


def _packed() -> RequestRecord:
    return RequestRecord("A", "r1", purpose="bench", token_ns=[5, 6, 7], chunk_tokens=[None, None, None],
                         text_parts=["a", "b", "c"], end_ns=9, finish_reason="stop")


def test_every_kind_of_event_is_untracked_and_keeps_what_it_was() -> None:
    ev = Event(1, TOKEN, "A", "r1", {"text": "x"})
    assert ev == Event(t=1, kind=TOKEN, lane="A", req="r1", data={"text": "x"}) != Event(2, TOKEN, "A", "r1")
    assert Event(3, "mark").data == {} and Event(3, "mark").data is not Event(3, "mark").data  # a fresh dict each
    assert ev.to_json_obj() == {"t": 1, "kind": TOKEN, "lane": "A", "req": "r1", "data": {"text": "x"}}
    assert msgspec.convert(ev.to_json_obj(), Event) == ev
    assert pickle.loads(pickle.dumps(ev)) == ev and copy.deepcopy(ev) == ev and copy.copy(ev) == ev
    with pytest.raises(TypeError):
        hash(ev)  # mutable, unhashable, as the dataclass was
    done = Event(9, "done", "A", "r0", {"finish_reason": "stop"})
    ev0 = Event(1, TOKEN, "A", "r0", {"text": "x"})
    store = EventStore([ev0, done, AssembledEvent(9, "done", "A", "r1", {"finish_reason": "stop"}, _packed())])
    store.insert(1, OpenTokensEvent(8, TOKEN, "A", "r2", {}, _packed()))
    read = list(store)
    assert [e.__class__ for e in read] == [StoredEvent, OpenTokensEvent, StoredEvent, StoredAssembled]
    for e in [ev, done, *read]:
        assert isinstance(e, Event) and not gc.is_tracked(e)
    stored, again = read[0], list(store)[0]
    assert stored.data == {"text": "x"} and stored == again and not stored != again  # one decoded, one not: equal
    assert stored != ev0  # another class, as before
    assembled = read[3]
    assert assembled.data == {"finish_reason": "stop"} and list(assembled.record.token_ns) == [5, 6, 7]
    taken = assembled.take_record()
    assert assembled.record is not taken and assembled.record == taken  # a later read decodes a new one
    assert pickle.loads(pickle.dumps(assembled)) == assembled
    assert [(r.req, r.outcome, r.text) for r in assemble(store)] == [("r0", "complete", "x"), ("r1", "complete", "abc")]
