"""The demo's measuring loop alone: its thread's CPU and the passes of its event loop, no UI.

    PYTHONPATH=SRC python bench/measure_loop.py [--settle 6] [--seconds 20]

Starts the demo's two simulated lanes (child processes: not counted) and runs the demo's ``LiveSession`` (probes
every second with 48 tokens, /metrics and host every 2 s, GPU telemetry every second, the load watcher) on this
process's loop.  After ``--settle`` s it counts, for ``--seconds`` s, the loop's passes (each pass asks the selector
once: woken by a socket, by a timer, or at once because the previous pass left work), the events published, and
the loop thread's CPU (``time.thread_time``).  Run it with two checkouts' src alternately to compare them
(docs/PERFORMANCE.md section 9, "The measuring thread: loop passes, not bytes")."""
from __future__ import annotations

import argparse
import asyncio
import collections
import os
import time

from lanemon.cli.common import demo_lanes
from lanemon.config import ProbeConfig
from lanemon.sessions.sources import DEMO_PROMPTS, LiveSession


async def main(lanes, settle: float, seconds: float) -> None:
    s = LiveSession(lanes, probe=ProbeConfig(1.0, 48, ProbeConfig().prompt, "chat", True), mode="demo",
                    prompts=DEMO_PROMPTS, metrics_interval=2.0, host_interval=2.0)
    loop = asyncio.get_running_loop()
    sel = loop._selector  # type: ignore[attr-defined]
    original = sel.select
    passes: collections.Counter = collections.Counter()

    def select(timeout=None):
        ready = original(timeout)
        passes["socket" if ready else ("at once" if timeout == 0 else "timer")] += 1
        return ready

    sel.select = select
    task = asyncio.ensure_future(s.run())
    await asyncio.sleep(settle)
    passes.clear()
    kinds: collections.Counter = collections.Counter()
    s.bus.subscribe(lambda ev: kinds.update([ev.kind]))
    t0, c0 = time.monotonic(), time.thread_time()
    await asyncio.sleep(seconds)
    span = time.monotonic() - t0
    cpu = time.thread_time() - c0
    s.stop()
    await task
    total = sum(passes.values())
    print(f"loop thread {1000 * cpu / span:.1f} ms/s; {total / span:.1f} passes/s ("
          + ", ".join(f"{k} {v / span:.1f}" for k, v in sorted(passes.items())) + f"); "
          f"{sum(kinds.values()) / span:.1f} events/s ({kinds['token'] / span:.1f} tokens); "
          f"load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--settle", type=float, default=6.0)
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    with demo_lanes(1.0) as demo:
        asyncio.run(main(demo, a.settle, a.seconds))
