"""Issue 37, one model per event: a lane's identity, a request, its first byte, a token, an error and a note each have
one typed model (results/requests.py); the writers build the event from it and the recording checker is made from
it (recording/schema.py ``checker``), so no event kind is checked by a hand-written Struct any more."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import msgspec
import orjson
import pytest

from lanemon import events as schema
from lanemon.client.http import LaneClient, retry_note
from lanemon.config import LaneConfig
from lanemon.events import Clock
from lanemon.recording.schema import DATA_SCHEMAS, BadRow, checker, decode_event
from lanemon.results import requests as R
from lanemon.results.readings import event_data
from scripted_server import DONE, ScriptedServer, sse, sse_head

CHAT = "/v1/chat/completions"
SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"


def names(cls) -> set[str]:
    return {f.encode_name for f in msgspec.structs.fields(cls)}


def strict(model: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """``model`` refusing a key it does not name: what a writer writes must be the model's."""
    return type(f"Strict{model.__name__}", (model,), {}, forbid_unknown_fields=True)


def line(kind: str, data: dict) -> bytes:
    return orjson.dumps({"t": 1, "kind": kind, "lane": "A", "req": "A-1", "data": data})


def test_every_kind_is_checked_by_the_checker_of_its_one_model():
    assert set(DATA_SCHEMAS) == schema.ALL_KINDS
    for kind, models in R.MODELS.items():
        assert DATA_SCHEMAS[kind] is checker(*models), kind  # checker() keeps one class per models: the same one
        assert names(DATA_SCHEMAS[kind]) == set().union(*map(names, models))


def test_a_field_only_the_model_names_is_checked_in_recordings():
    """Keys the hand-written checkers never named (a mixed chunk's answer text and reasoning count, a 429's
    Retry-After, a retried connection's note, the connection wait): a wrong type is a skipped line now."""
    bad = [(schema.TOKEN, {"text": "r", "reasoning": True, "content": 7}),
           (schema.TOKEN, {"text": "r", "reasoning": True, "content": "a", "nr": "two"}),
           (schema.ERROR, {"cls": "http", "status": 429, "message": "slow down", "retry_after": 30}),
           (schema.NOTE, {"level": "warning", "retry": "yes", "message": "retried"}),
           (schema.NOTE, {"level": "info", "message": "host lost", "about": ["load_hosts"]}),
           (schema.REQUEST, {"endpoint": "chat", "purpose": "bench", "queued_ms": "late"})]
    for kind, data in bad:
        with pytest.raises(BadRow, match=f"{kind} event"):
            decode_event(line(kind, data))
    assert decode_event(line(schema.TOKEN, {"text": "r", "reasoning": True, "content": "a", "nr": 2})).data["nr"] == 2


def test_unknown_keys_are_kept_and_every_field_is_optional():
    data = {"endpoint": "chat", "purpose": "x", "my_tag": [1, 2], "seed": {"any": "thing"}}
    assert decode_event(line(schema.REQUEST, data)).data == data
    assert decode_event(line(schema.ERROR, {})).data == {}


def test_the_error_and_note_writers_write_the_model_in_its_order():
    assert list(R.error_data("http", "HTTP 500: x", 500)) == ["cls", "status", "message"]
    assert R.error_data("cut", "ended") == {"cls": "cut", "message": "ended"}
    note = retry_note(5, "A", ConnectionResetError(), "A-1").data
    assert list(note) == ["level", "retry", "message"] and note["retry"] is True  # as recordings have held it
    assert R.note_data("hosts", "warning", "load_hosts") == {"level": "warning", "message": "hosts",
                                                             "about": "load_hosts"}


def test_a_lane_event_holds_only_what_the_model_names():
    lane = LaneConfig("A", "http://user:pw@127.0.0.1:1/v1?k=s", "m", cost_per_hour=2.5)
    data = R.lane_data(lane, continuous_usage=False)
    assert data == {"name": "A", "url": "http://127.0.0.1:1/v1", "model": "m", "cost_per_hour": 2.5,
                    "continuous_usage": False}
    assert list(R.lane_data(LaneConfig("B", "http://h/v1"), model="learnt")) == ["name", "url", "model"]

    class Leaky(LaneConfig):
        def public(self):
            return {**super().public(), "api_key": "sk-x"}

    with pytest.raises(TypeError):  # a key added to the lane's public identity must be added to the model first
        R.lane_data(Leaky("A", "http://h/v1"))


def _mixed_stream() -> list:
    def u(ct: int, rt: int) -> dict:
        return {"prompt_tokens": 3, "completion_tokens": ct, "total_tokens": 3 + ct,
                "completion_tokens_details": {"reasoning_tokens": rt}}

    def chunk(delta: dict, usage: dict, finish: str | None = None) -> bytes:
        return sse({"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": usage})

    return [sse_head(), chunk({"reasoning_content": "think "}, u(2, 2)),
            chunk({"reasoning_content": "done ", "content": "The "}, u(5, 3)),
            chunk({}, u(6, 3)),  # a token with no text: usage rose
            chunk({"tool_calls": [{"index": 0, "function": {"name": "f", "arguments": "{}"}}]}, u(8, 3)),
            chunk({"content": "end"}, u(9, 3), "stop"), DONE]


async def _run(url: str):
    events = []
    client = LaneClient(LaneConfig("X", url, "m"), clock=Clock(), emit=events.append, stall_timeout=10)
    client.continuous_usage = True
    try:
        rec = await client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=16),
                                  purpose="bench", meta={"bench": "decode", "cell": "C1"})
    finally:
        await client.aclose()
    return rec, events


def test_the_stream_writes_every_request_event_as_its_model():
    """The token dicts of the reader's hot path (client/sse.py writes them literally) hold only what
    :class:`TokenChunk` names, of its types; the request event is the model's keys, then the tags, then
    ``queued_ms``."""
    with ScriptedServer({CHAT: _mixed_stream()}) as srv:
        rec, events = asyncio.run(_run(srv.url))
    assert rec.ok
    tokens = [ev.data for ev in events if ev.kind == schema.TOKEN]
    assert {k for d in tokens for k in d} == {"text", "reasoning", "content", "nr", "blank", "tool_calls", "n"}
    for d in tokens:
        msgspec.convert(d, strict(R.TokenChunk))
    msgspec.convert(next(ev.data for ev in events if ev.kind == schema.FIRST_BYTE), strict(R.FirstByte))
    sent = next(ev.data for ev in events if ev.kind == schema.REQUEST)
    assert list(sent) == ["endpoint", "purpose", "model", "max_tokens", "continuous_usage", "prompt_chars", "prompt",
                          "bench", "cell", "queued_ms"]
    own = {k: v for k, v in sent.items() if k not in ("bench", "cell")}
    assert msgspec.convert(own, strict(R.RequestSent)).prompt == "hi"
    assert msgspec.convert(sent, R.RequestTags).cell == "C1"


def test_a_refusal_with_retry_after_is_the_error_model():
    body = b'{"error":{"message":"rate limited"}}'
    head = (f"HTTP/1.1 429 X\r\ncontent-type: application/json\r\nretry-after: 7\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode()
    with ScriptedServer({CHAT: [head + body]}) as srv:
        rec, events = asyncio.run(_run(srv.url))
    err = events[-1]
    assert err.kind == schema.ERROR and list(err.data) == ["cls", "status", "message", "retry_after"]
    assert err.data == event_data(R.RequestError(cls="http", status=429, message=err.data["message"],
                                                 retry_after="7"))
    assert "rate limited" in err.data["message"] and "(Retry-After: 7)" in err.data["message"]
    assert rec.error == err.data


@pytest.mark.parametrize("name", ["demo.jsonl", "gauntlet.jsonl", "races.jsonl"])
def test_every_recorded_event_of_these_kinds_is_its_model(name):
    """What lanemon wrote in the sample sessions, read back with the model refusing keys it does not name: every
    key a writer writes is the model's (a request's beyond its own keys are its workload's tags)."""
    models = {schema.LANE: strict(R.LaneIdentity), schema.FIRST_BYTE: strict(R.FirstByte),
              schema.TOKEN: strict(R.TokenChunk), schema.ERROR: strict(R.RequestError), schema.NOTE: strict(R.Note)}
    sent = names(R.RequestSent)
    seen = set()
    with open(SAMPLES / name, "rb") as fh:
        fh.readline()
        for raw in fh:
            ev = json.loads(raw)
            kind, data = ev["kind"], ev.get("data") or {}
            if kind in models:
                msgspec.convert(data, models[kind])
                seen.add(kind)
            elif kind == schema.REQUEST:
                msgspec.convert({k: v for k, v in data.items() if k in sent}, strict(R.RequestSent))
                msgspec.convert(data, R.RequestTags)
                seen.add(kind)
    assert {schema.LANE, schema.REQUEST, schema.FIRST_BYTE, schema.TOKEN} <= seen
