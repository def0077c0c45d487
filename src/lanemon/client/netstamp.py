"""Stamp response bytes when they reach the process, not when their task gets to run.

A token's time is taken at the network read that brought it (``sse.ReadClock``).  Without help the
earliest moment lanemon can see is when the stream's task resumes after the read, and with many streams
that is late: when 16 first tokens arrive together, the event loop wakes 16 tasks one after another and
the 16th stamps its token after the other 15 were parsed, emitted and recorded (the C64 tail of issue 13).

The event loop hands bytes to a connection's protocol (``data_received``) for every ready socket first,
in one pass straight after ``select``, and runs the tasks afterwards.  :class:`StampingBackend` is
httpcore's asyncio (anyio) network backend with one addition: each plain-TCP connection's protocol
notes ``perf_counter_ns()`` as its bytes arrive, and the stream that httpcore reads (``read_ns``) says
when the bytes of its last read arrived.  ``sse_lines`` uses that time when the response's
``network_stream`` offers it and its own otherwise (TLS connections, custom transports, other
libraries' versions), so the stamp is never later than before, and never earlier than the bytes.

An arrival stamp can be earlier than an event another task emitted meanwhile (a token of a stream woken
later, a mark, a load sample), and a recording's events must stay in time order.  So the stamp given to an
event is never earlier than the latest event already delivered (:class:`StampFloor`): arrivals in the
same pass keep their own, earlier times; a stamp is pulled up only as far as order needs.

It reaches into two private attributes (anyio's ``SocketStream._protocol`` and httpcore's pool's
``_network_backend``); if either is missing, nothing is patched and the old stamp is used.

The same stream also reads the socket for httpcore more cheaply (issue 23: at C64, a tenth of lanemon's CPU
went to the anyio cancel scope httpcore opens around every read for its read timeout, ``anyio.fail_after``,
even when the bytes are already there).  :meth:`StampedStream.read` does what anyio's asyncio
``SocketStream.receive`` does with its protocol's queue -- the same flow control (the transport reads only
while a read waits), the same end-of-stream and error cases mapped to httpcore's exceptions as httpcore
maps them -- and bounds only a read that has to wait, with one ``asyncio.timeout``: the read timeout (the
lane's stall timer) holds as before.  Used only on anyio's asyncio ``SocketStream`` whose protocol has the
queue, the event and the flags it reads (checked once per connection); anything else reads through httpcore.
"""

from __future__ import annotations

import asyncio
import time
import typing
import weakref
from collections import deque

import httpcore
import httpx

__all__ = ["StampFloor", "StampingBackend", "StampedStream", "floor_for", "stamping_transport"]


class StampFloor:
    """The latest event time (session ns) delivered so far: an arrival stamp is never set earlier than it.

    Subscribed to a bus it sees every event in delivery order; :meth:`wrap` puts it in front of another
    emit function (a worker's buffer)."""

    __slots__ = ("t",)

    def __init__(self) -> None:
        self.t = -(1 << 62)

    def __call__(self, ev: typing.Any) -> None:
        if ev.t > self.t:
            self.t = ev.t

    def wrap(self, emit: typing.Callable[[typing.Any], None]) -> typing.Callable[[typing.Any], None]:
        def floored(ev: typing.Any) -> None:
            if ev.t > self.t:
                self.t = ev.t
            emit(ev)

        return floored


_BUS_FLOORS: "weakref.WeakKeyDictionary[typing.Any, StampFloor]" = weakref.WeakKeyDictionary()


def floor_for(emit: typing.Callable[[typing.Any], None]) -> tuple[StampFloor, typing.Callable[[typing.Any], None]]:
    """(the floor, the emit function to use): for ``bus.publish`` the bus's one floor, subscribed to it once
    (every event of the bus counts, marks and load samples too); for anything else a new floor in front of
    ``emit`` (the events that pass through it count)."""
    from lanemon.bus import EventBus

    bus = getattr(emit, "__self__", None)
    if isinstance(bus, EventBus) and getattr(emit, "__name__", "") == "publish":
        floor = _BUS_FLOORS.get(bus)
        if floor is None:
            floor = _BUS_FLOORS[bus] = StampFloor()
            bus.subscribe(floor)
        return floor, emit
    floor = StampFloor()
    return floor, floor.wrap(emit)


class StampedStream(httpcore.AsyncNetworkStream):
    """A network stream whose ``read_ns`` is when the bytes of its last ``read`` arrived (perf_counter_ns)."""

    def __init__(self, inner: httpcore.AsyncNetworkStream, protocol: typing.Any) -> None:
        self._inner = inner
        self._protocol = protocol
        self._arrivals: deque[list[int]] = deque()  # [t_ns, bytes not yet read] per data_received
        self.read_ns: int | None = None
        original = protocol.data_received
        arrivals = self._arrivals
        now = time.perf_counter_ns

        def data_received(data: bytes) -> None:
            arrivals.append([now(), len(data)])
            original(data)

        self._original = original
        protocol.data_received = data_received  # an instance attribute: the transport calls it by lookup
        self._sock = _direct_socket(inner, protocol)
        """anyio's asyncio SocketStream under ``inner`` when its queue can be read directly, else None."""

    def _unpatch(self) -> None:
        if self._protocol is not None:
            self._protocol.data_received = self._original
            self._protocol = None
            self._arrivals.clear()

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._sock is not None and self._protocol is not None:
            data = await self._read_direct(max_bytes, timeout)
        else:
            data = await self._inner.read(max_bytes, timeout)
        q = self._arrivals
        if q and data:
            self.read_ns = q[0][0]  # the first of these bytes arrived then
            n = len(data)
            while n and q:
                if q[0][1] <= n:
                    n -= q.popleft()[1]
                else:
                    q[0][1] -= n
                    n = 0
        else:
            self.read_ns = None
        return data

    async def _read_direct(self, max_bytes: int, timeout: float | None) -> bytes:
        """anyio's ``SocketStream.receive`` under httpcore's ``AnyIOStream.read``, without the cancel scope
        per read: a read that finds bytes queued takes them after one checkpoint (as anyio does); one that
        waits is bounded by ``timeout`` (httpcore.ReadTimeout).  End of stream reads b"" and a broken or
        closed socket raises httpcore.ReadError, as through httpcore."""
        sock = self._sock
        proto = self._protocol
        transport = sock._transport
        if max_bytes < 1:
            raise ValueError("max_bytes must be a positive integer")
        if not proto.read_event.is_set() and not transport.is_closing() and not proto.is_at_eof:
            transport.resume_reading()
            try:
                if timeout is None:
                    await proto.read_event.wait()
                else:
                    try:
                        async with asyncio.timeout(timeout):
                            await proto.read_event.wait()
                    except TimeoutError as e:
                        raise httpcore.ReadTimeout(str(e) or "read timed out") from e
            finally:
                transport.pause_reading()
        else:
            await asyncio.sleep(0)  # anyio's checkpoint: other tasks run, a cancellation lands here
        queue = proto.read_queue
        try:
            chunk = queue.popleft()
        except IndexError:
            if sock._closed:
                raise httpcore.ReadError("the connection was closed") from None
            if proto.exception is not None:
                raise httpcore.ReadError(str(proto.exception)) from proto.exception
            return b""  # end of stream
        if len(chunk) > max_bytes:
            chunk, leftover = chunk[:max_bytes], chunk[max_bytes:]
            queue.appendleft(leftover)
        if not queue:
            proto.read_event.clear()
        return chunk

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        self._unpatch()
        await self._inner.aclose()

    async def start_tls(self, ssl_context, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        self._unpatch()  # TLS records are decrypted in the task: no byte-exact stamps, the plain stream is used
        return await self._inner.start_tls(ssl_context, server_hostname, timeout)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


def _direct_socket(inner: typing.Any, protocol: typing.Any) -> typing.Any:
    """The anyio asyncio SocketStream under httpcore's AnyIOStream ``inner`` when :meth:`StampedStream.read`
    can read its protocol's queue itself (every attribute it uses is there, of the kind it expects); None
    otherwise (httpcore reads)."""
    if type(inner).__name__ != "AnyIOStream" or type(inner).__module__ != "httpcore._backends.anyio":
        return None
    sock = getattr(inner, "_stream", None)
    cls = type(sock)
    if cls.__name__ != "SocketStream" or cls.__module__ != "anyio._backends._asyncio":
        return None
    if getattr(sock, "_protocol", None) is not protocol or not isinstance(getattr(sock, "_closed", None), bool):
        return None
    transport = getattr(sock, "_transport", None)
    if not all(callable(getattr(transport, name, None)) for name in ("is_closing", "resume_reading", "pause_reading")):
        return None
    if not isinstance(getattr(protocol, "read_queue", None), deque) or not isinstance(
            getattr(protocol, "read_event", None), asyncio.Event):
        return None
    if not isinstance(getattr(protocol, "is_at_eof", None), bool) or not hasattr(protocol, "exception"):
        return None
    return sock


class StampingBackend(httpcore.AnyIOBackend):
    """httpcore's anyio backend whose TCP streams carry arrival stamps (:class:`StampedStream`)."""

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.AsyncNetworkStream:
        stream = await super().connect_tcp(host, port, timeout, local_address, socket_options)
        protocol = getattr(getattr(stream, "_stream", None), "_protocol", None)
        if protocol is None or not callable(getattr(protocol, "data_received", None)):
            return stream  # another anyio: no stamps, the reader's own time is used
        return StampedStream(stream, protocol)


def stamping_transport(limits: httpx.Limits) -> httpx.AsyncHTTPTransport | None:
    """httpx's own transport with :class:`StampingBackend`; None when httpx's internals differ."""
    transport = httpx.AsyncHTTPTransport(limits=limits)
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        return None
    pool._network_backend = StampingBackend()
    return transport
