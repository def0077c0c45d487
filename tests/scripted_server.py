"""A tiny real HTTP/1.1 server on loopback that sends scripted (often broken) responses.

Used to prove the client survives what real servers do wrong: malformed SSE,
error bodies, connections cut mid-stream.  Each script is a list of raw byte
strings written in order, with optional float pauses between them; ``None``
closes the connection abruptly.
"""

from __future__ import annotations

import asyncio
import threading


class ScriptedServer:
    def __init__(self, scripts: dict[str, list]):
        self.scripts = scripts
        self.loop = asyncio.new_event_loop()
        self.port = None
        self._server = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self._server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()

    async def _handle(self, reader, writer):
        try:
            request_line = await reader.readline()
            length = 0
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b"\n", b""):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if length:
                await reader.readexactly(length)
            path = request_line.split()[1].decode()
            script = self.scripts.get(path) or self.scripts.get("*") or []
            for part in script:
                if part is None:
                    writer.transport.abort()
                    return
                if isinstance(part, float):
                    await asyncio.sleep(part)
                    continue
                writer.write(part)
                await writer.drain()
            writer.close()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass

    def __enter__(self):
        self._thread.start()
        self._ready.wait(5)
        return self

    def __exit__(self, *exc):
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


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
    import json

    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def tok(text: str, finish: str | None = None, index: int = 0) -> bytes:
    """One chat chunk carrying ``text`` (and a finish_reason when given)."""
    return sse({"choices": [{"index": index, "delta": {"content": text}, "finish_reason": finish}]})


def finish(reason: str = "stop") -> bytes:
    return sse({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})


def usage(completion, prompt=3) -> bytes:
    return sse({"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})
