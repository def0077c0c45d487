"""Raw HTTP/1.1 on loopback for scripted servers: the tests' hostile servers and bench/_blaster.py (the
bench scripts put tests/ on their path, as for simproc.py)."""

from __future__ import annotations

import asyncio


async def read_request(reader: asyncio.StreamReader) -> tuple[str, bytes] | None:
    """(path, body) of the next HTTP/1.1 request on a connection, or None when the client closed it."""
    line = await reader.readline()
    if not line:
        return None
    length = 0
    while True:
        h = await reader.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":")[1])
    body = await reader.readexactly(length) if length else b""
    return line.split()[1].decode(), body
