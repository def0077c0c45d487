"""Response bodies read with bounded decompression (issue 24, item 1).

lanemon asks every lane for ``Accept-Encoding: identity`` (:data:`IDENTITY`).  A server that
compresses anyway is decoded here, never by httpx: httpx's ``aiter_bytes`` inflates each network read
in one call, so a 1 MB gzip of blank lines became one 1 GiB string, held the event loop for seconds and
kept the deadline and stall timers from running.  :func:`body_chunks` reads the raw body and

* inflates at most :data:`PIECE` bytes per step (zlib's ``max_length``), letting the event loop run
  between the steps of one read, so the request's deadline and stall timers always fire;
* stops at :data:`MAX_RATIO` decoded bytes per byte received once :data:`RATIO_AFTER` bytes were
  decoded (a compression bomb; real SSE and JSON compress 5-30x);
* stops when the decoded body passes ``limit`` (the caller's cap; :data:`STREAM_DECODED_LIMIT` for
  streams);
* yields an empty chunk for a read that inflated to nothing, so the stream's stall rule still runs
  (a drip of empty flush blocks is no more progress than a drip of keep-alive comments);
* decodes ``gzip`` / ``x-gzip`` (several members too) / ``deflate`` only, one layer: ``br``, ``zstd``, ``compress`` or a
  stack of encodings is refused with the encoding named (httpx would decode br and zstd without a
  bound when their packages are installed).

Every stop is :class:`DecodeRefused` (class ``malformed``).  An uncompressed body passes untouched.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator

import httpx

IDENTITY = "identity"
"""The ``Accept-Encoding`` lanemon sends to lanes: no compression, please."""
PIECE = 64 * 1024
"""Decoded bytes produced per decompression step."""
MAX_RATIO = 200
"""Decoded bytes allowed per compressed byte received (checked past :data:`RATIO_AFTER`)."""
RATIO_AFTER = 1 << 20
"""The ratio rule applies once this many bytes were decoded (tiny bodies compress well)."""
STREAM_DECODED_LIMIT = 64 << 20
"""A compressed stream may decode to this many bytes in all (an uncompressed one is bounded per line
and by its deadline)."""
DECODERS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class DecodeRefused(Exception):
    """A compressed body lanemon will not (or no longer) decode; the message names why."""


def _size(n: float) -> str:
    return f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{int(n)} bytes"


def encodings(resp: httpx.Response) -> list[str]:
    """The response's content codings, outermost last, without ``identity``."""
    values = resp.headers.get_list("content-encoding", split_commas=True)
    return [v.strip().lower() for v in values if v.strip() and v.strip().lower() != IDENTITY]


async def body_chunks(resp: httpx.Response, limit: int | None = None) -> AsyncIterator[bytes]:
    """The body of ``resp``, decoded within the bounds above (module docstring)."""
    if hasattr(resp, "_content"):  # a response built in memory (httpx's MockTransport): already read and decoded
        content = resp.content
        for i in range(0, len(content), PIECE):
            yield content[i:i + PIECE]
        return
    codings = encodings(resp)
    if not codings:
        async for chunk in resp.aiter_raw():
            yield chunk
        return
    if len(codings) > 1 or codings[0] not in DECODERS:
        raise DecodeRefused(f"the lane compressed its answer ({', '.join(c[:20] for c in codings[:4])}) although "
                            "lanemon asked for identity; lanemon decodes one layer of gzip or deflate only")
    limit = STREAM_DECODED_LIMIT if limit is None else limit
    coding = codings[0]
    inflater = zlib.decompressobj(DECODERS[coding])
    first = True
    received = decoded = 0
    async for raw in resp.aiter_raw():
        received += len(raw)
        data = raw
        produced = False
        while data:
            try:
                if first and coding == "deflate":  # "deflate" is zlib-wrapped by the RFC, raw by some servers
                    first = False
                    try:
                        piece = inflater.decompress(data, PIECE)
                    except zlib.error:
                        inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                        piece = inflater.decompress(data, PIECE)
                else:
                    piece = inflater.decompress(data, PIECE)
            except zlib.error as exc:
                raise DecodeRefused(f"the lane's {coding} body does not decode ({exc})") from None
            data = inflater.unconsumed_tail
            if inflater.eof:  # the end of the compressed data: gzip may go on with another member, nothing else
                rest = inflater.unused_data + data
                if rest and coding == "deflate":
                    raise DecodeRefused("the lane sent data after the end of its deflate body: stopped reading it")
                data = rest
                if rest:
                    inflater = zlib.decompressobj(DECODERS[coding])
            if piece:
                produced = True
                decoded += len(piece)
                if decoded > limit:
                    raise DecodeRefused(f"the lane's {coding} body decodes to more than {_size(limit)}: "
                                        "stopped reading it")
                if decoded > RATIO_AFTER and decoded > MAX_RATIO * received:
                    raise DecodeRefused(f"the lane's {coding} body inflates more than {MAX_RATIO}:1 "
                                        f"({_size(received)} -> {_size(decoded)} so far): a compression bomb; "
                                        "stopped reading it")
                yield piece
            if data:
                await asyncio.sleep(0)  # one read may inflate to many pieces: let the timers run between them
        if not produced:
            yield b""  # bytes came but no text: the reader still checks its stall window (empty flush blocks)
