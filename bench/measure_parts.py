"""What each part of a live session's measuring thread costs, one at a time, against the demo's simulators.

    PYTHONPATH=src python bench/measure_parts.py [--reps 40] [--gap 0.2] [--rounds 2]

Starts the demo's two simulated lanes (child processes: their CPU is not counted), then times, on this process's
event loop, each kind of work the demo's measuring thread does (docs/PERFORMANCE.md section 9): a ``/models``
health probe, a 48-token chat probe stream (the demo's probe), a GPU telemetry reading, a ``/metrics`` scrape,
and the load watcher's second of watching (20 ms ticks while a request is in flight, 100 ms while idle).  Each
operation is repeated ``--reps`` times ``--gap`` s apart (the demo's requests come on idle keep-alive
connections, not back to back).  Prints the CPU of the loop's thread and of the whole process (the worker
threads' parses and host samples included; the simulators are other processes) per operation, in
microseconds, and per second of watching for the watcher.  Rounds alternate the order.  Linux's thread CPU
clock; noisy on a shared machine: compare runs of the same minutes."""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from lanemon.cli.common import demo_lanes
from lanemon.client.http import LaneClient
from lanemon.client.loadwatch import LoadWatch
from lanemon.client.prom import MetricsScraper
from lanemon.client.telemetry import TelemetryScraper
from lanemon.events import Clock
from lanemon.sessions.sources import DEMO_PROMPTS


async def _timed(fn, reps: int, gap: float) -> tuple[float, float]:
    thread = proc = 0.0
    for _ in range(reps):
        await asyncio.sleep(gap)
        c0, p0 = time.thread_time(), time.process_time()
        await fn()
        await asyncio.sleep(0.05)  # the tail of the operation (a worker thread's hand-back, a body's end)
        thread += time.thread_time() - c0
        proc += time.process_time() - p0
    return 1e6 * thread / reps, 1e6 * proc / reps


async def _watch(seconds: float, idle: bool) -> tuple[float, float]:
    watch = LoadWatch(Clock(), lambda ev: None, idle=lambda: idle)
    watch.start()
    await asyncio.sleep(1.0)
    c0, p0, t0 = time.thread_time(), time.process_time(), time.monotonic()
    await asyncio.sleep(seconds)
    span = time.monotonic() - t0
    c, p = time.thread_time() - c0, time.process_time() - p0
    await watch.stop()
    return 1e3 * c / span, 1e3 * p / span


async def main(a: argparse.Namespace, lanes) -> None:
    clock = Clock()
    client = LaneClient(lanes[0], clock=clock, emit=lambda ev: None)
    await client.probe_models()
    gpu = TelemetryScraper(lanes[0].name, lanes[0].telemetry, None, clock=clock, emit=lambda ev: None)
    import httpx

    gpu.http = httpx.AsyncClient(timeout=5.0, follow_redirects=False, trust_env=False,
                                 headers={"Accept-Encoding": "identity"})
    metrics = MetricsScraper(lanes[0].name, lanes[0].url, client.http, clock=clock, emit=lambda ev: None)
    prompts = iter(DEMO_PROMPTS * 1000)

    async def stream() -> None:
        await client.stream("chat", client.build_body("chat", prompt=next(prompts), max_tokens=48), purpose="probe")

    parts = {"/models probe": client.probe_models, "48-token stream": stream, "GPU reading": gpu.scrape,
             "/metrics scrape": metrics.scrape}
    res: dict[str, list[tuple[float, float]]] = {k: [] for k in [*parts, "watcher busy", "watcher idle"]}
    for r in range(a.rounds):
        order = list(parts.items()) if r % 2 == 0 else list(parts.items())[::-1]
        for name, fn in order:
            res[name].append(await _timed(fn, a.reps, a.gap))
        res["watcher busy"].append(await _watch(a.watch_seconds, False))
        res["watcher idle"].append(await _watch(a.watch_seconds, True))
    await client.aclose()
    await gpu.http.aclose()
    for name, rows in res.items():
        unit = "ms CPU per second" if name.startswith("watcher") else "us CPU each"
        th = ", ".join(f"{x[0]:.0f}" if unit.startswith("us") else f"{x[0]:.2f}" for x in rows)
        pr = ", ".join(f"{x[1]:.0f}" if unit.startswith("us") else f"{x[1]:.2f}" for x in rows)
        print(f"{name:16s} loop thread {th}  process {pr}  ({unit}; median thread "
              f"{statistics.median(x[0] for x in rows):.1f})")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--gap", type=float, default=0.2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--watch-seconds", type=float, default=5.0)
    args = ap.parse_args()
    with demo_lanes(1.0) as demo:
        asyncio.run(main(args, demo))
