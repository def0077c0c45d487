"""LinearPool (client/http.py): a burst of requests on warmed connections is assigned without re-examining
the whole pool for every request, and a connection the server closed while idle is still never reused."""

from __future__ import annotations

import asyncio
import threading

import httpcore
import pytest

from lanemon import events as schema
from lanemon.client import http as lane_http
from lanemon.client.http import LaneClient, LinearPool
from lanemon.config import LaneConfig
from lanemon.events import Clock
from lanemon.measure.records import assemble
from rawhttp import read_request

SSE = (b'data: {"choices":[{"index":0,"text":"hi","finish_reason":null}]}\n\n'
       b'data: {"choices":[{"index":0,"text":"","finish_reason":"stop"}],'
       b'"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}\n\ndata: [DONE]\n\n')
MODELS = b'{"object":"list","data":[{"id":"m","object":"model"}]}'


class KeepAliveServer:
    """Answers every request with keep-alive; with ``close_after`` set it closes each connection 0.2 s
    after its response (a server dropping idle connections), and says when it has (``closed``)."""

    def __init__(self, close_after: bool = False, hold_open: bool = False) -> None:
        self.close_after = close_after
        self.hold_open = hold_open  # a chunked stream whose body never ends after its [DONE]
        self.connections = 0
        self.closed = threading.Event()
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", 0))
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert ready.wait(10)

    async def handle(self, reader, writer) -> None:
        self.connections += 1
        try:
            while True:
                request = await read_request(reader)
                if request is None:
                    return
                path, _ = request
                if self.hold_open and not path.endswith("/models"):
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                 b"Transfer-Encoding: chunked\r\n\r\n" + b"%x\r\n" % len(SSE) + SSE + b"\r\n")
                    await writer.drain()
                    await asyncio.sleep(60)  # no terminating chunk
                    return
                if path.endswith("/models"):
                    body, ctype = MODELS, b"application/json"
                else:
                    body, ctype = SSE, b"text/event-stream"
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: " + ctype + b"\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
                if self.close_after:
                    await asyncio.sleep(0.2)  # after the client has put the connection back in its pool
                    writer.close()
                    self.closed.set()
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            return

    def stop(self) -> None:
        async def shut() -> None:
            self.server.close()
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), self.loop).result(5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def _client(port: int, events: list) -> LaneClient:
    return LaneClient(LaneConfig(name="A", url=f"http://127.0.0.1:{port}/v1"), clock=Clock(),
                      emit=events.append)


def test_lane_client_uses_the_linear_pool():
    c = _client(1, [])
    assert type(c.http._transport._pool) is LinearPool
    asyncio.run(c.aclose())


def test_a_burst_on_warmed_connections_checks_each_connection_a_bounded_number_of_times(monkeypatch):
    """httpcore 1.0's own assignment polls every idle connection for every request added (n²/2 polls for
    a wave of n, 2,048 at 64) and counts the pool once per idle connection (n³); here the polls are one
    sweep plus one per reused connection."""
    n = 64
    calls = {"has_expired": 0, "is_idle": 0}
    for name in calls:
        orig = getattr(httpcore.AsyncHTTPConnection, name)

        def counted(self, _orig=orig, _name=name):
            calls[_name] += 1
            return _orig(self)

        monkeypatch.setattr(httpcore.AsyncHTTPConnection, name, counted)
    server = KeepAliveServer()
    events: list = []

    async def run() -> list:
        c = _client(server.port, events)
        try:
            assert await c.warm(n) == n
            for k in calls:
                calls[k] = 0
            body = c.build_body("completions", prompt="hi", max_tokens=1)
            recs = await asyncio.gather(*(c.stream("completions", body) for _ in range(n)))
            return recs
        finally:
            await c.aclose()

    try:
        recs = asyncio.run(run())
    finally:
        server.stop()
    assert all(r.ok for r in recs)
    assert server.connections == n  # every request reused a warmed connection, none opened another
    assert calls["has_expired"] <= 3 * n, calls
    assert calls["is_idle"] <= 3 * n * n, calls


@pytest.mark.parametrize("sweep_s", [1e9, 0.0], ids=["checked-when-picked", "swept"])
def test_a_connection_closed_by_the_server_while_idle_is_not_reused(monkeypatch, sweep_s):
    monkeypatch.setattr(lane_http, "POOL_SWEEP_S", sweep_s)
    server = KeepAliveServer(close_after=True)
    events: list = []

    async def run() -> None:
        c = _client(server.port, events)
        try:
            body = c.build_body("completions", prompt="hi", max_tokens=1)
            assert (await c.stream("completions", body)).ok
            pool = c.http._transport._pool
            assert len(pool.connections) == 1  # kept for reuse
            assert await asyncio.to_thread(server.closed.wait, 10)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 10
            # the server's close has reached this end: the pooled connection reads as readable (EOF)
            while not all(conn.has_expired() for conn in pool.connections):
                assert loop.time() < deadline, "the server's close never reached the client"
                await asyncio.sleep(0.01)
            assert (await c.stream("completions", body)).ok
        finally:
            await c.aclose()

    try:
        asyncio.run(run())
    finally:
        server.stop()
    notes = [e for e in events if e.kind == schema.NOTE and e.data.get("retry")]
    assert notes == []  # the dead connection was never tried: no retry was needed
    assert server.connections == 2
    assert [r.ok for r in assemble(events)] == [True, True]


def test_a_body_that_does_not_end_after_done_is_given_up_quickly():
    """After [DONE] the rest of the body is read only if it comes at once: a stream whose body stays open is
    done at once (its figures untouched) and its connection is closed, not waited on until a timeout."""
    server = KeepAliveServer(hold_open=True)
    events: list = []

    async def run() -> tuple[bool, float, int]:
        c = _client(server.port, events)
        try:
            body = c.build_body("completions", prompt="hi", max_tokens=1)
            t = asyncio.get_running_loop().time()
            rec = await c.stream("completions", body)
            return rec.ok, asyncio.get_running_loop().time() - t, len(c.http._transport._pool.connections)
        finally:
            await c.aclose()

    try:
        ok, took, pooled = asyncio.run(run())
    finally:
        server.stop()
    assert ok
    assert took < 10  # bounded by BODY_END_WAIT (50 ms), not by the server's 60 s
    assert pooled == 0  # an unfinished body's connection is not reused
    assert [e.kind for e in events if e.kind in (schema.DONE, schema.ERROR)] == [schema.DONE]
