"""Dashboard at scale: 256 concurrent streams across two lanes, the app headless under Textual's pilot.

    python bench/dashboard_scale.py [--streams 256] [--seconds 20] [--time-scale 1.0] [--json out.json]

Both simulated lanes run as separate processes.  A load source keeps
``streams/2`` requests in flight per lane for ``--seconds``; the real dashboard
app (``make_app``) folds every event and redraws on its timer.  Reported:
events published vs events folded into the dashboard state (dropped = the
difference; target 0), screen refreshes per second actually painted (target
>= 10), lanemon's CPU (% of one core) and peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.dirname(__file__))

from _source import HarnessSource  # noqa: E402


class LoadSource(HarnessSource):
    """Source protocol: ``per_lane`` closed-loop workers per lane for ``seconds``."""

    def __init__(self, lanes, per_lane: int, seconds: float, max_tokens: int = 64) -> None:
        super().__init__(lanes)
        self.per_lane, self.seconds, self.max_tokens = per_lane, seconds, max_tokens
        self.requests = 0

    def workers(self):
        deadline = time.monotonic() + self.seconds

        async def worker(lane: str, i: int) -> None:
            k = 0
            while not self._stop and time.monotonic() < deadline:
                await self.harness.request(lane, "chat", prompt=f"Tell a short story number {i}-{k}.",
                                           max_tokens=self.max_tokens, purpose="load")
                self.requests += 1
                k += 1

        return [worker(lane, i) for lane in self.harness.names for i in range(self.per_lane)]


async def run(args) -> dict:
    import psutil

    from simproc import SimProcess
    from lanemon.config import LaneConfig
    from lanemon.ui.app import make_app

    sims = [SimProcess("tensorfold-exl3", args.time_scale), SimProcess("sglang-native", args.time_scale)]
    try:
        lanes = [LaneConfig("A", sims[0].url), LaneConfig("B", sims[1].url)]
        source = LoadSource(lanes, args.streams // 2, args.seconds)
        app = make_app(source, refresh_hz=10)
        painted = 0
        original = app.redraw

        def counting_redraw(force: bool = False) -> bool:
            nonlocal painted
            done = original(force)
            painted += bool(done)
            return done

        app.redraw = counting_redraw  # type: ignore[method-assign]
        before_app = source.bus.published  # lane events published while the harness was built
        proc = psutil.Process()
        peak_rss = 0
        async with app.run_test(size=(160, 45)) as pilot:
            c0, t0 = proc.cpu_times(), time.perf_counter()
            painted = 0
            while not source.finished:
                await pilot.pause(0.25)
                peak_rss = max(peak_rss, proc.memory_info().rss)
            c1, t1 = proc.cpu_times(), time.perf_counter()
            await pilot.press("q")
        wall = t1 - t0
        cpu = (c1.user - c0.user) + (c1.system - c0.system)
        return {"benchmark": "dashboard_scale", "streams": args.streams, "seconds": round(wall, 2),
                "requests": source.requests, "events_published": source.bus.published,
                "events_folded": app.state.events,
                "events_dropped": source.bus.published - before_app - app.state.events,
                "refreshes_per_s": painted / wall, "cpu_pct_of_one_core": 100 * cpu / wall,
                "peak_rss_mb": peak_rss / 2**20, "events_per_s": source.bus.published / wall}
    finally:
        for sim in sims:
            sim.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--streams", type=int, default=256)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    result = asyncio.run(run(args))
    for k, v in result.items():
        print(f"{k:22} {v:.2f}" if isinstance(v, float) else f"{k:22} {v}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
