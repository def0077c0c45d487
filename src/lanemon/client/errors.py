"""The client's error taxonomy (pure): a transport exception or an error body becomes the error class of
:mod:`lanemon.events` (connect, timeout, http, malformed, cut, other) and one inert, redacted line; the
exceptions lanemon raises itself for a refused answer (a redirect, a body over its cap).  Used by
:mod:`lanemon.client.http` and the telemetry and /metrics scrapers."""

from __future__ import annotations

import html
import re

import httpx
import orjson

from lanemon import events as schema
from lanemon.client.encoding import DecodeRefused
from lanemon.client.guard import HeadersTooLarge, InterimFlood
from lanemon.client.sse import SSELineTooLong, Stalled
from lanemon.config import public_url
from lanemon.untrusted import ID_LIMIT, MESSAGE_LIMIT, PUBLIC, inert

ERROR_BODY_LIMIT = 64 * 1024


def error_message_from_body(body: bytes, status: int) -> str:
    """The server's own error message from an OpenAI-style (or any) error body."""
    text = body[:ERROR_BODY_LIMIT].decode("utf-8", errors="replace").strip()
    try:
        obj = orjson.loads(body[:ERROR_BODY_LIMIT])
    except orjson.JSONDecodeError:
        obj = None
    if isinstance(obj, dict):
        err = obj.get("error", obj)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:500]
        if isinstance(err, str):
            return err[:500]
        if isinstance(obj.get("detail"), str):
            return obj["detail"][:500]
    if text[:1] == "<":  # an HTML error page (a proxy's 502/503): its <title>, else its text without tags
        m = re.search(r"<title[^>]*>(.*?)</title>", text, re.I | re.S)
        plain = " ".join(html.unescape(m.group(1) if m else re.sub(r"<[^>]*>", " ", text)).split())
        if plain:
            return plain[:300]
    first = text.splitlines()[0] if text else ""
    return first[:300] or f"HTTP {status} with an empty body"


class Redirected(Exception):
    """The lane answered a redirect, which lanemon does not follow (a lane URL must be the final one)."""

    def __init__(self, resp: httpx.Response) -> None:
        self.status = resp.status_code
        super().__init__(redirect_message(resp))


def redirect_message(resp: httpx.Response) -> str:
    """"lane answered 307 -> http://...: ..." with the target resolved, without credentials or query."""
    location = resp.headers.get("location", "")[:2048]
    try:
        target = public_url(str(resp.request.url.join(location))) if location else "(no Location)"
    except (httpx.InvalidURL, ValueError, RuntimeError):
        target = public_url(location)
    return (f"lane answered {resp.status_code} -> {PUBLIC.text(target, ID_LIMIT)}: lanemon does not follow "
            "redirects; use the final URL")


class BodyTooLarge(Exception):
    """A non-streaming body passed its size cap; the client stopped reading it (class malformed)."""



def describe_exception(exc: BaseException, url: str) -> tuple[str, str]:
    """(error class, one-line message) for a transport exception; the URL is quoted without its
    credentials or query, and the message is inert and redacted."""
    cls, msg = _describe(exc, public_url(url))
    return cls, PUBLIC.text(msg, MESSAGE_LIMIT)


def _describe(exc: BaseException, url: str) -> tuple[str, str]:
    if isinstance(exc, (SSELineTooLong, BodyTooLarge, DecodeRefused, HeadersTooLarge, InterimFlood)):
        return schema.ERR_MALFORMED, str(exc)
    if isinstance(exc, Redirected):
        return schema.ERR_HTTP, str(exc)
    if isinstance(exc, Stalled):
        return schema.ERR_STALLED, str(exc)
    if isinstance(exc, TimeoutError):  # asyncio.timeout: the whole-call deadline passed
        return schema.ERR_TIMEOUT, f"no complete answer within the deadline ({url})"
    if isinstance(exc, httpx.ConnectTimeout):
        return schema.ERR_TIMEOUT, f"connect timeout to {url}"
    if isinstance(exc, httpx.ReadTimeout):
        return schema.ERR_TIMEOUT, "no data from the server within the read/stall timeout"
    if isinstance(exc, httpx.TimeoutException):
        return schema.ERR_TIMEOUT, f"timeout talking to {url}"
    if isinstance(exc, httpx.ConnectError):
        return schema.ERR_CONNECT, f"{_connect_reason(exc)} ({url})"
    if isinstance(exc, httpx.RemoteProtocolError) and "buffer too long" in str(exc).lower():  # h11's 100 KiB
        return schema.ERR_MALFORMED, ("a part of the lane's response framing (headers, a chunk header or trailers) "
                                      "is larger than 100 KiB: refused")
    if isinstance(exc, httpx.RemoteProtocolError) and not peer_closed(exc):  # the connection may well be open
        return schema.ERR_MALFORMED, (f"the lane's response is not valid HTTP/1.1 framing ({inert(str(exc), 120)}): "
                                      "refused")
    if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        return schema.ERR_CUT, f"connection closed by the server mid-response ({exc.__class__.__name__})"
    if isinstance(exc, httpx.HTTPError):
        return schema.ERR_OTHER, f"{exc.__class__.__name__}: {exc}"
    return schema.ERR_OTHER, f"{exc.__class__.__name__}: {exc}"


_CLOSE_WORDS = ("closed", "disconnected", "eof", "peer state is error")


def peer_closed(exc: BaseException) -> bool:
    """Whether a protocol error says the server went away (h11: "peer closed connection without sending
    complete message body", "peer unexpectedly closed connection"; httpcore: "Server disconnected without
    sending a response") rather than sent bytes that are not HTTP/1.1 (an illegal chunk header, a bad
    status line, a chunk footer that is not CRLF)."""
    text = str(exc).lower()
    return not text or any(w in text for w in _CLOSE_WORDS)


def _connect_reason(exc: BaseException) -> str:
    """The root OS reason behind httpx's generic 'All connection attempts failed'."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 8:
        if isinstance(cur, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cur, OSError) and cur.strerror:
            return cur.strerror.lower()
        cur = cur.__cause__ or cur.__context__
        seen += 1
    text = str(exc)
    if "refused" in text.lower() or "All connection attempts failed" in text:
        return "connection refused"
    return text or "connection failed"
