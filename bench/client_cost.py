"""Client cost: CPU-seconds per million streamed tokens, side by side in one run.

    python bench/client_cost.py [--tokens 2000] [--requests 100] [--json out.json]
    python bench/client_cost.py --paced 50 --concurrency 32 --tokens 200 --requests 64

Three readers consume the very same pre-built SSE stream from a loopback
server running in a separate process (so its CPU is not counted).  By default
the whole stream is one write (reads batch many chunks: the floor of per-token
cost).  ``--paced R`` writes one chunk per packet every 1/R s per stream, with
``--concurrency`` streams at once -- how a lane really streams, where every
token costs the reader a wake-up:

* ``bare``    -- httpx ``aiter_lines`` + orjson, extracting the content: the practical floor;
* ``lanemon`` -- lanemon's LaneClient.stream(), with every timestamp and event object;
* ``openai``  -- the official AsyncOpenAI client's chat streaming.

Reported: CPU seconds (process time of this process) per 1M tokens and the ratio to ``bare``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))


def _serve(tokens: int, port_q, pace: float | None = None) -> None:
    from _blaster import Blaster

    b = Blaster(tokens, pace).start()
    port_q.put(b.port)
    while True:
        time.sleep(3600)


async def _spread(requests: int, concurrency: int, one) -> int:
    """Run ``one()`` ``requests`` times on ``concurrency`` workers; the sum of what they return."""
    todo = iter(range(requests))
    total = 0

    async def worker() -> None:
        nonlocal total
        for _ in todo:
            n = await one()  # not ``total += await one()``: that reads total before the await, losing others' counts
            total += n

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return total


async def run_bare(url: str, requests: int, concurrency: int = 1) -> int:
    import httpx
    import orjson

    body = orjson.dumps({"model": "bench", "messages": [{"role": "user", "content": "x"}], "stream": True})
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=1024)) as client:
        async def one() -> int:
            n = 0
            async with client.stream("POST", url + "/chat/completions", content=body,
                                     headers={"content-type": "application/json"}) as resp:
                async for line in resp.aiter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        obj = orjson.loads(line[6:])
                        ch = obj.get("choices")
                        if ch and ch[0]["delta"].get("content"):
                            n += 1
            return n

        return await _spread(requests, concurrency, one)


async def run_lanemon(url: str, requests: int, concurrency: int = 1) -> int:
    from lanemon.config import LaneConfig
    from lanemon.client.http import LaneClient
    from lanemon.events import Clock

    events = []
    client = LaneClient(LaneConfig("X", url, "bench"), clock=Clock(), emit=events.append)
    async def one() -> int:
        rec = await client.stream("chat", client.build_body("chat", prompt="x"))
        if len(events) > 100_000:
            events.clear()
        return len(rec.token_ns)

    try:
        return await _spread(requests, concurrency, one)
    finally:
        await client.aclose()


async def run_openai(url: str, requests: int, concurrency: int = 1) -> int:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0)

    async def one() -> int:
        n = 0
        stream = await client.chat.completions.create(model="bench", messages=[{"role": "user", "content": "x"}],
                                                      stream=True)
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                n += 1
        return n

    try:
        return await _spread(requests, concurrency, one)
    finally:
        await client.close()


def measure(name: str, fn, url: str, requests: int, concurrency: int = 1, no_gc: bool = False) -> dict:
    import gc

    asyncio.run(fn(url, 2, min(2, concurrency)))  # warm up imports and connections
    if no_gc:  # diagnostic: the cyclic collector off for every reader alike (what is left is the readers' own work)
        gc.collect()
        gc.disable()
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        tokens = asyncio.run(fn(url, requests, concurrency))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    finally:
        gc.enable()
    return {"reader": name, "tokens": tokens, "cpu_s": cpu, "wall_s": wall,
            "cpu_s_per_million_tokens": cpu / tokens * 1e6, "tokens_per_s": tokens / wall}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tokens", type=int, default=2000, help="tokens per request")
    ap.add_argument("--requests", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3, help="alternate the readers this many times; best round kept")
    ap.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    ap.add_argument("--paced", type=float, metavar="TOK_S", help="one chunk per packet at this rate per stream")
    ap.add_argument("--concurrency", type=int, default=1, help="streams at once (default 1)")
    ap.add_argument("--no-gc", action="store_true", help="diagnostic: Python's cyclic collector off while each reader "
                    "runs (all readers alike; lanemon's sink keeps up to 100,000 events, which every collection walks)")
    args = ap.parse_args()
    q = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(args.tokens, q, args.paced), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{q.get(timeout=10)}/v1"
    readers = {"bare": run_bare, "lanemon": run_lanemon, "openai": run_openai}
    best: dict[str, dict] = {}
    try:
        for _ in range(args.rounds):
            for name, fn in readers.items():
                r = measure(name, fn, url, args.requests, args.concurrency, args.no_gc)
                if name not in best or r["cpu_s_per_million_tokens"] < best[name]["cpu_s_per_million_tokens"]:
                    best[name] = r
    finally:
        server.terminate()
    floor = best["bare"]["cpu_s_per_million_tokens"]
    for r in best.values():
        r["ratio_to_bare"] = r["cpu_s_per_million_tokens"] / floor
    result = {"benchmark": "client_cost", "tokens_per_request": args.tokens, "requests": args.requests,
              "paced_tok_s_per_stream": args.paced, "concurrency": args.concurrency,
              "rounds": args.rounds, "no_gc": args.no_gc, "python": sys.version.split()[0], "cpus": os.cpu_count(),
              "load_avg_1m_end": round(os.getloadavg()[0], 2),
              "readers": list(best.values())}
    print(f"{'reader':10} {'CPU s / 1M tok':>15} {'x bare':>8} {'tok/s':>12}")
    for r in best.values():
        print(f"{r['reader']:10} {r['cpu_s_per_million_tokens']:15.2f} {r['ratio_to_bare']:8.2f} {r['tokens_per_s']:12.0f}")
    print(f"(load average {os.getloadavg()[0]:.2f} at the end, {os.cpu_count()} CPUs)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
