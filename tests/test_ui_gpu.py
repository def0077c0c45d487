"""The lane panels' GPU row (docs/GPU.md): shown once any lane of the session has GPU telemetry; a lane without
it says so in one word; none of it when no lane has telemetry (the other dashboard tests and snapshots)."""

from __future__ import annotations

import pytest
from textual.widgets import Label

from lanemon import events as schema
from lanemon.events import Event
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource, sample_events
from lanemon.ui.widgets.lane_panel import LanePanel


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


GB10 = {"ok": True, "source": "dcgm", "power_w": 41.3, "gpu_count": 1,
        "gpus": [{"gpu": "0", "model": "NVIDIA GB10", "util_pct": 87.0, "power_w": 41.3, "temp_c": 52.0,
                  "unified": True, "throttle": [], "xid": 0}]}


async def _panels(events):
    app = make_app(ScriptedSource(events, mode="live", hold=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.1)
        app.redraw()
        await pilot.pause()
        return {p.lane: (p.has_class("-gpu"), p.query_one("#gpu", Label).visual.plain)
                for p in app.screen.query(LanePanel)}


async def test_gpu_row_with_telemetry_on_one_lane():
    events = sample_events()
    t = events[-1].t
    events += [Event(t + 1, schema.LANE, "A", None, {"name": "A", "url": "http://a/v1", "telemetry": "http://a:9400/metrics"}),
               Event(t + 2, schema.GPU, "A", None, GB10)]
    panels = await _panels(events)
    assert panels["A"] == (True, "87% · 41 W · 52 °C · unified")
    assert panels["B"] == (True, "untracked")


async def test_no_gpu_row_without_telemetry():
    panels = await _panels(sample_events())
    assert all(not shown for shown, _ in panels.values())


async def test_gpu_power_chart_on_the_shared_time_axis():
    from lanemon.ui.widgets.time_chart import TimeChart

    events = sample_events()
    t = events[-1].t
    events += [Event(t + 1, schema.LANE, "A", None, {"name": "A", "url": "http://a/v1", "telemetry": "http://a:9400/metrics"})]
    events += [Event(t + 2 + i * 1_000_000_000, schema.GPU, "A", None, {**GB10, "power_w": 20.0 + i}) for i in range(5)]
    app = make_app(ScriptedSource(events, mode="live", hold=True))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.1)
        app.redraw()
        await pilot.pause()
        chart = app.screen.query_one("#chart-gpu", TimeChart)
        assert chart.display and "GPU power (W)" in chart.render().plain
    app = make_app(ScriptedSource(sample_events(), mode="live", hold=True))
    async with app.run_test(size=(160, 45)) as pilot:  # no telemetry: no power chart
        await pilot.pause(0.1)
        app.redraw()
        await pilot.pause()
        assert not app.screen.query_one("#chart-gpu", TimeChart).display


async def test_host_panel_title_carries_this_machines_gpus():
    from lanemon.ui.widgets.host_panel import HostPanel

    events = sample_events()
    t = events[-1].t
    events.append(Event(t + 1, schema.HOST, None, None, {"cpu_pct": 10.0, "cpus": 2, "mem_total": 1 << 30,
                                                         "mem_used": 1 << 29, "mem_pct": 50.0,
                                                         "gpus": GB10["gpus"]}))
    app = make_app(ScriptedSource(events, mode="live", hold=True))
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.press("h")
        await pilot.pause(0.1)
        app.redraw()
        await pilot.pause()
        assert "GPU 87% · 41 W · 52 °C · unified" in str(app.screen.query_one(HostPanel).border_title)
