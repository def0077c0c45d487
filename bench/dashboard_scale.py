"""Dashboard at scale: 256 concurrent streams across two lanes, the app headless under Textual's pilot.

    python bench/dashboard_scale.py [--streams 256] [--seconds 20] [--time-scale 1.0] [--json out.json]

Both simulated lanes run as separate processes.  A load source keeps
``streams/2`` requests in flight per lane for ``--seconds``; it runs as the
app runs a live session: on its own loop in the "lanemon-measure" thread
(sessions/runner.SourceThread), its events handed to the UI through an Inbox
and folded at each redraw; it is ``real_time`` like a live session (the charts
settle a column at a time).  The real dashboard app (``make_app``) folds every
event and redraws on its timer.  Reported: events published vs events folded
into the dashboard state (dropped = the difference; target 0), screen
refreshes per second actually painted (target >= 10) and Textual's compositor
updates, lanemon's CPU (% of one core: the whole process, the UI thread, the
measuring thread), the simulators' CPU, the process's run-queue wait (time its
threads were ready but the machine gave them no CPU: the load of a shared
machine) and peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.dirname(__file__))

from _source import HarnessSource  # noqa: E402


class LoadSource(HarnessSource):
    """Source protocol: ``per_lane`` closed-loop workers per lane for ``seconds``."""

    real_time = True
    """Its events happen now, as a live session's (sessions/sources.LiveSession)."""

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


def cpu_s(p) -> float:
    t = p.cpu_times()
    return t.user + t.system


def thread_cpu(clock: int) -> float:
    """CPU seconds of a thread of this process by its CPU-time clock, 0 once it is gone."""
    try:
        return time.clock_gettime(clock)
    except OSError:
        return 0.0


def runq_s() -> float | None:
    """Seconds this process's threads spent ready to run but waiting for a CPU (Linux schedstat)."""
    total = 0
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/schedstat") as fh:
                total += int(fh.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return total / 1e9


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
        from textual.screen import Screen

        updates = 0
        compositor = Screen._compositor_refresh

        def counting_compositor(self, *a, **k):
            nonlocal updates
            updates += 1
            return compositor(self, *a, **k)

        Screen._compositor_refresh = counting_compositor  # type: ignore[method-assign]
        before_app = source.bus.published  # lane events published while the harness was built
        proc = psutil.Process()
        async with app.run_test(size=(160, 45)) as pilot:
            while app._runner is None:  # the measuring thread is up
                await asyncio.sleep(0.01)
            measure_clock = time.pthread_getcpuclockid(app._runner._thread.ident)
            sim_procs = [psutil.Process(sim.proc.pid) for sim in sims]
            c0, t0, ui0, q0 = proc.cpu_times(), time.perf_counter(), time.thread_time(), runq_s()
            m0, s0 = thread_cpu(measure_clock), sum(cpu_s(p) for p in sim_procs)
            painted = updates = 0
            e0 = app.state.events
            m1 = m0
            while not source.finished:  # cheap: this loop runs on the UI's loop (no pilot.pause: it waits for
                await asyncio.sleep(0.25)  # every widget to answer a message, work the app never does)
                m1 = thread_cpu(measure_clock) or m1  # (the thread ends with the source)
            c1, t1, ui1, q1 = proc.cpu_times(), time.perf_counter(), time.thread_time(), runq_s()
            s1 = sum(cpu_s(p) for p in sim_procs)
            e1 = app.state.events
            await pilot.press("q")
        Screen._compositor_refresh = compositor  # type: ignore[method-assign]
        wall = t1 - t0
        cpu = (c1.user - c0.user) + (c1.system - c0.system)
        return {"benchmark": "dashboard_scale", "streams": args.streams, "seconds": round(wall, 2),
                "requests": source.requests, "events_published": source.bus.published,
                "events_folded": app.state.events,
                "events_dropped": source.bus.published - before_app - app.state.events,
                "refreshes_per_s": painted / wall, "compositor_updates_per_s": updates / wall,
                "cpu_pct_of_one_core": 100 * cpu / wall, "ui_thread_cpu_pct": 100 * (ui1 - ui0) / wall,
                "measure_thread_cpu_pct": 100 * (m1 - m0) / wall, "sims_cpu_pct": 100 * (s1 - s0) / wall,
                "runq_wait_pct": 100 * (q1 - q0) / wall if q0 is not None and q1 is not None else None,
                "ui_cpu_ms_per_frame": 1000 * (ui1 - ui0) / max(painted, 1),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "events_per_s": source.bus.published / wall,
                "folded_per_s": (e1 - e0) / wall,
                "loadavg": " ".join(open("/proc/loadavg").read().split()[:3]) if os.path.exists("/proc/loadavg")
                else None}
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
