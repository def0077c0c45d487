"""What drawing the live dashboard costs, its input fixed: CPU of the UI thread per second of session time.

    PYTHONPATH=src python bench/dashboard_draw_cost.py [--size 160x45] [--seconds 30] [--mode live|replay] [--settle 5]

The real app (``make_app``) under Textual's pilot takes in what ``lanemon demo`` does between probes -- the loop
watcher's windows, host samples, /metrics every 2 s and GPU telemetry every second per lane, a probe streaming on
each lane every 2.5 s (``tests/test_ui_render_cost._demo_events``) -- a redraw period at a time, each period
redrawn and composited as the timer would, the session time simulated (no wall-clock wait).  The same events in
the same order every run, so what differs between two checkouts is their drawing alone: run each with its own
``PYTHONPATH``, alternating (A B A B), and compare.  ``--mode replay``: the same events as a replay playing at 1x
(``ScriptedSource(mode="replay", speed=1)``).  Prints one JSON line: the UI thread's CPU in the app's redraws
(folding the batch, the screens' ``draw``) and in Textual's compositor passes, ms per session second (the pilot's
own turns of the loop, a few times that, left out), and the compositor passes, widget renders and layout passes
per session second.  ``lanemon demo`` itself
(``bench/demo_cpu.sh``) adds the measuring side and the terminal's output on top; this is the part drawing costs.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))


async def run(size: tuple[int, int], seconds: int, mode: str, settle: int = 5) -> dict:
    from textual.screen import Screen
    from textual.widget import Widget

    from lanemon import events as schema
    from lanemon.events import Event
    from lanemon.ui.app import make_app
    from lanemon.ui.sample import ScriptedSource, sample_events
    from tests.test_ui_render_cost import _demo_events, _play, _published

    events = sample_events()
    t = events[-1].t
    events += [Event(t + 1, schema.LANE, lane, None, {"url": f"http://127.0.0.1:1/{lane}", "telemetry": "sim"})
               for lane in ("A", "B")]
    if mode == "replay":
        source = ScriptedSource(events, hold=True, mode="replay", speed=1.0)
    else:
        source = ScriptedSource(events, hold=True, mode="live", real_time=True)
    app = make_app(source, refresh_hz=0.01)  # the bench drives the redraws
    seen: collections.Counter = collections.Counter()
    spent: collections.Counter = collections.Counter()
    render, layout, composite = Widget._render_content, Screen._refresh_layout, Screen._compositor_refresh

    def counting_render(self):
        seen["renders"] += 1
        return render(self)

    def counting_layout(self, *args, **kwargs):
        seen["layouts"] += 1
        return layout(self, *args, **kwargs)

    def counting_composite(self):
        seen["composites"] += 1
        cpu = time.thread_time()
        try:
            return composite(self)
        finally:
            spent["compositor"] += time.thread_time() - cpu

    redraw = type(app).redraw

    def timed_redraw(self, *args, **kwargs):
        cpu = time.thread_time()
        try:
            return redraw(self, *args, **kwargs)
        finally:
            spent["redraw"] += time.thread_time() - cpu

    Widget._render_content, Screen._refresh_layout = counting_render, counting_layout
    Screen._compositor_refresh = counting_composite
    type(app).redraw = timed_redraw
    async with app.run_test(size=size) as pilot:
        await _published(source, pilot)
        source.finished = False  # a replay still playing: the bench publishes the rest as time goes by
        t0 = max(app.state.last_t, app.series.last_t)
        await _play(app, pilot, source, _demo_events(t0, settle))  # the GPU rows and charts appear, the layout settles
        await pilot.pause(0.2)
        t0 = max(app.state.last_t, app.series.last_t)
        seen.clear()
        spent.clear()
        await _play(app, pilot, source, _demo_events(t0, seconds))
        await pilot.pause(0.2)
    return {"size": f"{size[0]}x{size[1]}", "mode": mode, "seconds": seconds, "settle": settle,
            "draw_ms_per_s": round((spent["redraw"] + spent["compositor"]) * 1000 / seconds, 2),
            "redraw_ms_per_s": round(spent["redraw"] * 1000 / seconds, 2),
            "compositor_ms_per_s": round(spent["compositor"] * 1000 / seconds, 2),
            **{f"{k}_per_s": round(v / seconds, 2) for k, v in sorted(seen.items())}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="160x45", help="COLSxROWS (default 160x45)")
    ap.add_argument("--seconds", type=int, default=30, help="session seconds drawn (default 30)")
    ap.add_argument("--mode", choices=("live", "replay"), default="live")
    ap.add_argument("--settle", type=int, default=5,
                    help="session seconds played before the measured ones (default 5; 65 fills the charts' 1-minute "
                         "window, so they scroll as in a demo past its first minute)")
    args = ap.parse_args()
    cols, rows = (int(v) for v in args.size.lower().split("x"))
    print(json.dumps(asyncio.run(run((cols, rows), args.seconds, args.mode, args.settle))))


if __name__ == "__main__":
    main()
