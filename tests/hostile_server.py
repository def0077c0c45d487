"""A hostile OpenAI-compatible server on loopback, written for the security tests (issue 11).

:class:`HostileServer` is the loopback server of tests/scripted_server.py: a real HTTP/1.1
server (asyncio, in a thread) that hands every request to a handler returning the raw
response as *parts* (bytes written, a float pauses, ``None`` aborts, an iterable of parts is
written as it is produced) and counts the bytes it wrote per path, so a test can prove the
client stopped reading.

:class:`HostileLane` is a handler that behaves like a serving engine -- ``/v1/models``,
streaming and non-streaming completions and chat (tool calls too), ``/metrics`` -- but
echoes a planted secret everywhere a real server might: the ``x-request-id`` header, the
model id, 401 bodies ("Incorrect API key provided: ..."), errors inside a stream, token
text, tool-call arguments and metric labels; and it puts terminal escape sequences and
Rich markup into the same places.  Its knobs turn each behaviour on or off.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from scripted_server import LoopbackServer, Request

ESCAPES = "\x1b]0;pwned-title\x07\x1b[2J\x1b[31m\x9b1m\x1bc"
"""Set the window title, clear the screen, colour, 8-bit CSI, full terminal reset."""
MARKUP = "[/bold][red]x[/red][link=file:///etc/passwd]y[/link]"


HostileServer = LoopbackServer
"""The loopback server (tests/scripted_server.py) under the name the security tests use."""


# ------------------------------------------------------------------------------------------ responses
def head(status: int = 200, content_type: str = "application/json", length: int | None = None,
         extra: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"content-type: {content_type}", "connection: close"]
    if length is not None:
        lines.append(f"content-length: {length}")
    for k, v in (extra or {}).items():
        lines.append(f"{k}: {v}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")


def response(status: int, body: bytes | str | Any, extra: dict[str, str] | None = None,
             content_type: str = "application/json") -> list[bytes]:
    if not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode("utf-8")
    return [head(status, content_type, len(body), extra) + body]


def sse(obj: Any) -> bytes:
    return b"data: " + (obj if isinstance(obj, bytes) else json.dumps(obj).encode()) + b"\n\n"


def endless(piece: bytes, limit: int = 200 << 20) -> Iterable[bytes]:
    """``piece`` again and again, up to ``limit`` bytes (a body that, for the client, never ends)."""
    sent = 0
    while sent < limit:
        yield piece
        sent += len(piece)


def drip(data: bytes, every: float) -> Iterable[Any]:
    """One byte of ``data`` every ``every`` seconds, for ever."""
    for i in itertools.count():
        yield data[i % len(data): i % len(data) + 1]
        yield every


def pings(every: float, text: bytes = b": ping\n\n") -> Iterable[Any]:
    while True:
        yield text
        yield every


# ------------------------------------------------------------------------------------------ the lane
@dataclass
class HostileLane:
    """An OpenAI-compatible lane that echoes ``secret`` and sends escapes wherever it may.

    ``unauthorized_every``: every Nth generation request answers 401 with the secret in the body;
    ``stream_error_every``: every Nth streamed request ends with an error event naming the secret.
    """

    secret: str
    model_id: str | None = None
    echo_in_tokens: bool = True
    unauthorized_every: int = 5
    stream_error_every: int = 7
    tool_calls: bool = True
    words: int = 8
    escapes: bool = True
    counter: itertools.count = field(default_factory=lambda: itertools.count(1))

    def __post_init__(self) -> None:
        if self.model_id is None:
            self.model_id = f"hostile-{self.secret}" + (ESCAPES if self.escapes else "")

    @property
    def request_id(self) -> str:
        return f"req-Bearer {self.secret}"

    def headers(self) -> dict[str, str]:
        return {"x-request-id": self.request_id}

    def __call__(self, req: Request) -> Iterable[Any]:
        path = req.path
        if path.endswith("/models"):
            return response(200, {"object": "list", "data": [{"id": self.model_id, "object": "model"}]},
                            self.headers())
        if path == "/metrics":
            return response(200, self.metrics(), content_type="text/plain; version=0.0.4")
        if path.endswith("/completions"):
            n = next(self.counter)
            body = req.json() if isinstance(req.json(), dict) else {}
            if self.unauthorized_every and n % self.unauthorized_every == 0:
                return response(401, {"error": {"message": f"Incorrect API key provided: {self.secret}. "
                                                           f"{MARKUP}{ESCAPES if self.escapes else ''}",
                                                "type": "invalid_request_error", "code": "invalid_api_key"}},
                                self.headers())
            chat = path.endswith("/chat/completions")
            if not body.get("stream"):
                return self.non_stream(body, chat)
            return self.stream(body, chat, error=bool(self.stream_error_every and n % self.stream_error_every == 0))
        return response(404, {"error": {"message": f"no route {path} for key {self.secret}"}})

    def text(self, i: int) -> str:
        if self.echo_in_tokens and i == 2:
            return f" key={self.secret}"
        if self.escapes and i == 3:
            return " \x1b]0;title-from-a-token\x07x"
        return f" word{i}"

    def non_stream(self, body: dict, chat: bool) -> list[bytes]:
        text = "".join(self.text(i) for i in range(self.words))
        choice: dict[str, Any] = {"index": 0, "finish_reason": "stop"}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
            if body.get("logprobs"):
                choice["logprobs"] = {"tokens": [self.secret], "token_logprobs": [-0.1],
                                      "top_logprobs": [{self.secret: -0.1}]}
        return response(200, {"id": self.secret, "model": self.model_id, "choices": [choice],
                              "usage": {"prompt_tokens": 5, "completion_tokens": self.words}}, self.headers())

    def stream(self, body: dict, chat: bool, error: bool) -> list[Any]:
        parts: list[Any] = [head(200, "text/event-stream", extra=self.headers())]
        max_tokens = body.get("max_tokens") or self.words
        n = max(1, min(self.words, int(max_tokens)))
        if chat and body.get("tools") and self.tool_calls:
            tool = body["tools"][0]["function"]["name"]
            args = json.dumps({"path": f"{self.secret}.txt", "city": "Lisbon"})
            parts.append(sse({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "id": "call-" + self.secret, "type": "function",
                 "function": {"name": tool, "arguments": args}}]}}]}))
            parts.append(sse({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}))
        else:
            for i in range(n):
                t = self.text(i)
                if chat:
                    parts.append(sse({"choices": [{"index": 0, "delta": {"content": t}}]}))
                else:
                    parts.append(sse({"choices": [{"index": 0, "text": t}]}))
                parts.append(0.001)
            if error:
                parts.append(sse({"error": {"message": f"upstream said: Authorization: Bearer {self.secret} "
                                                       f"{MARKUP}{ESCAPES if self.escapes else ''}"}}))
                return parts
            parts.append(sse({"choices": [{"index": 0, "delta": {} if chat else None, "text": "",
                                           "finish_reason": "length" if n == max_tokens else "stop"}]}))
        parts.append(sse({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": n}}))
        parts.append(b"data: [DONE]\n\n")
        return parts

    def metrics(self) -> str:
        label = f"{self.secret}{ESCAPES if self.escapes else ''}"
        return (
            "# TYPE vllm:num_requests_running gauge\n"
            f'vllm:num_requests_running{{model_name="{self.model_id.encode("unicode_escape").decode()}"}} 1\n'
            "# TYPE vllm:num_requests_waiting gauge\n"
            'vllm:num_requests_waiting{model_name="m"} 0\n'
            "# TYPE vllm:request_success_total counter\n"
            f'vllm:request_success_total{{finished_reason="{label.encode("unicode_escape").decode()}"}} 3\n'
            "# TYPE vllm:generation_tokens_total counter\n"
            'vllm:generation_tokens_total{model_name="m"} 100\n'
        )


# ------------------------------------------------------------------------------------------ issue 24: the edges
def gzip_stream(piece: bytes = b"\n", total: int = 1 << 30, block: int = 1 << 20, *, wbits: int = 31,
                encoding: str = "gzip", status: int = 200, content_type: str = "text/event-stream") -> Iterable[bytes]:
    """A chunk-less response whose body is ``piece`` repeated to ``total`` bytes, compressed (gzip by
    default: ``wbits`` 31; 15 is zlib-wrapped deflate) and produced lazily as the client reads: 1 GiB of
    blank lines is about 1 MB on the wire.  The header says ``Content-Encoding: encoding`` whatever the
    client asked."""
    import zlib

    yield head(status, content_type, extra={"content-encoding": encoding})
    comp = zlib.compressobj(9, zlib.DEFLATED, wbits)
    data = piece * max(1, block // len(piece))
    sent = 0
    while sent < total:
        out = comp.compress(data)
        sent += len(data)
        if out:
            yield out
    yield comp.flush()


def gzip_body(payload: bytes, *, status: int = 200, content_type: str = "application/json",
              encoding: str = "gzip") -> list[bytes]:
    """One whole response with ``payload`` gzip-compressed (``Content-Length`` of the compressed bytes)."""
    import gzip

    body = gzip.compress(payload)
    return [head(status, content_type, len(body), {"content-encoding": encoding}) + body]


def redirect(status: int, location: str) -> list[bytes]:
    """A redirect to ``location`` (which lanemon must name and not follow)."""
    return response(status, b"", {"location": location})


def huge_headers(n: int = 20_000) -> list[bytes]:
    """A response with ``n`` headers (about 60 bytes each: 1.2 MB for 20,000) before a small body."""
    lines = "".join(f"x-filler-{i:06d}: {'v' * 40}\r\n" for i in range(n))
    return [b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n", lines.encode(), b"\r\n",
            sse({"choices": [{"index": 0, "text": "x", "finish_reason": "stop"}]}), b"data: [DONE]\n\n"]


def early_hints(n: int = 5_000, then: list[bytes] | None = None) -> list[Any]:
    """``n`` ``103 Early Hints`` interim responses, then ``then`` (a short complete stream by default)."""
    hint = b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n"
    parts: list[Any] = [hint * 100 for _ in range(n // 100)] + [hint * (n % 100)]
    return parts + (then if then is not None else [head(200, "text/event-stream") + sse(
        {"choices": [{"index": 0, "text": "x", "finish_reason": "stop"}]}) + b"data: [DONE]\n\n"])
