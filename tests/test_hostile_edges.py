"""Issue 24 items 1 and 6: compressed bodies are inflated within bounds and never starve the deadline;
redirects, oversized headers and 1xx floods are named; every request asks for no compression."""

from __future__ import annotations

import asyncio
import gzip
import json
import time
import zlib

import httpx
import pytest
from hostile_server import (HostileServer, early_hints, gzip_body, gzip_stream, head, huge_headers, redirect,
                            response, sse)

from lanemon import events as schema
from lanemon.client import encoding
from lanemon.client.http import LaneClient
from lanemon.client.prom import MetricsScraper
from lanemon.config import LaneConfig
from lanemon.events import Clock, Event
from test_hostile_bounds import lane_of, with_client  # the same lane and client (bounded by its GUARD_S)

GUARD_S = 30.0
MODELS = {"object": "list", "data": [{"id": "m", "object": "model"}]}


def one_stream(client: LaneClient):
    return client.stream("completions", client.build_body("completions", prompt="hi", max_tokens=8))


def stream_body(words: int = 3) -> bytes:
    return b"".join(sse({"choices": [{"index": 0, "text": f" w{i}"}]}) for i in range(words)) + sse(
        {"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]}) + b"data: [DONE]\n\n"


def error_of(events: list[Event]) -> dict:
    errors = [e.data for e in events if e.kind == schema.ERROR]
    assert errors, [e.kind for e in events]
    return errors[-1]


# ------------------------------------------------------------------------------ item 1: compression
def test_every_request_asks_for_no_compression():
    with HostileServer(lambda req: response(200, MODELS) if req.path.endswith("/models") else
                       [head(200, "text/event-stream") + stream_body()]) as srv:
        async def both(c):
            await c.probe_models()
            return await one_stream(c)
        rec, _ = asyncio.run(with_client(lane_of(srv), both))
        seen = [r.headers.get("accept-encoding") for r in srv.requests]
    assert rec.ok and seen == ["identity", "identity"]


def test_a_gzip_bomb_stream_is_stopped_at_the_ratio_rule():
    """1 GiB of blank lines in about 1 MB of gzip: refused once 1 MiB is decoded, not inflated."""
    with HostileServer(lambda req: gzip_stream()) as srv:
        t0 = time.monotonic()
        rec, events = asyncio.run(with_client(lane_of(srv, deadline=20), one_stream, stall_timeout=20))
        took = time.monotonic() - t0
    err = error_of(events)
    assert err["cls"] == schema.ERR_MALFORMED and "compression bomb" in err["message"], err
    assert took < 15  # the old client inflated for 60 s (until the 20 s deadline here, had it run)


def test_a_bomb_past_every_limit_still_ends_at_the_deadline(monkeypatch):
    """No ratio, no size limit: the inflating may not keep the event loop from the deadline timer."""
    monkeypatch.setattr(encoding, "MAX_RATIO", 10 ** 12)
    monkeypatch.setattr(encoding, "STREAM_DECODED_LIMIT", 1 << 50)
    with HostileServer(lambda req: gzip_stream()) as srv:
        t0 = time.monotonic()
        rec, events = asyncio.run(with_client(lane_of(srv, deadline=2.0), one_stream, stall_timeout=5.0))
        took = time.monotonic() - t0
    err = error_of(events)
    assert err["cls"] == schema.ERR_TIMEOUT, err
    assert took < 2.0 + 4.0  # before: one read inflated to 64 MB in one step; 28.7 s (672 MB) at a 3 s deadline


def test_a_compressed_stream_within_the_rules_is_read():
    for wbits, name in ((31, "gzip"), (15, "deflate"), (-15, "deflate")):  # raw deflate, as some servers send
        comp = zlib.compressobj(6, zlib.DEFLATED, wbits)
        payload = comp.compress(stream_body(5)) + comp.flush()
        with HostileServer(lambda req: [head(200, "text/event-stream", extra={"content-encoding": name}),
                                        payload]) as srv:
            rec, events = asyncio.run(with_client(lane_of(srv), one_stream))
        assert rec.ok, (name, wbits, [e.data for e in events if e.kind == schema.ERROR])
        assert "".join(e.data["text"] for e in events if e.kind == schema.TOKEN) == " w0 w1 w2 w3 w4"


@pytest.mark.parametrize("coding", ["br", "zstd", "gzip, gzip", "compress"])
def test_encodings_lanemon_does_not_decode_are_named(coding):
    with HostileServer(lambda req: [head(200, "text/event-stream", extra={"content-encoding": coding}),
                                    b"\x1f\x8b\x08garbage" * 100]) as srv:
        rec, events = asyncio.run(with_client(lane_of(srv), one_stream))
    err = error_of(events)
    assert err["cls"] == schema.ERR_MALFORMED and coding.split(",")[0] in err["message"], err
    assert "asked for identity" in err["message"]


def test_a_gzip_models_body_is_read_and_a_bomb_refused():
    good = json.dumps(MODELS).encode()
    bomb = b'{"object":"list","data":[' + b" " * (24 << 20) + b"]}"  # 24 MiB of blanks in 24 KB
    with HostileServer(lambda req: gzip_body(good)) as srv:
        data, _ = asyncio.run(with_client(LaneConfig("H", srv.url), lambda c: c.probe_models()))
    assert data.ok and data.model == "m"
    with HostileServer(lambda req: gzip_body(bomb)) as srv:
        data, _ = asyncio.run(with_client(LaneConfig("H", srv.url), lambda c: c.probe_models()))
    assert data.ok is False and data.cls == schema.ERR_MALFORMED and "compression bomb" in data.message


def test_a_gzip_bomb_on_metrics_is_refused():
    bomb = b"# HELP x y\n" * (2 << 20)  # 22 MiB
    with HostileServer(lambda req: gzip_body(bomb, content_type="text/plain")) as srv:
        events: list[Event] = []

        async def scrape():
            async with httpx.AsyncClient() as http:
                scraper = MetricsScraper("H", srv.url, http, clock=Clock(), emit=events.append)
                return await asyncio.wait_for(scraper.scrape(), GUARD_S)
        data = asyncio.run(scrape())
        asked = srv.requests[-1].headers.get("accept-encoding")
    assert asked == "identity"
    assert data.ok is False and ("compression bomb" in data.message or "decodes to more" in data.message)


# ------------------------------------------------------------------------------ item 6: name what happened
@pytest.mark.parametrize("status,location,shown", [
    (307, "http://evil.example/v1/completions?key=sk-abcdefgh12345678", "http://evil.example/v1/completions"),
    (308, "/elsewhere/v1/completions", "/elsewhere/v1/completions"),
    (302, "file:///etc/passwd", "file:///etc/passwd"),
])
def test_a_redirected_stream_is_named_not_followed(status, location, shown):
    with HostileServer(lambda req: redirect(status, location)) as srv:
        rec, events = asyncio.run(with_client(lane_of(srv), one_stream))
        paths = [r.path for r in srv.requests]
    err = error_of(events)
    assert err["cls"] == schema.ERR_HTTP and err["status"] == status
    assert err["message"].startswith(f"lane answered {status} -> ") and shown in err["message"]
    assert "does not follow redirects; use the final URL" in err["message"] and "sk-" not in err["message"]
    assert paths == ["/v1/completions"]  # not followed


def test_a_redirected_models_probe_and_metrics_scrape_are_named():
    with HostileServer(lambda req: redirect(302, "http://evil.example/models")) as srv:
        data, _ = asyncio.run(with_client(LaneConfig("H", srv.url), lambda c: c.probe_models()))

        async def scrape():
            async with httpx.AsyncClient() as http:
                return await MetricsScraper("H", srv.url, http, clock=Clock(), emit=lambda e: None).scrape()
        metrics = asyncio.run(scrape())
    for d in (data, metrics):
        assert d.ok is False and d.cls == schema.ERR_HTTP
        assert "lane answered 302 -> http://evil.example/models: lanemon does not follow redirects" in d.message


def test_20000_response_headers_are_named_as_such():
    with HostileServer(lambda req: huge_headers(20_000)) as srv:
        rec, events = asyncio.run(with_client(lane_of(srv), one_stream))
    err = error_of(events)
    assert err["cls"] == schema.ERR_MALFORMED and "response headers are larger than" in err["message"], err


def test_a_flood_of_early_hints_is_refused_fast_and_a_few_are_fine():
    with HostileServer(lambda req: early_hints(5_000)) as srv:
        rec, events = asyncio.run(with_client(lane_of(srv), one_stream))
    err = error_of(events)
    assert err["cls"] == schema.ERR_MALFORMED and "informational (1xx)" in err["message"], err
    with HostileServer(lambda req: early_hints(5)) as srv:
        rec, events = asyncio.run(with_client(lane_of(srv), one_stream))
    assert rec.ok, [e.data for e in events if e.kind == schema.ERROR]


def test_the_header_guard_resets_for_each_request_on_a_kept_alive_connection():
    """Two requests on one connection, each with 20 hints: 40 in all, but 20 per request is fine."""
    hint = b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n"
    answer = stream_body(1)
    reply = [hint * 20 + b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "
             + str(len(answer)).encode() + b"\r\n\r\n" + answer]

    async def two(c):
        return [await one_stream(c), await one_stream(c)]
    from scripted_server import LoopbackServer

    class KeepAlive(LoopbackServer):
        async def _handle(self, reader, writer):  # serve requests on one connection until it closes
            from rawhttp import read_request
            try:
                while True:
                    got = await read_request(reader)
                    if got is None:
                        return
                    await self._write(writer, got[0], reply)
            except (ConnectionError, asyncio.IncompleteReadError, ValueError):
                pass
    with KeepAlive(lambda req: reply) as srv:
        recs, events = asyncio.run(with_client(lane_of(srv), two))
    assert [r.ok for r in recs] == [True, True], [e.data for e in events if e.kind == schema.ERROR]


@pytest.mark.parametrize("flood", ["extension", "trailers"])
def test_chunked_framing_floods_are_named(flood):
    """A 300 KB chunk extension, or 30,000 trailers after a body that has not ended its stream: named
    (before: 'connection closed by the server mid-response')."""
    body = sse({"choices": [{"index": 0, "text": " w"}]})  # no [DONE]: the reader goes on to the body's end
    ext = b";" + b"x" * 300_000 if flood == "extension" else b""
    trailers = b"x-t: y\r\n" * 30_000 if flood == "trailers" else b""
    raw = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
           + b"%x" % len(body) + ext + b"\r\n" + body + b"\r\n0\r\n" + trailers + b"\r\n")
    with HostileServer(lambda req: [raw]) as srv:
        rec, events = asyncio.run(with_client(lane_of(srv), one_stream))
    err = error_of(events)
    assert err["cls"] == schema.ERR_MALFORMED and "larger than 100 KiB" in err["message"], err


def test_gpu_telemetry_asks_for_no_compression_and_refuses_a_bomb():
    """The DCGM scrape has its own HTTP client (no lane headers): the same rules apply."""
    from lanemon.client.telemetry import TelemetryScraper

    bomb = b"# HELP x y\n" * (2 << 20)  # 22 MiB
    with HostileServer(lambda req: gzip_body(bomb, content_type="text/plain")) as srv:
        async def scrape():
            async with httpx.AsyncClient() as http:
                return await TelemetryScraper("H", srv.url.replace("/v1", "/metrics"), http, clock=Clock(),
                                              emit=lambda e: None).scrape()
        data = asyncio.run(scrape())
        asked = srv.requests[-1].headers.get("accept-encoding")
    assert asked == "identity"
    assert data.ok is False and ("compression bomb" in data.message or "decodes to more" in data.message)


def test_a_drip_of_empty_flush_blocks_ends_at_the_stall_window():
    """Compressed bytes that inflate to nothing are no progress (as keep-alive comments are not)."""
    def drip_flushes(req):
        comp = zlib.compressobj(6, zlib.DEFLATED, 31)
        yield head(200, "text/event-stream", extra={"content-encoding": "gzip"})
        yield comp.compress(b"") + comp.flush(zlib.Z_SYNC_FLUSH)
        while True:
            yield b"\x00\x00\x00\xff\xff"  # an empty stored deflate block: five bytes, nothing decoded
            yield 0.05
    with HostileServer(drip_flushes) as srv:
        t0 = time.monotonic()
        rec, events = asyncio.run(with_client(lane_of(srv, deadline=25), one_stream, stall_timeout=1.0))
        took = time.monotonic() - t0
    assert error_of(events)["cls"] == schema.ERR_STALLED and took < 10  # before: only the 25 s deadline


def test_gzip_members_are_read_and_garbage_after_a_deflate_body_is_refused():
    body = stream_body(4)
    members = gzip.compress(body[:40]) + gzip.compress(body[40:])  # two gzip members, as some proxies send
    with HostileServer(lambda req: [head(200, "text/event-stream", extra={"content-encoding": "gzip"}),
                                    members]) as srv:
        rec, events = asyncio.run(with_client(lane_of(srv), one_stream))
    assert rec.ok and "".join(e.data["text"] for e in events if e.kind == schema.TOKEN) == " w0 w1 w2 w3"
    deflated = zlib.compress(sse({"choices": [{"index": 0, "text": " w"}]})) + b"x" * 1000
    with HostileServer(lambda req: [head(200, "text/event-stream", extra={"content-encoding": "deflate"}),
                                    deflated, 30.0]) as srv:
        rec, events = asyncio.run(with_client(lane_of(srv, deadline=25), one_stream))
    err = error_of(events)
    assert err["cls"] == schema.ERR_MALFORMED and "after the end of its deflate body" in err["message"]
