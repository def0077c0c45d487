"""The simulator's trace stamps a token when its write began, not when the write returned.

A client may read (and stamp) a chunk as soon as it is handed to the socket; if the server stamps only
after ``await send(...)`` returns, a busy machine (the server's coroutine resumed late) gives a trace TTFT
*later* than any client could have seen, and a bench checking "measured <= truth" fails for the simulator's
sake (issue 23's CI flake: 13953 tok/s measured against 13931.9 "true").  Here the transport takes 40 ms
per body write, so a stamp taken after the write would be at least 40 ms after the one taken before it.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import orjson

from lanemon.sim.server import create_app

WRITE_S = 0.04


async def _stream_with_slow_writes(app) -> tuple[str, list[float]]:
    """POST a streamed chat request straight into the ASGI app; each body write takes WRITE_S.
    Returns the request id and, per token-carrying body write, when it began (relative to the request's start)."""
    body = orjson.dumps({"messages": [{"role": "user", "content": "hi"}], "stream": True,
                         "max_tokens": 4, "temperature": 0})
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/v1/chat/completions", "raw_path": b"/v1/chat/completions",
             "query_string": b"", "root_path": "", "headers": [(b"content-type", b"application/json"),
                                                                 (b"content-length", str(len(body)).encode())],
             "client": None, "server": ("127.0.0.1", 1)}
    sent = False
    done = asyncio.Event()

    async def receive():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await done.wait()
        return {"type": "http.disconnect"}

    rid, began, t0 = "", [], time.perf_counter()

    async def send(msg):
        nonlocal rid
        if msg["type"] == "http.response.start":
            rid = dict(msg["headers"]).get(b"x-sim-request-id", b"").decode()
        elif msg["type"] == "http.response.body" and msg.get("body"):
            if b'"content":"' in msg["body"] and b'"content":""' not in msg["body"]:  # a token's chunk
                began.append(time.perf_counter() - t0)
            await asyncio.sleep(WRITE_S)  # the transport is slow to take the bytes

    await app(scope, receive, send)
    done.set()
    return rid, began


def test_trace_stamps_a_token_when_its_write_began():
    app = create_app("tensorfold-exl3", time_scale=0.05, seed=0)
    rid, began = asyncio.run(_stream_with_slow_writes(app))
    assert rid and len(began) == 4

    async def trace():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://sim") as c:
            return (await c.get("/sim/trace")).json()["requests"]

    rec = next(r for r in asyncio.run(trace()) if r["id"] == rid)
    assert rec["status"] == "ok" and rec["completion_tokens"] == 4
    times = rec["token_times_s"]
    assert len(times) == 4 and times[0] == rec["ttft_s"]
    # each token's stamp is at or before its write began (the request's t0 is taken a little before ours)
    # and well before the write returned (WRITE_S later); stamped after the write it would be >= began + 40 ms
    for stamp, b in zip(times, began):
        assert stamp <= b + 0.005, (stamp, b)
        assert stamp < b + WRITE_S / 2, (stamp, b)
