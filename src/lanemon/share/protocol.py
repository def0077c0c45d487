"""The share wire protocol: JSON text frames over one websocket (no Textual, no IO).

A viewer connects and speaks first; after that only the publisher talks::

    viewer    -> {"type": "hello", "token": T, "protocol": 1}     (within HELLO_TIMEOUT_S)
    publisher -> {"type": "header", "protocol": 1, "lanemon": VERSION, "mode": MODE,
                  "lanes": [{"name", "url", "model"}], "snapshot_events": N, "dropped_events": D}
    publisher -> {"type": "events", "snapshot": true,  "events": [EVENT, ...]}   (0 or more)
    publisher -> {"type": "live"}                                               (snapshot done)
    publisher -> {"type": "events", "snapshot": false, "events": [EVENT, ...]}  (every ~50 ms)

``EVENT`` is exactly :meth:`lanemon.events.Event.to_json_obj` (the same
object as one line of a recording).  Every publisher message stays under
:data:`MAX_MESSAGE` bytes.  Whatever a viewer sends after its hello is read,
counted and ignored.  The publisher ends a connection with a close code:
4401 bad token (or no hello in time), 1013 too many viewers, 4408 too slow
(its send queue overflowed), 4403 read-only (it kept sending), 1001 the
publisher stopped sharing.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from lanemon.public_lane import PublicLane


PROTOCOL = 1
DEFAULT_PORT = 8765
DEFAULT_HOST = "127.0.0.1"

MAX_MESSAGE = 1 << 20
"""Upper bound of one publisher message (bytes); batches are cut below it."""
MAX_INCOMING = 4096
"""Upper bound of one viewer message: a hello is tiny; anything bigger closes the connection (1009)."""
MAX_VIEWERS = 16
"""Viewers that presented the token; a connection holds a slot only once its hello was accepted."""
HELLO_TIMEOUT_S = 2.0
"""Seconds a connection has, from its websocket handshake, to present the token (and for the handshake)."""
HELLO_GRACE_S = 0.5
"""A connection silent for this long (at most half the hello timeout) joins the pre-authentication budget;
a viewer says hello at once, within it, so the budget never touches a viewer."""
MAX_PENDING = 8
"""Silent connections (past the grace) waiting for their hello, in all: one more closes the oldest of the
address holding the most."""
MAX_PENDING_PER_ADDRESS = 4
"""Silent connections waiting for their hello from one address: one more closes that address's oldest."""
REFUSAL_NOTICE_S = 10.0
"""Refused connections are summed up on the publisher's screen at most once per this many seconds."""

# Close codes (4000-4999 are free for applications; the others are RFC 6455's).
CLOSE_GOING_AWAY = 1001  # the publisher stopped sharing
CLOSE_TRY_AGAIN = 1013  # too many viewers
CLOSE_BAD_TOKEN = 4401
CLOSE_READ_ONLY = 4403  # the viewer kept sending (over MAX_IGNORED messages)
CLOSE_TOO_SLOW = 4408  # the viewer's send queue overflowed
REASON_BAD_TOKEN = "bad token"
REASON_NO_HELLO = "no hello in time"
REASON_TOO_MANY = "too many viewers"
REASON_STOPPED = "publisher stopped sharing"
REASON_READ_ONLY = "viewers are read-only"
REASON_TOO_SLOW = "too slow: send queue full"


class ShareError(Exception):
    """Sharing or attaching failed; the message is one line for the user."""


def tokens_match(presented: Any, expected: str) -> bool:
    """Constant-time comparison of a presented token with the session's token."""
    import hmac  # here: hashlib loads OpenSSL, which `lanemon --help` does not need

    if not isinstance(presented, str):
        return False
    return hmac.compare_digest(presented.encode("utf-8", "surrogatepass"), expected.encode("utf-8"))


def public_url(url: Any) -> str:
    """A lane URL fit for viewers: no ``user:password@``, no query string, no fragment."""
    if not isinstance(url, str) or not url:
        return ""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host + (f":{port}" if port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def public_lane(lane: PublicLane) -> PublicLane:
    """A source's lane as viewers get it: its URL cut to scheme, host, port and path."""
    from lanemon.public_lane import PublicLane  # here: `lanemon --help` reads this module (no msgspec then)

    return PublicLane(str(lane.name), public_url(lane.url), lane.model)


# ---------------------------------------------------------------- addresses
@dataclass(frozen=True)
class BindAddress:
    host: str
    port: int

    @property
    def loopback(self) -> bool:
        return is_loopback_host(self.host)


def parse_share_address(text: str, default_host: str = DEFAULT_HOST) -> BindAddress:
    """``PORT``, ``HOST:PORT`` or ``[V6]:PORT`` -> BindAddress; ValueError with a readable message."""
    text = text.strip()
    host, port_text = default_host, text
    if text.startswith("["):
        end = text.find("]")
        if end < 0 or text[end + 1 : end + 2] != ":":
            raise ValueError(f"expected [HOST]:PORT, not {text!r}")
        host, port_text = text[1:end], text[end + 2 :]
    elif ":" in text:
        host, _, port_text = text.rpartition(":")
        if ":" in host:
            raise ValueError(f"write an IPv6 address in brackets, e.g. [::1]:{port_text}")
    port = parse_port(port_text)
    if not host:
        raise ValueError(f"missing host in {text!r}")
    return BindAddress(host, port)


def parse_port(text: str | int) -> int:
    try:
        port = int(text)
    except (TypeError, ValueError):
        raise ValueError(f"{text!r} is not a TCP port") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"{port} is not a TCP port (0-65535)")
    return port


def is_loopback_host(host: str) -> bool:
    """True only when ``host`` is a loopback address or a name that resolves only to loopback."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    if host.lower() != "localhost":
        return False
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0].split("%")[0]).is_loopback for i in infos)


def bind_socket(host: str, port: int, *, allow_any_host: bool = False) -> socket.socket:
    """A listening TCP socket for the publisher; ShareError with one line when it cannot be had.

    Refuses a non-loopback address unless ``allow_any_host`` (the ``--share-any-host`` flag).
    """
    if not allow_any_host and not is_loopback_host(host):
        raise ShareError(
            f"refusing to share on {host}: it is not a loopback address, so anyone who can reach this "
            "machine could try to connect; pass --share-any-host to allow it (or use an SSH tunnel)"
        )
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as exc:
        raise ShareError(f"cannot share on {host}:{port}: {exc.strerror or exc}") from None
    family, type_, proto, _, addr = infos[0]
    sock = socket.socket(family, type_, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        raise ShareError(f"cannot share on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def validate_ws_url(url: str) -> str:
    """Check a viewer URL (ws:// or wss://, host, valid port); ValueError with a readable message."""
    try:
        parts = urlsplit(url)
        parts.port
    except ValueError:
        raise ValueError(f"{url!r} is not a valid URL (bad port?)") from None
    if parts.scheme not in ("ws", "wss") or not parts.hostname:
        raise ValueError(f"{url!r} is not a share URL like ws://127.0.0.1:{DEFAULT_PORT}")
    return url


def close_explanation(code: int | None, reason: str) -> str:
    """One line saying why a publisher closed a viewer's connection."""
    from lanemon.untrusted import inert

    reason = inert(reason, 123)  # the publisher's words (a websocket close reason is at most 123 bytes)
    if code == CLOSE_BAD_TOKEN:
        return "the publisher refused the token (bad token)"
    if code == CLOSE_TRY_AGAIN:
        return f"the publisher has too many viewers ({reason or 'try again later'})"
    if code == CLOSE_GOING_AWAY:
        return "the publisher stopped sharing"
    if code == CLOSE_TOO_SLOW:
        return "the publisher dropped this viewer: it could not keep up (too slow)"
    if code == CLOSE_READ_ONLY:
        return "the publisher dropped this viewer: viewers are read-only"
    if code is None:
        return "the connection to the publisher was lost"
    return f"the publisher closed the connection ({code}{': ' + reason if reason else ''})"
