"""The streaming client turns every server misbehaviour into a classified error event."""

import asyncio
import socket

import pytest

from lanemon.config import LaneConfig
from lanemon.client.http import LaneClient
from lanemon import events as schema
from lanemon.events import Clock
from scripted_server import ScriptedServer, chunk, json_response, sse_head

CHAT = "/v1/chat/completions"


async def run_one(url, **client_kw):
    events = []
    client = LaneClient(LaneConfig("X", url, "m"), clock=Clock(), emit=events.append, **client_kw)
    try:
        rec = await client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=8))
    finally:
        await client.aclose()
    return rec, events


def kinds(events):
    return [e.kind for e in events]


def test_good_stream_gives_ordered_events():
    script = [sse_head(), chunk("Hel"), chunk("lo"), b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n',
              b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n', b"data: [DONE]\n\n"]
    with ScriptedServer({CHAT: script}) as srv:
        rec, events = asyncio.run(run_one(srv.url))
    assert kinds(events) == ["request", "first_byte", "token", "token", "usage", "done"]
    assert rec.ok and rec.text == "Hello" and rec.completion_tokens == 2
    assert all(a.t <= b.t for a, b in zip(events, events[1:]))


@pytest.mark.parametrize(
    "script, cls, words",
    [
        ([sse_head(), chunk("a"), b"data: {not json\n\n"], schema.ERR_MALFORMED, "invalid JSON"),
        ([sse_head(), b"<html>oops</html>\n"], schema.ERR_MALFORMED, "not an SSE line"),
        ([sse_head(), chunk("a"), chunk("b")], schema.ERR_CUT, "before [DONE]"),
        ([sse_head(), chunk("a"), None], schema.ERR_CUT, ""),
        ([json_response(400, b'{"error":{"message":"logprobs are not supported","type":"invalid_request_error"}}')],
         schema.ERR_HTTP, "logprobs are not supported"),
        ([json_response(503, b"upstream overloaded, try later", "text/plain")], schema.ERR_HTTP,
         "upstream overloaded"),
        ([json_response(500, b"")], schema.ERR_HTTP, "empty body"),
        ([sse_head(), b'data: {"error":{"message":"KV cache exhausted"}}\n\n'], schema.ERR_HTTP, "KV cache exhausted"),
    ],
)
def test_misbehaviour_becomes_a_classified_error(script, cls, words):
    with ScriptedServer({CHAT: script}) as srv:
        rec, events = asyncio.run(run_one(srv.url))
    assert events[-1].kind == schema.ERROR
    assert rec.error.cls == cls and words in rec.error.message
    assert sum(e.kind == schema.ERROR for e in events) == 1


def test_stall_is_a_timeout():
    with ScriptedServer({CHAT: [sse_head(), chunk("a"), 2.0, chunk("b"), b"data: [DONE]\n\n"]}) as srv:
        rec, _ = asyncio.run(run_one(srv.url, stall_timeout=0.3))
    assert rec.error.cls == schema.ERR_TIMEOUT
    assert len(rec.token_ns) == 1  # the token before the stall is kept


def test_closed_port_is_connection_refused():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rec, events = asyncio.run(run_one(f"http://127.0.0.1:{port}/v1"))
    assert rec.error.cls == schema.ERR_CONNECT and "refused" in rec.error.message
    assert kinds(events) == ["request", "error"]


def test_api_key_goes_in_the_header_but_never_in_events(monkeypatch):
    monkeypatch.setenv("LANEMON_TEST_KEY", "sk-planted-9f8e7d")
    seen = {}

    async def go():
        events = []
        lane = LaneConfig("X", "http://127.0.0.1:9/v1", "m", api_key_env="LANEMON_TEST_KEY")
        client = LaneClient(lane, clock=Clock(), emit=events.append)
        seen["auth"] = client.http.headers.get("authorization")
        await client.stream("chat", client.build_body("chat", prompt="hi"))
        await client.aclose()
        return events

    events = asyncio.run(go())
    assert seen["auth"] == "Bearer sk-planted-9f8e7d"
    assert "sk-planted" not in repr([e.to_json_obj() for e in events])
