"""A response body read straight from its connection's h11 state, without httpx's and httpcore's per-chunk layers.

A streamed token is one network read, and through httpx each read climbs seven nested async iterators (httpx's
``aiter_raw`` and its byte chunker, httpx's bound and transport streams, httpcore's pool stream, its connection
stream, its body loop and its event loop with two exception-mapping context managers per chunk) to reach h11,
which does the HTTP work.  At real pacing -- a token a read, every read a wake-up -- those layers cost more than
the wake-up itself: against a local server sending 48 chunks 10 ms apart, ~570 us of the measuring thread's CPU
per token through httpx on the 2-core VM, ~250 us for a bare asyncio stream reader (docs/PERFORMANCE.md section 9).

:func:`h11_body` does what those layers do, in one loop: ask h11 for the next event, read the connection's
network stream (the same stream, the same read size and read timeout, so arrival stamps and the stall timer are as
before) when h11 needs data, hand each ``Data`` event's bytes on, stop at ``EndOfMessage``.  What the layers do
besides is kept: h11's protocol errors become httpcore's and then httpx's exceptions, with the request attached,
as through httpx; on any error or when the reader is closed early the pool stream is closed (shielded), which
closes the response and gives the connection back to the pool or closes it as h11's state says; at the end the
response is closed as ``aiter_raw`` closes it.  h11 keeps the connection's state, so a connection read this way
is reused (or not) exactly as before, and a reader that stops early (at ``[DONE]``) can let httpx's own stream
read the rest (client/http.finish_body).

Used only when the response's stream is made of exactly the classes of httpx 0.2x / httpcore 1.0 it replaces
(:func:`layers`, checked per response); anything else (a mock transport, HTTP/2, another version) reads through
``aiter_raw`` as before.
"""

from __future__ import annotations

import typing

import httpx

try:  # the private classes this reader stands in for; any of them missing or moved: not used
    import h11
    import httpcore
    from httpcore._async.connection_pool import PoolByteStream
    from httpcore._async.http11 import AsyncHTTP11Connection, HTTP11ConnectionByteStream
    from httpcore._synchronization import AsyncShieldCancellation
    from httpx._client import BoundAsyncStream
    from httpx._exceptions import request_context
    from httpx._transports.default import AsyncResponseStream, map_httpcore_exceptions

    _AVAILABLE = httpcore.__version__.startswith("1.0.")
except ImportError:  # pragma: no cover - another httpx/httpcore
    _AVAILABLE = False

__all__ = ["h11_body", "layers"]


def layers(resp: httpx.Response) -> tuple[typing.Any, typing.Any] | None:
    """(httpcore's pool stream, its HTTP/1.1 connection stream) under ``resp`` when its body comes through
    exactly the layers :func:`h11_body` replaces, not yet read or closed; None otherwise."""
    if not _AVAILABLE or resp.is_stream_consumed or resp.is_closed:
        return None
    bound = resp.stream
    if type(bound) is not BoundAsyncStream:
        return None
    transport_stream = getattr(bound, "_stream", None)
    if type(transport_stream) is not AsyncResponseStream:
        return None
    pool = getattr(transport_stream, "_httpcore_stream", None)
    if type(pool) is not PoolByteStream or getattr(pool, "_closed", True) is not False:
        return None
    conn_stream = getattr(pool, "_stream", None)
    if type(conn_stream) is not HTTP11ConnectionByteStream or getattr(conn_stream, "_closed", True) is not False:
        return None
    conn = getattr(conn_stream, "_connection", None)
    if type(conn) is not AsyncHTTP11Connection or type(getattr(conn, "_h11_state", None)) is not h11.Connection:
        return None
    if getattr(conn, "_network_stream", None) is None or getattr(conn_stream, "_request", None) is None:
        return None
    return pool, conn_stream


async def h11_body(resp: httpx.Response, found: tuple[typing.Any, typing.Any]) -> typing.AsyncIterator[bytes]:
    """The raw body of ``resp`` (``found`` = :func:`layers` of it), chunk by chunk as the network gives it."""
    pool, conn_stream = found
    conn = conn_stream._connection
    h = conn._h11_state
    net = conn._network_stream
    timeout = (conn_stream._request.extensions.get("timeout") or {}).get("read")
    size = conn.READ_NUM_BYTES
    need_data, data_event, end, paused = h11.NEED_DATA, h11.Data, h11.EndOfMessage, h11.PAUSED
    resp.is_stream_consumed = True  # as aiter_raw: the body is read once
    resp._num_bytes_downloaded = 0
    with request_context(request=resp._request):
        with map_httpcore_exceptions():
            try:
                while True:
                    try:
                        event = h.next_event()
                    except h11.RemoteProtocolError as exc:
                        raise httpcore.RemoteProtocolError(exc) from exc
                    if event is need_data:
                        data = await net.read(size, timeout)
                        if data == b"" and h.their_state == h11.SEND_RESPONSE:
                            raise httpcore.RemoteProtocolError("Server disconnected without sending a response.")
                        h.receive_data(data)
                    elif type(event) is data_event:
                        chunk = bytes(event.data)
                        resp._num_bytes_downloaded += len(chunk)
                        yield chunk
                    elif type(event) is end or event is paused:
                        break
            except BaseException:  # an error, a cancellation, or the reader closed early: as httpcore's streams do
                with AsyncShieldCancellation():
                    await pool.aclose()
                raise
    await resp.aclose()
