"""What one socket read costs through lanemon's stream (client/netstamp.py), read directly vs through httpcore.

    python bench/socket_read.py [--chunks N] [--rounds R]

A local asyncio server writes N small SSE-sized chunks, yielding between pairs of them, so most reads wait
for their bytes (as a token stream's do).  The same StampedStream reads them once directly (anyio's queue,
no cancel scope per read) and once through httpcore's ``AnyIOStream.read`` (``anyio.fail_after`` around each
read), alternating, R rounds.  Prints process CPU per read in microseconds, the server's share included (it is
the same in both): compare the two columns of one run, not runs on different days.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from lanemon.client.netstamp import StampingBackend


async def _one(direct: bool, chunks: int) -> tuple[int, float]:
    async def handler(reader, writer):
        for i in range(chunks):
            writer.write(b'data: {"x": %d}\n\n' % i)
            await writer.drain()
            if i % 2 == 0:
                await asyncio.sleep(0)
        writer.close()

    server = await asyncio.start_server(handler, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        stream = await StampingBackend().connect_tcp("127.0.0.1", port, timeout=5)
        if not direct:
            stream._sock = None
        elif stream._sock is None:
            raise SystemExit("socket_read: this install's anyio/httpcore cannot be read directly")
        c0 = time.process_time()
        reads = 0
        while await stream.read(65536, 30.0):
            reads += 1
        cpu = time.process_time() - c0
        await stream.aclose()
    return reads, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chunks", type=int, default=20000, help="chunks the server writes per round (20000)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of both ways (3)")
    a = ap.parse_args()
    per = {True: [], False: []}
    for _ in range(a.rounds):
        for direct in (False, True):
            reads, cpu = asyncio.run(_one(direct, a.chunks))
            per[direct].append(cpu * 1e6 / max(reads, 1))
    fmt = lambda xs: ", ".join(f"{x:.1f}" for x in xs)  # noqa: E731
    print(f"through httpcore: {fmt(per[False])} us/read (median {statistics.median(per[False]):.1f})")
    print(f"direct:           {fmt(per[True])} us/read (median {statistics.median(per[True]):.1f})")
    print(f"ratio (httpcore / direct): {statistics.median(per[False]) / statistics.median(per[True]):.2f}x")


if __name__ == "__main__":
    main()
