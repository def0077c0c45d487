"""client/h11_body.py: a body read straight from h11 must give what httpx's ``aiter_raw`` gives -- the same bytes,
the same exceptions, the connection reused or closed as before -- against real local servers, and a lane's stream
must take that path (not the seven layers of ``aiter_raw``)."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from lanemon.client import h11_body
from lanemon.client.encoding import raw_chunks
from lanemon.client.http import LaneClient, finish_body
from lanemon.config import LaneConfig
from lanemon.events import Clock

SSE = b'data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":null}]}\n\n'


def _chunked(parts: list[bytes], end: bool = True) -> bytes:
    body = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)
    return body + (b"0\r\n\r\n" if end else b"")


async def _server(responses: list[bytes], close_after: bool = False, gap: float = 0.0):
    """A local HTTP/1.1 server answering each request on a connection with the next of ``responses`` (raw bytes,
    written in pieces ``gap`` s apart when asked); counts connections."""
    state = {"connections": 0, "next": 0}

    async def handler(reader, writer):
        state["connections"] += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                await reader.readexactly(length)
                raw = responses[min(state["next"], len(responses) - 1)]
                state["next"] += 1
                if gap:
                    for i in range(0, len(raw), 97):
                        writer.write(raw[i:i + 97])
                        await writer.drain()
                        await asyncio.sleep(gap)
                else:
                    writer.write(raw)
                    await writer.drain()
                if close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], state


def _head(extra: bytes = b"Transfer-Encoding: chunked\r\n") -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n" + extra + b"\r\n"


async def _read(port: int, fast: bool, client: httpx.AsyncClient) -> tuple[bytes, str | None]:
    h11_body._AVAILABLE = fast
    try:
        out = bytearray()
        try:
            async with client.stream("POST", f"http://127.0.0.1:{port}/x", content=b"{}") as resp:
                async for chunk in raw_chunks(resp):
                    out += chunk
        except httpx.HTTPError as exc:
            assert exc.request is not None  # the request is attached, as httpx does
            return bytes(out), f"{type(exc).__name__}: {exc}"
        return bytes(out), None
    finally:
        h11_body._AVAILABLE = True


@pytest.mark.parametrize("raw", [
    _head() + _chunked([SSE] * 5),
    _head(b"Content-Length: %d\r\n" % (5 * len(SSE))) + SSE * 5,
    _head() + _chunked([SSE] * 3, end=False),  # cut mid-body: the server closes
    _head() + b"zz\r\n" + SSE,  # a bad chunk size
    _head(b"Content-Length: 500\r\n") + SSE,  # shorter than it said
], ids=["chunked", "length", "cut", "bad-chunk", "short"])
def test_the_same_bytes_and_errors_as_aiter_raw(raw):
    async def go():
        server, port, _ = await _server([raw], close_after=True, gap=0.002)
        async with server:
            got = []
            for fast in (False, True):
                async with httpx.AsyncClient() as client:
                    got.append(await _read(port, fast, client))
            return got

    old, new = asyncio.run(go())
    assert new == old


def test_a_connection_read_to_the_end_is_reused_and_a_cut_one_is_not():
    async def go(fast: bool):
        full = _head() + _chunked([SSE] * 3)
        server, port, state = await _server([full, full, full])
        async with server:
            async with httpx.AsyncClient() as client:
                for _ in range(3):
                    body, err = await _read(port, fast, client)
                    assert err is None and body == SSE * 3
                reused = state["connections"]
                # stopped early (at the first chunk), then the rest read as the client does after [DONE]
                h11_body._AVAILABLE = fast
                try:
                    async with client.stream("POST", f"http://127.0.0.1:{port}/x", content=b"{}") as resp:
                        it = raw_chunks(resp).__aiter__()
                        assert await it.__anext__() == SSE
                        assert await finish_body(resp)
                finally:
                    h11_body._AVAILABLE = True
                body, err = await _read(port, fast, client)
                return reused, state["connections"], err

    assert asyncio.run(go(False)) == asyncio.run(go(True)) == (1, 1, None)


def test_a_lane_stream_reads_its_body_without_aiter_raw(monkeypatch):
    """The lane's own transport (stamps, guard, linear pool) is what ``layers`` recognises: a probe's tokens do
    not climb httpx's iterators (on the code before, every chunk came through ``aiter_raw``)."""
    calls = {"aiter_raw": 0}
    original = httpx.Response.aiter_raw

    def counting(self, *a, **k):
        calls["aiter_raw"] += 1
        return original(self, *a, **k)

    monkeypatch.setattr(httpx.Response, "aiter_raw", counting)
    body = b"".join([b'data: {"id":"c","choices":[{"index":0,"delta":{"content":"t%d"},"finish_reason":null}]}\n\n' % i
                     for i in range(8)])
    end = (b'data: {"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n'
           b'data: {"id":"c","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":8,"total_tokens":11}}\n\n'
           b"data: [DONE]\n\n")

    async def go():
        server, port, state = await _server([_head() + _chunked([body, end])], gap=0.001)
        async with server:
            events = []
            client = LaneClient(LaneConfig("A", f"http://127.0.0.1:{port}/v1", model="m"), clock=Clock(),
                                emit=events.append)
            recs = [await client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=8))
                    for _ in range(2)]
            await client.aclose()
            return recs, events, state["connections"]

    recs, events, connections = asyncio.run(go())
    assert all(r.ok for r in recs), [r.error for r in recs]
    assert [e.data.get("text") for e in events if e.kind == "token"] == [f"t{i}" for i in range(8)] * 2
    assert connections == 1  # the second request reused the connection
    assert calls["aiter_raw"] == 0
