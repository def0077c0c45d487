"""Issue 39 row 21: `race --headless` exits 1 when a lane failed (README: "1 a lane failed or was down"), and a
response whose chunked framing is not HTTP/1.1 while the connection stays open is named as such, not as "closed"."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from hostile_server import HostileLane, HostileServer, sse
from test_hostile_bounds import lane_of, with_client
from test_hostile_edges import error_of, one_stream

from lanemon import events as schema

SRC = str(Path(__file__).resolve().parent.parent / "src")


def race(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "lanemon", "race", "--headless", "--no-record", "--prompt", "hi",
                           "--max-tokens", "8", "--deadline", "20", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_race_headless_exits_1_when_its_only_lane_failed():
    with HostileServer(HostileLane("sk-race-exit-0123456789", unauthorized_every=1, escapes=False)) as srv:
        out = race("--lane", f"H={srv.url}")
    assert out.returncode == 1, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and "no lane completed race 1" in out.stderr


def test_race_headless_still_exits_0_when_every_lane_finished():
    with HostileServer(HostileLane("sk-race-exit-0123456789", unauthorized_every=0, stream_error_every=0,
                                   escapes=False)) as srv:
        out = race("--lane", f"H={srv.url}")
    assert out.returncode == 0, out.stderr


BODY = sse({"choices": [{"index": 0, "text": " w"}]})
HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def test_an_illegal_chunk_header_on_an_open_connection_is_malformed_not_closed():
    """``31 ;a=b`` (whitespace before the extension; h11 refuses it), then the connection stays open."""
    def handler(req):
        yield HEAD + b"%x ;a=b\r\n" % len(BODY) + BODY + b"\r\n"
        yield 5.0

    with HostileServer(handler) as srv:
        _, events = asyncio.run(with_client(lane_of(srv, timeout=2.0), one_stream))
    err = error_of(events)
    assert err["cls"] == schema.ERR_MALFORMED and "not valid HTTP/1.1 framing" in err["message"], err
    assert "illegal chunk header" in err["message"] and "closed" not in err["message"]


def test_a_server_that_closes_mid_chunked_body_is_still_cut():
    def handler(req):
        yield HEAD + b"%x;a=b\r\n" % len(BODY) + BODY + b"\r\n"
        yield None  # abort

    with HostileServer(handler) as srv:
        _, events = asyncio.run(with_client(lane_of(srv, timeout=2.0), one_stream))
    err = error_of(events)
    assert err["cls"] == schema.ERR_CUT and "closed" in err["message"], err
