"""A lane's response headers, bounded before httpx sees them (issue 24, item 6).

httpx (h11) takes as many ``1xx`` interim responses before the answer as a server sends (5,000
``103 Early Hints`` took 14.8 s, and each one restarts the read timeout), and a header block over
h11's 100 KiB buffer surfaced as "the server closed the connection without a response".
:class:`GuardedStream` wraps each connection's network stream and scans only the bytes of a
response's head (from the request's write to the blank line that ends the final, non-1xx, header
block; after that a read costs one flag test):

* more than :data:`MAX_INTERIM` interim responses -> :class:`InterimFlood`;
* more than :data:`MAX_HEAD` bytes of headers in all (interim ones included) -> :class:`HeadersTooLarge`.

Both are raised out of the read, so httpx closes the connection, and the client names them (class
``malformed``).  Installed with :func:`guard_transport` on httpx's own transport; the stream's other
attributes (``read_ns`` of client/netstamp.py) are those of the stream it wraps.
"""

from __future__ import annotations

import re
import typing

import httpcore
import httpx

MAX_INTERIM = 32
"""Interim (1xx) responses accepted before a request's answer."""
MAX_HEAD = 64 * 1024
"""Bytes of response headers accepted for one request (every interim block and the final one)."""
_END = re.compile(rb"\r?\n\r?\n")


class HeadersTooLarge(Exception):
    """The lane's response headers passed :data:`MAX_HEAD` bytes."""


class InterimFlood(Exception):
    """The lane sent more than :data:`MAX_INTERIM` interim (1xx) responses before its answer."""


class GuardedStream(httpcore.AsyncNetworkStream):
    """A network stream that bounds each response's head (module docstring)."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._scanning = False
        self._head = bytearray()  # the header bytes of the current block not yet ended
        self._head_bytes = 0
        self._interim = 0

    @property
    def read_ns(self) -> int | None:
        """When the last read's bytes arrived (client/netstamp.py); AttributeError, so ``hasattr`` is False,
        when the wrapped stream has no stamps.  A property: read for every chunk of every stream."""
        return self._inner.read_ns

    def __getattr__(self, name: str) -> typing.Any:  # whatever else the wrapped stream offers
        return getattr(self._inner, name)

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = await self._inner.read(max_bytes, timeout)
        if self._scanning and data:
            self._scan(data)
        return data

    def _scan(self, data: bytes) -> None:
        head = self._head
        start = len(head)
        head += data
        pos = max(0, start - 3)
        while True:
            m = _END.search(head, pos)
            if m is None:
                break
            end = m.end()
            self._head_bytes += end
            status = head[9:12] if head[:5] == b"HTTP/" else b""
            del head[:end]
            pos = 0
            if status[:1] == b"1" and status != b"101":
                self._interim += 1
                if self._interim > MAX_INTERIM:
                    self._scanning = False
                    raise InterimFlood(f"the lane sent more than {MAX_INTERIM} informational (1xx) responses "
                                       "before its answer: refused")
                continue
            self._scanning = False  # the final head ended: the rest is body
            head.clear()
            return
        if self._head_bytes + len(head) > MAX_HEAD:
            self._scanning = False
            head.clear()
            raise HeadersTooLarge(f"the lane's response headers are larger than {MAX_HEAD // 1024} KiB: refused")

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not self._scanning:  # a new request on this connection: its response's head is scanned
            self._scanning = True
            self._head.clear()
            self._head_bytes = self._interim = 0
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return GuardedStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """A network backend whose streams are :class:`GuardedStream`."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend) -> None:
        self._inner = inner

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: typing.Iterable[typing.Any] | None = None) -> httpcore.AsyncNetworkStream:
        return GuardedStream(await self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: typing.Iterable[typing.Any] | None = None
                                  ) -> httpcore.AsyncNetworkStream:
        return GuardedStream(await self._inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def guard_transport(transport: httpx.AsyncBaseTransport) -> bool:
    """Give httpx's own transport guarded streams (True); any other transport is left alone."""
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if backend is None or isinstance(backend, GuardedBackend):
        return False
    pool._network_backend = GuardedBackend(backend)
    return True
