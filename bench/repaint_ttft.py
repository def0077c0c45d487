"""What a full-screen repaint does to lanemon's TTFT: the dashboard app repainting hard while it measures.

    python bench/repaint_ttft.py [--seconds 20] [--streams 4] [--repaint-hz 10] [--size 160x45] [--json out.json]

One simulated lane (tensorfold-exl3, real time) runs as a separate process.  The real app (``make_app``,
headless under Textual's pilot, at ``--size``) runs a source that keeps ``--streams`` requests in flight
on it, while a timer on the UI loop forces a full-screen repaint ``--repaint-hz`` times a second: the
app's own redraw, the layout reflowed and the whole frame rendered to the terminal's bytes (the work
Textual does for a full-screen update; headless, nothing is written).  Every request is matched to the
simulator's trace (``x-sim-request-id``) and lanemon's TTFT compared with the simulator's (arrival ->
first token written), as bench/accuracy.py does.  Three runs:

* ``quiet``: the source on its measuring thread, no forced repaint (the floor: transport + scheduling);
* ``ui-loop``: the source on the UI's loop, as lanemon ran it until 2026-12-04, with the repaints;
* ``thread``: the source on its own loop in a thread (sessions/runner.py), with the repaints.

Reported per run: requests matched, |TTFT error| p50 / p99 / max (ms), the repaints done and how long
one took (ms, median), and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
sys.path.insert(0, os.path.dirname(__file__))

from _source import HarnessSource  # noqa: E402


class StreamSource(HarnessSource):
    """Source protocol: ``streams`` closed-loop requests on lane A until stopped; keeps every record."""

    def __init__(self, lanes, streams: int, max_tokens: int) -> None:
        super().__init__(lanes)
        self.streams, self.max_tokens = streams, max_tokens
        self.records: list = []

    async def warm(self) -> None:
        # one warm connection per stream, so no TCP set-up is in the measured requests
        await asyncio.gather(*(self.harness.request("A", "chat", prompt=f"warm {i}", max_tokens=1)
                               for i in range(self.streams)))

    def workers(self):
        async def worker(i: int) -> None:
            k = 0
            while not self._stop:
                rec = await self.harness.request("A", "chat", prompt=f"Write a function number {i}-{k}.",
                                                 max_tokens=self.max_tokens, extra={"temperature": 0})
                self.records.append(rec)
                k += 1

        return [worker(i) for i in range(self.streams)]


async def one_run(url: str, mode: str, args) -> tuple[list, list[float]]:
    import lanemon.ui.app as app_module
    from lanemon.config import LaneConfig

    source = StreamSource([LaneConfig("A", url)], args.streams, args.max_tokens)
    if mode == "ui-loop":  # the source on the UI's own loop, as before the measuring thread
        app_module.measures = lambda _source: False
    else:
        from lanemon.sessions.runner import measures

        app_module.measures = measures
    app = app_module.make_app(source, refresh_hz=10)
    repaint_ms: list[float] = []

    def repaint() -> None:
        t = time.perf_counter()
        screen = app.screen
        app.redraw(force=True)
        screen._refresh_layout(screen.outer_size)  # noqa: SLF001 - the layout pass of a resize
        screen._compositor.render_full_update().render_segments(app.console)  # noqa: SLF001 - the frame's bytes
        repaint_ms.append((time.perf_counter() - t) * 1000)

    w, h = (int(x) for x in args.size.lower().split("x"))
    async with app.run_test(size=(w, h)) as pilot:
        if mode != "quiet":
            app.set_interval(1 / args.repaint_hz, repaint)
        await pilot.pause(args.seconds)
        await app.stop_and_exit() if hasattr(app, "stop_and_exit") else app.exit()
    return source.records, repaint_ms


def main() -> int:
    from simproc import SimProcess
    from lanemon.measure.metrics import percentile, request_metrics

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--streams", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--repaint-hz", type=float, default=10.0)
    ap.add_argument("--size", default="160x45")
    ap.add_argument("--runs", default="quiet,ui-loop,thread")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    rows = []
    sim = SimProcess("tensorfold-exl3", 1.0)
    try:
        for mode in args.runs.split(","):
            sim.clear_trace()
            records, repaint_ms = asyncio.run(one_run(sim.url, mode, args))
            truth = {t["id"]: t for t in sim.trace()}
            err = []
            for rec in records:
                t = truth.get(rec.server_request_id or "")
                m = request_metrics(rec)
                if rec.ok and t is not None and m.ttft_s is not None:
                    err.append(abs(m.ttft_s - t["ttft_s"]) * 1000)
            row = {"run": mode, "requests": len(records), "matched": len(err),
                   "ttft_abs_err_ms_p50": percentile(err, 50), "ttft_abs_err_ms_p99": percentile(err, 99),
                   "ttft_abs_err_ms_max": max(err) if err else None, "repaints": len(repaint_ms),
                   "repaint_ms_median": statistics.median(repaint_ms) if repaint_ms else None,
                   "load_avg_1m": round(os.getloadavg()[0], 2)}
            rows.append(row)
            rp = f"{row['repaints']} repaints, {row['repaint_ms_median']:.1f} ms each" if repaint_ms else "no repaints"
            print(f"{mode:8} matched {len(err):4}/{len(records):<4} |TTFT err| p50 {row['ttft_abs_err_ms_p50']:.2f} ms "
                  f"p99 {row['ttft_abs_err_ms_p99']:.2f} ms max {row['ttft_abs_err_ms_max']:.2f} ms   {rp}   "
                  f"load {row['load_avg_1m']}", flush=True)
    finally:
        sim.stop()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"benchmark": "repaint_ttft", "size": args.size, "repaint_hz": args.repaint_hz,
                       "streams": args.streams, "max_tokens": args.max_tokens, "runs": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
