"""No dead pooled connection: a connection the server closed while idle is retried once, visibly.

The server here answers the first request on a connection with keep-alive, then reads the next request
on that same connection and closes it without a byte of response (what a server that drops idle or
broken keep-alive connections does).  A fresh connection is always answered.
"""

from __future__ import annotations

import asyncio
import json
import threading

from lanemon import events as schema
from rawhttp import read_request

from lanemon.client.http import LaneClient
from lanemon.client.prom import MetricsScraper
from lanemon.config import LaneConfig
from lanemon.events import Clock
from lanemon.measure.records import assemble

MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
SSE = (b'data: {"choices":[{"index":0,"text":"hi","finish_reason":null}]}\n\n'
       b'data: {"choices":[{"index":0,"text":"","finish_reason":"stop"}],'
       b'"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}\n\ndata: [DONE]\n\n')
METRICS = b"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 0.0\n"
ANSWER = json.dumps({"choices": [{"index": 0, "text": "hi", "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}}).encode()


class OneShotKeepAlive:
    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.connections = 0
        self.dropped = 0
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", 0))
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait(5)

    async def handle(self, reader, writer):
        self.connections += 1
        first = await read_request(reader)
        if first is None:
            writer.close()
            return
        path, body = first
        if path.endswith("/models"):
            payload, ctype = MODELS, b"application/json"
        elif path.endswith("/metrics"):
            payload, ctype = METRICS, b"text/plain"
        elif json.loads(body or b"{}").get("stream"):
            payload, ctype = SSE, b"text/event-stream"
        else:
            payload, ctype = ANSWER, b"application/json"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nContent-Length: "
                     + str(len(payload)).encode() + b"\r\nConnection: keep-alive\r\n\r\n" + payload)
        await writer.drain()
        if await read_request(reader) is not None:  # the next request on this connection: no answer
            self.dropped += 1
        writer.transport.abort()


def test_a_connection_closed_while_idle_is_retried_once_and_said():
    server = OneShotKeepAlive()
    url = f"http://127.0.0.1:{server.port}/v1"

    async def go():
        events = []
        client = LaneClient(LaneConfig("L", url), clock=Clock(), emit=events.append)
        try:
            assert (await client.probe_models()).ok
            body = client.build_body("completions", prompt="x", max_tokens=1)
            body["stream"] = False
            body.pop("stream_options", None)
            status, obj, _, err = await client.post_json("completions", body)
            rec = await client.stream("completions", client.build_body("completions", prompt="x", max_tokens=1))
            # the health probe and the /metrics scrape are GETs on the same pool: a lane behind a server with
            # a keep-alive timeout (uvicorn's 5 s) showed "cut" health errors until they retried too
            probe = await client.probe_models()
            scraper = MetricsScraper("L", url, client.http, clock=client.clock, emit=events.append)
            scrape = await scraper.scrape()
        finally:
            await client.aclose()
        return events, rec, (status, obj, err), probe, scrape

    events, rec, (status, obj, err), probe, scrape = asyncio.run(go())
    assert rec.ok and rec.text == "hi" and rec.completion_tokens == 1
    assert err is None and status == 200 and obj["choices"][0]["text"] == "hi"
    assert probe.ok and probe.model == "m", probe
    assert scrape.ok, scrape
    assert server.dropped == 4  # every call met a connection the server had closed: every one was retried
    notes = [ev for ev in events if ev.kind == schema.NOTE and ev.data.get("retry")]
    assert len(notes) == 4 and notes[0].req is None and notes[1].req == rec.req
    assert all("retried once on a new connection" in n.data["message"] for n in notes)
    assert "/metrics scrape" in notes[3].data["message"]
    assert [ev.data["ok"] for ev in events if ev.kind == schema.PROBE] == [True, True]
    # the retry is part of the same request: one record, no error event
    assert [r.req for r in assemble(events)] == [rec.req]
    assert not [ev for ev in events if ev.kind == schema.ERROR]
