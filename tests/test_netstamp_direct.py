"""StampedStream's direct read (client/netstamp.py): anyio's socket queue read without a cancel scope per
read must behave as httpcore's own read does -- the same bytes, the same end of stream, the same errors,
the read timeout, flow control and cancellation -- against real sockets."""

from __future__ import annotations

import asyncio
import socket
import struct
import time

import httpcore
import pytest

from lanemon.client.netstamp import StampedStream, StampingBackend


async def _serve(handler):
    """A local TCP server running ``handler(reader, writer)`` per connection; returns (server, port)."""
    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


async def _held_server():
    """A local server that sends nothing until ``hold`` is set, then closes; returns (server, port, hold)."""
    hold = asyncio.Event()

    async def handler(reader, writer):
        await hold.wait()
        writer.close()

    server, port = await _serve(handler)
    return server, port, hold


async def _connect(port: int, direct: bool) -> StampedStream:
    stream = await StampingBackend().connect_tcp("127.0.0.1", port, timeout=5)
    assert isinstance(stream, StampedStream)
    if not direct:
        stream._sock = None  # through httpcore's AnyIOStream.read, as before
    return stream


def test_this_install_reads_directly():
    async def go():
        async def handler(reader, writer):
            writer.close()

        server, port = await _serve(handler)
        async with server:
            s = await _connect(port, direct=True)
            try:
                return s._sock
            finally:
                await s.aclose()

    assert asyncio.run(go()) is not None  # the pinned anyio/httpcore: the fast path is the one taken


async def _outcome(port: int, direct: bool, max_bytes: int, timeout: float | None, reads: int = 1000):
    """Everything a reader sees: the bytes, b"" reads, then the exception type that ended it (if any)."""
    s = await _connect(port, direct)
    got: list[bytes] = []
    end = None
    try:
        for _ in range(reads):
            data = await s.read(max_bytes, timeout)
            got.append(data)
            if not data:
                break
    except Exception as e:  # noqa: BLE001 -- the type is the outcome compared
        end = type(e)
    finally:
        await s.aclose()
    return got, end


@pytest.mark.parametrize("max_bytes", [3, 7, 65536])
def test_the_same_bytes_and_end_of_stream_as_through_httpcore(max_bytes):
    chunks = [b"data: %d\n\n" % i * (1 + i % 5) for i in range(40)]

    async def handler(reader, writer):
        for i, c in enumerate(chunks):
            writer.write(c)
            await writer.drain()
            if i % 7 == 0:
                await asyncio.sleep(0.002)
        writer.close()

    async def go():
        server, port = await _serve(handler)
        async with server:
            return [await _outcome(port, direct, max_bytes, 5.0) for direct in (True, False)]

    (direct, d_end), (ref, r_end) = asyncio.run(go())
    assert b"".join(direct) == b"".join(chunks) == b"".join(ref)
    assert direct[-1] == b"" and ref[-1] == b"" and d_end is r_end is None
    assert max(map(len, direct)) <= max_bytes


def test_a_reset_connection_is_a_read_error_as_through_httpcore():
    async def handler(reader, writer):
        writer.write(b"partial")
        await writer.drain()
        await asyncio.sleep(0.05)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
        writer.transport.abort()

    async def go():
        server, port = await _serve(handler)
        async with server:
            return [await _outcome(port, direct, 65536, 5.0) for direct in (True, False)]

    (direct, d_end), (ref, r_end) = asyncio.run(go())
    assert b"".join(direct) == b"partial" == b"".join(ref)
    assert d_end is r_end is httpcore.ReadError


def test_a_read_closed_under_it_is_a_read_error_as_through_httpcore():
    async def go():
        server, port, hold = await _held_server()
        async with server:
            ends = []
            for direct in (True, False):
                s = await _connect(port, direct)
                await s._inner._stream.aclose()  # the socket closed by its own side, no bytes queued
                try:
                    await s.read(100, 1.0)
                    ends.append(None)
                except Exception as e:  # noqa: BLE001
                    ends.append(type(e))
            hold.set()
            return ends

    assert asyncio.run(go()) == [httpcore.ReadError, httpcore.ReadError]


@pytest.mark.parametrize("direct", [True, False])
def test_a_silent_server_is_a_read_timeout(direct):
    async def go():
        hold = asyncio.Event()

        async def handler(reader, writer):
            writer.write(b"x")
            await writer.drain()
            await hold.wait()
            writer.close()

        server, port = await _serve(handler)
        async with server:
            s = await _connect(port, direct)
            assert await s.read(100, 1.0) == b"x"
            t0 = time.perf_counter()
            with pytest.raises(httpcore.ReadTimeout):
                await asyncio.wait_for(s.read(100, 0.1), 5)  # a read that ignored its timeout fails here
            waited = time.perf_counter() - t0
            hold.set()
            await s.aclose()
            return waited

    assert 0.09 <= asyncio.run(go()) < 3.0  # bounded by the timeout given, not sooner


def test_the_socket_is_read_only_while_a_read_waits():
    """Flow control as anyio's: between reads the transport is paused, so a server that sends megabytes
    to a reader that stopped reading fills the kernel's buffers, not this process's memory."""

    async def go():
        async def handler(reader, writer):
            for _ in range(64):
                writer.write(b"z" * 65536)  # 4 MB
            try:
                await asyncio.wait_for(writer.drain(), 5)
            except (asyncio.TimeoutError, ConnectionError):
                pass
            writer.close()

        server, port = await _serve(handler)
        async with server:
            s = await _connect(port, direct=True)
            first = await s.read(65536, 5.0)
            await asyncio.sleep(0.3)  # the server goes on sending; nobody reads
            queued = sum(map(len, s._protocol.read_queue))
            total = len(first)
            while True:
                data = await s.read(65536, 5.0)
                if not data:
                    break
                total += len(data)
            await s.aclose()
            return queued, total

    queued, total = asyncio.run(go())
    assert total == 64 * 65536
    assert queued <= 2 * 262144, queued  # a read or two of the socket, not the 4 MB sent meanwhile


def test_a_waiting_read_is_cancelled_and_the_transport_paused():
    async def go():
        server, port, hold = await _held_server()
        async with server:
            s = await _connect(port, direct=True)
            task = asyncio.create_task(s.read(100, None))
            await asyncio.sleep(0.05)
            assert not task.done()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            reading = s._sock._transport.is_reading()
            hold.set()
            await s.aclose()
            return reading

    assert asyncio.run(go()) is False
