"""Arrival stamps (client/netstamp.py): bytes are stamped when they reach the process, never out of order."""

from __future__ import annotations

import asyncio
import time

import pytest

from lanemon.bus import EventBus
from lanemon.client.netstamp import StampedStream, StampFloor, floor_for
from lanemon.events import Event


class _Proto:
    def __init__(self) -> None:
        self.got: list[bytes] = []

    def data_received(self, data: bytes) -> None:
        self.got.append(data)


class _Inner:
    """An httpcore stream whose reads return what the protocol queued, at most max_bytes at a time."""

    def __init__(self, proto: _Proto) -> None:
        self.proto = proto
        self.buf = b""

    async def read(self, max_bytes, timeout=None):
        self.buf += b"".join(self.proto.got)
        self.proto.got.clear()
        out, self.buf = self.buf[:max_bytes], self.buf[max_bytes:]
        return out


def test_a_read_carries_the_arrival_of_its_first_byte():
    proto = _Proto()
    s = StampedStream(_Inner(proto), proto)
    proto.data_received(b"aaaa")  # through the patched callback: stamped now
    t_a = time.perf_counter_ns()
    time.sleep(0.002)
    proto.data_received(b"bb")
    t_b = time.perf_counter_ns()
    time.sleep(0.002)

    async def go():
        first = await s.read(3)   # part of the first arrival
        t1 = s.read_ns
        second = await s.read(10)  # the rest of it and the second arrival: stamped with the older
        t2 = s.read_ns
        return first, t1, second, t2

    first, t1, second, t2 = asyncio.run(go())
    assert first == b"aaa" and second == b"abb"
    assert t1 <= t_a and t2 == t1  # the bytes' arrival, not the time of the read (4 ms later)
    assert time.perf_counter_ns() - t1 > 3_000_000
    proto.data_received(b"c")
    assert asyncio.run(s.read(10)) == b"c" and t_a < s.read_ns <= time.perf_counter_ns()
    assert s.read_ns > t_b


def test_the_floor_follows_the_bus_and_wraps_other_emitters():
    bus = EventBus()
    floor, emit = floor_for(bus.publish)
    assert emit == bus.publish and floor_for(bus.publish)[0] is floor  # one floor per bus
    bus.publish(Event(500, "mark", None, None, {}))
    bus.publish(Event(300, "mark", None, None, {}))
    assert floor.t == 500
    got: list = []
    f2, wrapped = floor_for(got.append)
    wrapped(Event(42, "token", "A", "r", {}))
    assert f2.t == 42 and len(got) == 1 and isinstance(f2, StampFloor)


@pytest.mark.slow
def test_many_streams_are_stamped_no_later_than_their_task_and_recorded_in_order():
    """64 streams at once against the simulator: every token's stamp is at or before the moment its task
    parsed it, and the events the bus delivers never go back in time."""
    import sys

    from lanemon.client.http import LaneClient
    from lanemon.config import LaneConfig
    from lanemon.events import Clock

    sys.path.insert(0, "tests")
    from simproc import SimProcess

    async def run(url):
        bus = EventBus()
        events: list[Event] = []
        parsed: list[int] = []  # when each token event was delivered (task time)
        clock = Clock()
        bus.subscribe(events.append)
        bus.subscribe(lambda ev: parsed.append(clock.now()) if ev.kind == "token" else None)
        client = LaneClient(LaneConfig("A", url), clock=clock, emit=bus.publish)
        backend = client.http._transport._pool._network_backend  # the header guard (client/guard.py) wraps it
        assert type(getattr(backend, "_inner", backend)).__name__ == "StampingBackend"
        body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": True}
        try:
            recs = await asyncio.gather(*(client.stream("chat", dict(body)) for _ in range(64)))
        finally:
            await client.aclose()
        return recs, events, parsed

    with SimProcess("tensorfold-exl3", 0.05) as sim:
        recs, events, parsed = asyncio.run(run(sim.url))
    assert all(r.ok for r in recs)
    ts = [e.t for e in events]
    assert ts == sorted(ts)
    tokens = [e.t for e in events if e.kind == "token"]
    assert len(tokens) == len(parsed) == 64 * 8
    assert all(t <= p for t, p in zip(tokens, parsed))
    # and some are earlier than their task's turn: the stamps are the arrivals', not the parse's
    assert sum(p - t > 50_000 for t, p in zip(tokens, parsed)) > 0
