"""Issue 11 item 5: every non-stream body is capped, every request ends (deadline, progress rule),
a huge model id is cut before it is recorded, and the dashboard shows a request without progress."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from hostile_server import HostileLane, HostileServer, drip, endless, head, pings, sse

from lanemon import events as schema
from lanemon.client.http import LaneClient
from lanemon.client.prom import MetricsScraper
from lanemon.config import LaneConfig, ProbeConfig
from lanemon.events import Clock, Event
from lanemon.folds.dashboard import SessionState
from lanemon.recording.writer import Recorder, make_header
from lanemon.sessions.sources import LiveSession

MODELS = [head(200, "application/json"), b'{"object":"list","data":[{"id":"m","object":"model"}', b"]}"]
MiB = 1 << 20
GUARD_S = 20.0  # a test that still waits after this has failed (the old code hangs for ever)


def lane_of(srv, **kw) -> LaneConfig:
    return LaneConfig("H", srv.url, "m", **kw)


async def with_client(lane: LaneConfig, fn, **client_kw):
    events: list[Event] = []
    client = LaneClient(lane, clock=Clock(), emit=events.append, **client_kw)
    try:
        return await asyncio.wait_for(fn(client), GUARD_S), events
    finally:
        await client.aclose()


def one_stream(client: LaneClient):
    return client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=8))


# ------------------------------------------------------------------------------ bodies
def test_an_endless_models_body_is_refused_at_its_cap():
    with HostileServer(lambda req: [head(200), b'{"data":[', endless(b'{"id":"m"},' * 6000)]) as srv:
        data, _ = asyncio.run(with_client(LaneConfig("H", srv.url), lambda c: c.probe_models()))
        sent = srv.sent["/v1/models"]
    assert data.ok is False and data.cls == schema.ERR_MALFORMED and "larger than" in data.message
    assert sent < 32 * MiB  # lanemon stopped reading (the server would have sent 200 MiB)


def test_an_endless_non_streaming_answer_is_refused_at_its_cap():
    with HostileServer(lambda req: [head(200), b'{"choices":[{"text":"', endless(b"x" * 65536)]) as srv:
        async def post(c):
            return await c.post_json("completions", {"model": "m", "prompt": "hi", "stream": False})
        (status, obj, _secs, err), _ = asyncio.run(with_client(lane_of(srv), post))
        sent = srv.sent["/v1/completions"]
    assert obj is None and "larger than" in err
    assert sent < 64 * MiB


def test_an_endless_metrics_body_is_refused_at_its_cap():
    with HostileServer(lambda req: [head(200, "text/plain"), endless(b"vllm:num_requests_running 1\n" * 2000)]) as srv:
        events: list[Event] = []

        async def scrape():
            import httpx
            async with httpx.AsyncClient() as http:
                scraper = MetricsScraper("H", srv.url, http, clock=Clock(), emit=events.append)
                return await asyncio.wait_for(scraper.scrape(), GUARD_S)
        data = asyncio.run(scrape())
        sent = srv.sent["/metrics"]
    assert data.ok is False and "larger than" in data.message
    assert sent < 32 * MiB


def test_a_models_body_dripping_for_ever_ends_at_the_deadline():
    with HostileServer(lambda req: [head(200), drip(b'{"data":[', 0.05)]) as srv:
        t0 = time.monotonic()
        data, _ = asyncio.run(with_client(LaneConfig("H", srv.url, deadline=1.0), lambda c: c.probe_models()))
    assert data.ok is False and data.cls == schema.ERR_TIMEOUT
    assert time.monotonic() - t0 < 10


# ------------------------------------------------------------------------------ streams
@pytest.mark.parametrize("keepalive", [pings(0.05), drip(b'data: {"choices":[{"delta":{"content":"x"}}]}\n\n', 0.05)],
                         ids=["ping-comments", "one-byte-drip"])
def test_keepalive_bytes_do_not_keep_a_request_alive(keepalive):
    script = lambda req: MODELS if req.path.endswith("/models") else [head(200, "text/event-stream"), keepalive]  # noqa: E731
    with HostileServer(script) as srv:
        t0 = time.monotonic()
        rec, events = asyncio.run(with_client(lane_of(srv, timeout=1.0), one_stream))
        took = time.monotonic() - t0
    assert rec.error.cls == schema.ERR_STALLED, rec.error
    assert "keep-alive" in rec.error.message
    assert took < 10
    assert [e.kind for e in events][-1] == schema.ERROR


def test_a_stream_that_never_ends_is_cut_at_the_request_deadline():
    def tokens():
        while True:
            yield sse({"choices": [{"index": 0, "delta": {"content": " tok"}}]})
            yield 0.05
    with HostileServer(lambda req: [head(200, "text/event-stream"), tokens()]) as srv:
        t0 = time.monotonic()
        rec, _ = asyncio.run(with_client(lane_of(srv, timeout=30.0, deadline=1.5), one_stream))
        took = time.monotonic() - t0
    assert rec.error.cls == schema.ERR_TIMEOUT and "deadline" in rec.error.message
    assert len(rec.token_ns) >= 5 and took < 10  # it was streaming: the deadline, not the stall rule, ended it


def test_progress_resets_the_stall_window():
    """Tokens every 0.4 s for 3 s with a 1 s stall window: slow, but progressing; it completes."""
    def tokens():
        for _ in range(8):
            yield sse({"choices": [{"index": 0, "delta": {"content": " tok"}}]})
            yield b": ping\n\n"
            yield 0.4
        yield sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        yield b"data: [DONE]\n\n"
    with HostileServer(lambda req: [head(200, "text/event-stream"), tokens()]) as srv:
        rec, _ = asyncio.run(with_client(lane_of(srv, timeout=1.0), one_stream))
    assert rec.error is None and len(rec.token_ns) == 8


# ------------------------------------------------------------------------------ recording size
def test_a_5_mb_model_id_is_cut_before_it_is_recorded(tmp_path):
    huge = "m" * (5 * MiB)
    lane = HostileLane("sk-hostile-bounds-0a1b2c3d4e", model_id=huge, unauthorized_every=0, stream_error_every=0,
                       escapes=False)
    with HostileServer(lane) as srv:
        recorder = Recorder(tmp_path / "live.jsonl", make_header("live", [{"name": "H", "url": srv.url}]))
        session = LiveSession([LaneConfig("H", srv.url)], probe=ProbeConfig(interval=0.05, max_tokens=4),
                              recorder=recorder)

        async def run():
            task = asyncio.create_task(session.run())
            deadline = time.monotonic() + GUARD_S
            while recorder.events < 40 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            session.stop()
            await task
        asyncio.run(run())
        session.close()
        sent_models = sum(1 for r in srv.requests if r.path.endswith("/models"))
    size = recorder.path.stat().st_size
    assert sent_models >= 3 and size < 1 * MiB, (sent_models, size)
    lines = [json.loads(line) for line in recorder.path.read_text().splitlines()[1:]]
    models = {ln["data"]["model"] for ln in lines if ln["kind"] == "probe" and ln["data"].get("model")}
    assert models and all(len(m) <= 200 and m.endswith("…") for m in models)
    # and the requests still went out with the model id the server named
    assert any(r.path.endswith("/completions") and len(r.body) > 5 * MiB for r in srv.requests)


# ------------------------------------------------------------------------------ the dashboard
def test_the_dashboard_fold_shows_a_request_without_progress_as_stalled():
    st = SessionState()
    s = 1_000_000_000
    st.apply(Event(0, schema.REQUEST, "A", "A-1", {"endpoint": "chat"}))
    st.apply(Event(1 * s, schema.FIRST_BYTE, "A", "A-1", {"status": 200}))
    st.apply(Event(2 * s, schema.TOKEN, "A", "A-1", {"text": "x"}))
    st.apply(Event(3 * s, schema.REQUEST, "A", "A-2", {"endpoint": "chat"}))
    for t in range(4, 40):  # A-2 streams on; A-1 gets nothing more (keep-alives make no event)
        st.apply(Event(t * s, schema.TOKEN, "A", "A-2", {"text": "y"}))
    lane = st.lanes["A"]
    assert lane.in_flight == 2
    assert lane.stalled(st.last_t) == (1, pytest.approx(37.0))
    st.apply(Event(40 * s, schema.ERROR, "A", "A-1", {"cls": schema.ERR_STALLED, "message": "no data"}))
    assert lane.stalled(st.last_t) == (0, 0.0) and lane.in_flight == 1
