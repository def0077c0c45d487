"""A minimal SSE server on loopback that streams pre-built chat chunks as fast as the socket takes them.

It isolates *client* cost: the server does no per-token work beyond a write.
Every request gets ``tokens`` content chunks (one token each), a usage chunk and
``[DONE]``, in OpenAI's chat.completion.chunk shape.

Batched (default): the whole stream in one write, so a reader gets many chunks per
read -- the floor of per-token cost, not what a lane does.  Paced (``pace_tok_s``):
one chunk per write (its own HTTP chunk, TCP_NODELAY) every ``1/pace_tok_s`` s, the
way an engine emits tokens -- every token costs the reader a wake-up and a read.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import orjson

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
from rawhttp import read_request  # noqa: E402  (the tests' raw HTTP reader: one header loop for both)


HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def build_parts(tokens: int) -> list[bytes]:
    """The SSE events of one stream, each ``data: ...\\n\\n``."""
    parts = []
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": "bench"}
    role = dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
    parts.append(b"data: " + orjson.dumps(role) + b"\n\n")
    for i in range(tokens):
        c = dict(base, choices=[{"index": 0, "delta": {"content": f" tok{i % 97}"}, "finish_reason": None}])
        parts.append(b"data: " + orjson.dumps(c) + b"\n\n")
    fin = dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": "length"}])
    parts.append(b"data: " + orjson.dumps(fin) + b"\n\n")
    usage = dict(base, choices=[], usage={"prompt_tokens": 5, "completion_tokens": tokens, "total_tokens": tokens + 5})
    parts.append(b"data: " + orjson.dumps(usage) + b"\n\n")
    parts.append(b"data: [DONE]\n\n")
    return parts


def http_chunk(piece: bytes) -> bytes:
    return f"{len(piece):x}\r\n".encode() + piece + b"\r\n"


def build_stream(tokens: int) -> bytes:
    head = HEAD
    parts = build_parts(tokens)
    body = b""
    # HTTP chunked encoding, 64 KiB per HTTP chunk
    raw = b"".join(parts)
    for i in range(0, len(raw), 65536):
        piece = raw[i:i + 65536]
        body += f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
    body += b"0\r\n\r\n"
    return head + body


class Blaster:
    def __init__(self, tokens: int, pace_tok_s: float | None = None) -> None:
        self.payload = build_stream(tokens)
        self.pace_tok_s = pace_tok_s
        self.chunks = [http_chunk(p) for p in build_parts(tokens)]
        self.loop = asyncio.new_event_loop()
        self.port = 0
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self.loop.run_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                if await read_request(reader) is None:
                    return
                if self.pace_tok_s:
                    sock = writer.get_extra_info("socket")
                    if sock is not None:
                        import socket

                        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                    gap = 1.0 / self.pace_tok_s
                    writer.write(HEAD)
                    loop = asyncio.get_running_loop()
                    t_next = loop.time()
                    for c in self.chunks:
                        writer.write(c)
                        await writer.drain()
                        t_next += gap
                        delay = t_next - loop.time()
                        if delay > 0:
                            await asyncio.sleep(delay)
                    writer.write(b"0\r\n\r\n")
                    await writer.drain()
                else:
                    writer.write(self.payload)
                    await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass

    def start(self) -> "Blaster":
        self._thread.start()
        self._ready.wait(5)
        return self
