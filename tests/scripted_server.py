"""A tiny real HTTP/1.1 server on loopback that sends scripted (often broken) responses.

Used to prove the client survives what real servers do wrong: malformed SSE,
error bodies, connections cut mid-stream.  Each script is a list of raw byte
strings written in order, with optional float pauses between them; ``None``
closes the connection abruptly.  :class:`LoopbackServer` (the request reading
and part writing) also serves tests/hostile_server.py, with a handler per request.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.target).query)

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None


Handler = Callable[[Request], Iterable[Any]]


class LoopbackServer:
    """A real HTTP/1.1 server on 127.0.0.1 (asyncio, in a thread) that answers each request with the parts
    ``handler(request)`` returns: bytes are written, a float pauses that many seconds, ``None`` aborts the
    connection, and an iterable of parts is written as it is produced (an endless body stops when the
    client hangs up).  ``requests`` holds what came in; ``sent`` the bytes written per path."""

    def __init__(self, handler: Handler):
        self.handler = handler
        self.loop = asyncio.new_event_loop()
        self.port: int | None = None
        self.requests: list[Request] = []
        self.sent: Counter[str] = Counter()
        """Bytes written per request path."""
        self._server = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self._server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            if not line:
                return
            method, target, _ = line.decode("latin-1").split(" ", 2)
            headers: dict[str, str] = {}
            while True:
                h = await reader.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, value = h.decode("latin-1").partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            body = await reader.readexactly(length) if length else b""
            req = Request(method, target, headers, body)
            self.requests.append(req)
            await self._write(writer, req.path, self.handler(req))
            writer.close()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass

    async def _write(self, writer: asyncio.StreamWriter, path: str, parts: Iterable[Any]) -> None:
        for part in parts:
            if part is None:
                writer.transport.abort()
                return
            if isinstance(part, float):
                await asyncio.sleep(part)
                continue
            if isinstance(part, (bytes, bytearray)):
                if writer.transport.is_closing():
                    raise ConnectionResetError
                writer.write(part)
                self.sent[path] += len(part)
                await writer.drain()
                continue
            await self._write(writer, path, part)  # a (possibly endless) iterable of parts

    def __enter__(self) -> "LoopbackServer":
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


class ScriptedServer(LoopbackServer):
    """Answers a request for a path with ``scripts[path]`` (else ``scripts["*"]``, else nothing)."""

    def __init__(self, scripts: dict[str, list]):
        self.scripts = scripts
        super().__init__(lambda req: self.scripts.get(req.target) or self.scripts.get("*") or [])


def sse_head(status: int = 200) -> bytes:
    return (f"HTTP/1.1 {status} OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n").encode()


def json_response(status: int, body: bytes, content_type: str = "application/json") -> bytes:
    return (f"HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
            f"connection: close\r\n\r\n").encode() + body


def chunk(text: str) -> bytes:
    return ('data: {"choices":[{"index":0,"delta":{"content":' + repr(text).replace("'", '"') + "}}]}\n\n").encode()


# -- OpenAI stream pieces for the misbehaving-server cases (tests/test_outcomes.py) ---------------------------
DONE = b"data: [DONE]\n\n"


def sse(obj) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def tok(text: str, finish: str | None = None, index: int = 0) -> bytes:
    """One chat chunk carrying ``text`` (and a finish_reason when given)."""
    return sse({"choices": [{"index": index, "delta": {"content": text}, "finish_reason": finish}]})


def finish(reason: str = "stop") -> bytes:
    return sse({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})


def usage(completion, prompt=3) -> bytes:
    return sse({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})
