"""The client-bound notice hides no chart (issue 40 item 9: a 15-s toast covered the KV-cache and GPU-power
charts at 160x45 and the decode chart at 100x30): it is a one-line strip under the status bar, in the flow, gone
15 s of session time later."""

from __future__ import annotations

import time

import pytest
from textual.widgets import Label

from lanemon import events as schema
from lanemon.events import Event
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource
from lanemon.ui.widgets.time_chart import TimeChart

S = 1_000_000_000
MS = 1_000_000
LANES = [{"name": "A", "url": "http://127.0.0.1:18999/v1", "model": "m"}]


def _events(end_s: float):
    evs = [Event(0, schema.LANE, "A", None, {"url": "http://127.0.0.1:18999/v1", "model": "m"}),
           Event(1, schema.PROBE, "A", None, {"ok": True, "model": "m", "latency_s": 0.004})]
    for i in range(6):
        t = (1 + i) * S
        evs += [Event(t, schema.REQUEST, "A", f"r{i}", {"endpoint": "completions", "purpose": "probe"})]
        evs += [Event(t + (100 + 10 * k) * MS, schema.TOKEN, "A", f"r{i}", {"text": "x", "n": 1}) for k in range(10)]
        if i == 3:  # lanemon's loop was starved while r3 ran
            evs.append(Event(t + 150 * MS, schema.CLIENT_LOAD, None, None,
                             {"t0": t + 110 * MS, "lag_ms": 90.0, "bound": True, "cause": "own"}))
        evs.append(Event(t + 200 * MS, schema.DONE, "A", f"r{i}", {"finish_reason": "length"}))
    # the loop watcher's windows (every 0.5 s): a request is judged once they cover its end
    evs += [Event(k * S // 2, schema.CLIENT_LOAD, None, None, {"t0": (k - 1) * S // 2, "lag_ms": 1.0, "bound": False})
            for k in range(1, int(end_s * 2) + 1)]
    evs.sort(key=lambda e: e.t)
    evs.append(Event(int(end_s * S), schema.PROBE, "A", None, {"ok": True, "model": "m", "latency_s": 0.004}))
    return evs


async def _wait(pilot, cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "condition not reached in time"
        await pilot.pause(0.05)


@pytest.mark.parametrize("size", [(160, 45), (100, 30)])
async def test_the_client_bound_notice_is_a_strip_that_hides_no_chart(size):
    app = make_app(ScriptedSource(_events(8.0), lanes=LANES, mode="live", hold=True))
    async with app.run_test(size=size) as pilot:
        await _wait(pilot, lambda: app.state.last_t >= 8 * S and app.state.lane("A").client_bound)
        app.redraw(force=True)
        await pilot.pause()
        await pilot.pause()
        assert not list(app._notifications)  # no toast over the charts
        notice = app.screen.query_one("#notice", Label)
        assert notice.display and "not plotted" in str(notice.render())
        for chart in app.screen.query(TimeChart):
            if chart.display and chart.region.area:
                assert not chart.region.overlaps(notice.region)
        # gone 15 s of session time later
        app.source.bus.publish(Event(30 * S, schema.PROBE, "A", None, {"ok": True, "model": "m", "latency_s": 0.004}))
        await _wait(pilot, lambda: app.state.last_t >= 30 * S)
        app.redraw(force=True)
        await pilot.pause()
        assert not notice.display
