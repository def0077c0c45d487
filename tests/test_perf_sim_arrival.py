"""The simulator's arrival stamp (sim/server/serve.py StampingProtocol): every socket read in one pass of
the event loop is stamped before any of them is parsed, a connection's bytes are parsed in order, and
bytes of a connection that was lost before their turn are dropped, not parsed."""

from __future__ import annotations

import asyncio

import pytest
from uvicorn.protocols.http.h11_impl import H11Protocol

from lanemon.sim.server import serve
from lanemon.sim.server.app import ARRIVALS

REQUEST = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"


@pytest.fixture
def parses(monkeypatch):
    """The h11 parse replaced by a recorder: (peer, bytes, the peers stamped when the parse ran)."""
    calls: list[tuple[tuple[str, int], bytes, frozenset]] = []

    def parse(self, data: bytes) -> None:
        calls.append((tuple(self.client), data, frozenset(ARRIVALS)))

    monkeypatch.setattr(H11Protocol, "data_received", parse)
    monkeypatch.setattr(H11Protocol, "connection_lost", lambda self, exc: None)
    ARRIVALS.clear()
    yield calls
    ARRIVALS.clear()


def _protocols(loop: asyncio.AbstractEventLoop, n: int) -> list:
    cls = serve._protocol()
    out = []
    for i in range(n):
        p = cls.__new__(cls)  # the real class; only the state data_received reads is set
        p.client = ("127.0.0.1", 40000 + i)
        p.cycle = None
        p.loop = loop
        out.append(p)
    return out


def test_a_burst_is_stamped_before_any_request_is_parsed(parses):
    loop = asyncio.new_event_loop()
    try:
        protos = _protocols(loop, 64)
        for p in protos:  # one select pass: the transport calls data_received for every ready socket
            p.data_received(REQUEST)
        assert len(ARRIVALS) == 64
        assert parses == []  # nothing parsed inside the pass
        stamps = [ARRIVALS[tuple(p.client)] for p in protos]
        assert stamps == sorted(stamps)
        loop.run_until_complete(asyncio.sleep(0))
        assert [c[0] for c in parses] == [tuple(p.client) for p in protos]  # parsed in arrival order
        everyone = frozenset(tuple(p.client) for p in protos)
        assert all(seen == everyone for _, _, seen in parses)  # the first parse already saw all 64 stamps
    finally:
        loop.close()


def test_split_request_is_parsed_in_order_and_stamped_once(parses):
    loop = asyncio.new_event_loop()
    try:
        (p,) = _protocols(loop, 1)
        p.data_received(REQUEST[:20])
        first = ARRIVALS[tuple(p.client)]
        p.data_received(REQUEST[20:])
        assert ARRIVALS[tuple(p.client)] == first  # the rest of the same request is not a new arrival
        loop.run_until_complete(asyncio.sleep(0))
        assert b"".join(c[1] for c in parses) == REQUEST
    finally:
        loop.close()


def test_bytes_of_a_lost_connection_are_not_parsed(parses):
    loop = asyncio.new_event_loop()
    try:
        a, b = _protocols(loop, 2)
        a.data_received(REQUEST)
        b.data_received(REQUEST)
        a.connection_lost(None)
        assert tuple(a.client) not in ARRIVALS
        loop.run_until_complete(asyncio.sleep(0))
        assert [c[0] for c in parses] == [tuple(b.client)]
    finally:
        loop.close()


def test_every_connection_sends_its_writes_at_once(monkeypatch):
    """TCP_NODELAY on every accepted connection: with Nagle on, a token written while the previous chunk was
    unacknowledged waited for the client's delayed ACK (up to 40 ms on a kept-alive connection)."""
    import socket

    monkeypatch.setattr(H11Protocol, "connection_made", lambda self, transport: None)
    listener = serve._bind("127.0.0.1", 0)
    client = socket.create_connection(listener.getsockname())
    listener.setblocking(True)
    accepted, _ = listener.accept()
    try:
        assert listener.proto == socket.IPPROTO_TCP  # so asyncio's own transports set it too
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 0  # the kernel's default

        class Transport:
            def get_extra_info(self, name, default=None):
                return accepted if name == "socket" else default

        cls = serve._protocol()
        p = cls.__new__(cls)
        p.connection_made(Transport())
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    finally:
        for s in (accepted, client, listener):
            s.close()
