"""Issue 24 item 3: viewer slots belong to viewers.  Connections that never say hello live in a small
pre-authentication budget; a crowd of them, reopened as soon as they are closed, cannot keep out the
viewer with the token, and their refusals are summed up on the publisher's screen, not one notice each."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from lanemon.public_lane import PublicLane
from lanemon.bus import EventBus
from lanemon.share import protocol as P
from lanemon.share.client import RemoteSource
from lanemon.share.protocol import ShareError
from lanemon.share.server import Publisher


class FakeSource:
    mode = "live"

    def __init__(self):
        self.bus = EventBus()
        self.lanes = [PublicLane("A", "http://127.0.0.1:1/v1", "m")]


async def silent_crowd(url: str, n: int, stop: asyncio.Event, opened: list[int]) -> None:
    """``n`` websockets that never say hello, each reopened as soon as it is closed."""
    async def one():
        while not stop.is_set():
            try:
                async with connect(url, open_timeout=5, close_timeout=0.2) as ws:
                    opened[0] += 1
                    stop_wait = asyncio.ensure_future(stop.wait())
                    closed = asyncio.ensure_future(ws.wait_closed())
                    await asyncio.wait({stop_wait, closed}, return_when=asyncio.FIRST_COMPLETED)
                    stop_wait.cancel()
                    closed.cancel()
            except (OSError, ConnectionClosed, InvalidHandshake, asyncio.TimeoutError):
                await asyncio.sleep(0.01)
    await asyncio.gather(*(one() for _ in range(n)))


async def test_sixteen_silent_sockets_reopened_do_not_lock_out_the_viewer():
    notices: list[str] = []
    src = FakeSource()
    async with Publisher(src, port=0, hello_timeout=1.0,  # the grace: 0.5 s, ample for a hello on a busy machine
                         on_notice=lambda level, msg: notices.append(msg)) as pub:
        stop = asyncio.Event()
        opened = [0]
        crowd = asyncio.ensure_future(silent_crowd(pub.url, 16, stop, opened))
        try:
            deadline = time.monotonic() + 10
            while opened[0] < 16 and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            joined = 0
            for _ in range(9):  # the case: refused 9 times out of 9
                viewer = RemoteSource(pub.url, pub.token)
                await viewer.connect()
                joined += 1
                await viewer.aclose()
                await asyncio.sleep(0.3)  # ~3 s under attack: several rounds of the crowd closed and back
        finally:
            stop.set()
            await asyncio.wait_for(crowd, 10)
    assert joined == 9
    assert opened[0] > 16  # the crowd was closed and came back
    assert pub.stats["refused"] >= opened[0] - 16 and pub.stats["evicted"] > 0
    refusal_notices = [m for m in notices if "refused" in m]
    assert 1 <= len(refusal_notices) <= 2, refusal_notices  # summed up, not one a connection (961 before)
    assert "connection" in refusal_notices[0] and "no hello in time" in refusal_notices[0]


async def test_the_budget_never_holds_more_than_its_limits():
    src = FakeSource()
    async with Publisher(src, port=0, hello_timeout=5.0, max_pending=6, max_pending_per_address=3) as pub:
        socks = [await connect(pub.url) for _ in range(10)]
        await asyncio.sleep(P.HELLO_GRACE_S + 0.3)  # past the grace: all ten are silent ones
        assert len(pub._unauthed) <= 3  # all from 127.0.0.1: its own three, the oldest closed
        closed = 0
        for ws in socks[:7]:
            try:
                await asyncio.wait_for(ws.recv(), 2)
            except ConnectionClosed as exc:
                closed += 1
                assert exc.rcvd is not None and exc.rcvd.code == P.CLOSE_TRY_AGAIN
                assert exc.rcvd.reason == P.REASON_NO_HELLO
        for _ in range(100):
            if pub.stats["evicted"] == 7:
                break
            await asyncio.sleep(0.02)
        assert closed == 7 and pub.stats["evicted"] == 7
        viewer = RemoteSource(pub.url, pub.token)
        await viewer.connect()
        assert pub.viewers == 1
        await viewer.aclose()
        for ws in socks:
            await ws.close()


async def test_viewer_slots_count_viewers_only():
    """max_viewers=2: two viewers watching and two silent sockets waiting; the third viewer is 'busy'."""
    src = FakeSource()
    async with Publisher(src, port=0, max_viewers=2, hello_timeout=5.0) as pub:
        silent = [await connect(pub.url) for _ in range(2)]
        a, b = RemoteSource(pub.url, pub.token), RemoteSource(pub.url, pub.token)
        await a.connect()
        await b.connect()  # before: the silent sockets held two of the slots
        with pytest.raises(ShareError, match="too many viewers"):
            await RemoteSource(pub.url, pub.token).connect()
        assert pub.stats["busy"] == 1 and pub.viewers == 2
        await a.aclose()
        await b.aclose()
        for ws in silent:
            await ws.close()


async def test_a_handshake_that_never_comes_is_closed_at_the_hello_timeout():
    src = FakeSource()
    async with Publisher(src, port=0, hello_timeout=0.3) as pub:
        loop = asyncio.get_running_loop()
        raw = socket.create_connection(("127.0.0.1", pub.port))
        raw.setblocking(False)
        t0 = time.monotonic()
        data = b"x"
        while data:  # the server closes it (EOF) without a websocket handshake ever starting
            data = await asyncio.wait_for(loop.sock_recv(raw, 1024), 10)
        took = time.monotonic() - t0
        raw.close()
    assert took < 5  # open_timeout follows hello_timeout (websockets' default is 10 s)


async def test_an_oversized_first_frame_is_refused():
    src = FakeSource()
    async with Publisher(src, port=0, hello_timeout=2.0) as pub:
        async with connect(pub.url, max_size=None) as ws:
            await ws.send("x" * (P.MAX_INCOMING + 1))
            with pytest.raises(ConnectionClosed) as info:
                await asyncio.wait_for(ws.recv(), 5)
        assert info.value.rcvd is None or info.value.rcvd.code in (1009, P.CLOSE_BAD_TOKEN)
        assert pub.stats["viewers"] == 0


async def test_a_hostile_publisher_is_as_untrusted_as_a_recording():
    """`lanemon attach` to a publisher that sends escapes in its header, events that do not fit the
    recording schema and an escape in its close reason: the text is inert, the bad events are dropped."""
    import orjson
    from websockets.asyncio.server import serve

    esc = "\x1b]0;pwned\x07\x1b[2J"
    good = {"t": 5, "kind": "token", "lane": "A", "req": "A-1", "data": {"text": "hi"}}
    bad = [{"t": "soon", "kind": "token", "lane": "A", "req": "A-1", "data": {}},
           {"t": 6, "kind": "token", "lane": "A", "req": "A-1", "data": {"text": 12}},
           {"t": 7, "kind": "error", "lane": "A", "req": "A-1", "data": {"cls": ["x"]}},
           "not an object"]

    async def publisher(ws):
        await ws.recv()
        await ws.send(orjson.dumps({"type": "header", "protocol": 1, "lanemon": "9" + esc, "mode": "live" + esc,
                                    "lanes": [{"name": "A" + esc, "url": "http://h/v1" + esc, "model": "m" + esc}]
                                    * 100}).decode())
        await ws.send(orjson.dumps({"type": "events", "snapshot": True, "events": [good, *bad]}).decode())
        await ws.close(4000, "bye" + esc)

    async with serve(publisher, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        viewer = RemoteSource(f"ws://127.0.0.1:{port}", "t")
        got = []
        viewer.bus.subscribe(got.append)
        await viewer.connect()
        await asyncio.wait_for(viewer.run(), 10)
    texts = [viewer.remote_mode, viewer.remote_version, viewer.error or ""]
    texts += [v for lane in viewer.lanes for v in (lane.name, lane.url, lane.model) if isinstance(v, str)]
    texts += [e.data.get("message", "") for e in got if e.kind == "note"]
    assert all("\x1b" not in t and "\x07" not in t for t in texts), texts
    assert len(viewer.lanes) == 64 and viewer.remote_mode == "live"
    assert [e.data for e in got if e.kind == "token"] == [{"text": "hi"}]
    assert viewer.bad_messages == len(bad)
