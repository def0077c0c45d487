"""Which ``Host`` a local server answers (DNS rebinding): the rule `lanemon web` (cli/web_guard.py) and the
Prometheus exporter (monitor/exporter.py) share.

A page on ``evil.example`` whose name the attacker re-points at 127.0.0.1 reaches a loopback server with
``Host: evil.example``; refusing every Host but the server's own names closes that door.  The names: the bind
address, and for loopback ``localhost``; for a wildcard bind (``0.0.0.0``, ``::``) any IP literal,
``localhost`` and this machine's names; for another address that address and this machine's names.  The port
must be the server's (80 when the header has none).  Pure apart from reading this machine's names.
"""

from __future__ import annotations

import ipaddress
import socket


def parse_host(value: str) -> tuple[str, int | None] | None:
    """(host, port) of a ``Host`` header or an origin's netloc; None when it does not parse."""
    value = value.strip().lower()
    if not value or any(c in value for c in "/@?#\\ "):
        return None
    if value.startswith("["):
        host, sep, rest = value[1:].partition("]")
        if not sep:
            return None
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
    else:
        host, _, port_text = value.partition(":") if value.count(":") == 1 else (value, "", "")
        if value.count(":") > 1:  # a bare IPv6 address is not a valid Host
            return None
    if port_text is None:
        return None
    try:
        port = int(port_text) if port_text else None
    except ValueError:
        return None
    return host, port


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    bind = host.strip("[]").lower()
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return bind == "localhost"


def is_wildcard(host: str) -> bool:
    return host.strip("[]").lower() in ("0.0.0.0", "::", "")


class HostNames:
    """The names a server bound at ``host:port`` answers to (module docstring)."""

    def __init__(self, host: str, port: int) -> None:
        self.port = port
        bind = host.strip("[]").lower()
        self.any_ip = is_wildcard(bind)
        names = {bind}
        loopback = is_loopback(bind)
        if loopback:
            names |= {"localhost", "127.0.0.1"} if ":" not in bind else {"localhost", "::1"}
        if self.any_ip or not loopback:  # reached from elsewhere: by this machine's names too
            for name in (socket.gethostname(), socket.getfqdn()):
                if name:
                    names.add(name.lower())
            names.add("localhost")
        self.names = names

    def host_ok(self, value: str | None) -> bool:
        parsed = parse_host(value or "")
        if parsed is None:
            return False
        host, port = parsed
        if (port or 80) != self.port:
            return False
        return host in self.names or (self.any_ip and is_ip(host))
