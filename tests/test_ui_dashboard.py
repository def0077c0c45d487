"""Dashboard pilot tests and layout snapshots, driven by a scripted in-memory source."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Label, Static

from lanemon.measure import metrics
from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.records import assemble
from lanemon.ui.app import LanemonApp, make_app
from lanemon.ui.sample import SAMPLE_LANES, ScriptedSource, sample_events
from lanemon.ui.screens.dashboard import DashboardScreen
from lanemon.ui.widgets.lane_panel import LanePanel
from lanemon.ui.widgets.time_chart import TimeChart

SNAP_PATH = Path("recordings/20260503-101500-demo.jsonl")  # fixed: snapshots must not depend on $HOME


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    """No user themes from the developer's real config dir leak into the tests."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def plain(widget: Label | Static) -> str:
    return widget.visual.plain  # type: ignore[union-attr]


async def settle(app: LanemonApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.redraw()
    await pilot.pause()


def expected_series(events: list[Event], lane: str) -> tuple[list[float], list[float]]:
    ttft, tps = [], []
    for rec in assemble(events):
        if rec.lane != lane or not rec.ok:
            continue
        m = metrics.request_metrics(rec)
        if m.ttft_s is not None:
            ttft.append(m.ttft_s)
        if m.decode_tok_s is not None:
            tps.append(m.decode_tok_s)
    return ttft, tps


async def test_dashboard_shows_lanes_metrics_and_errors():
    events = sample_events()
    source = ScriptedSource(events, mode="live", hold=True)
    app = make_app(source)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.1)
        app.redraw()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DashboardScreen)
        panels = list(screen.query(LanePanel))
        assert [p.lane for p in panels] == ["A", "B"]
        ttft_chart = screen.query_one("#chart-ttft", TimeChart)
        decode_chart = screen.query_one("#chart-decode", TimeChart)
        for panel in panels:
            badge = panel.query_one("#badge", Label)
            assert plain(badge).startswith("UP")
            assert badge.has_class("-up")
            ttft, tps = expected_series(events, panel.lane)
            assert ttft and tps
            # every clean request on the shared charts, at its end time; the axes start at zero
            assert [v for _, v in sorted(ttft_chart.series[panel.lane])] == pytest.approx(ttft)
            assert [v for _, v in sorted(decode_chart.series[panel.lane])] == pytest.approx(tps)
            assert plain(panel.query_one("#ttft-last", Label)) == f"{ttft[-1] * 1000:.0f} ms"
            assert plain(panel.query_one("#tps-last", Label)).startswith(f"{tps[-1]:.1f} tok/s")
            assert plain(panel.query_one("#ttft-median", Label)) == f"{metrics.median(ttft) * 1000:.0f} ms"
        assert ttft_chart.y_max >= max(v for pts in ttft_chart.series.values() for _, v in pts)
        assert ttft_chart.y_max <= 2 * max(v for pts in ttft_chart.series.values() for _, v in pts)
        # failed requests are marked on the strip under the plot, never drawn as speed
        assert sorted(f for _, f in ttft_chart.marks["A"]) == ["error"]  # cut before any token: an error
        assert sorted(f for _, f in ttft_chart.marks["B"]) == ["error", "error"]
        assert ttft_chart.colours["A"] != ttft_chart.colours["B"]
        a, b = panels
        assert plain(a.query_one("#badge", Label)) == "UP 11 ms"
        assert plain(a.query_one("#url", Label)) == SAMPLE_LANES[0]["url"]
        assert "1 in flight" in plain(a.query_one("#requests", Label))
        assert "12 ok" in plain(a.query_one("#requests", Label))
        # errors, newest first, with class and message ("[DONE]" survives markup)
        a_errors = plain(a.query_one("#errors", Static)).splitlines()
        assert a_errors == ["+19.3s cut stream ended before [DONE]"]
        b_errors = plain(b.query_one("#errors", Static)).splitlines()
        assert b_errors[0].startswith("+25.1s timeout read timeout")
        assert b_errors[1].startswith("+7.2s http 503 Service Unavailable")
        # B's last request had no usage block: its rate is marked estimated
        assert "est." in plain(b.query_one("#tps-label", Label))
        assert "est." not in plain(a.query_one("#tps-label", Label))
        status = plain(screen.query_one("#info", Label))
        assert f"{len(events):,} events" in status
        assert plain(screen.query_one("#mode", Label)) == "LIVE"

        # pause / resume with p and space
        await pilot.press("p")
        assert source.paused
        app.redraw()
        assert "PAUSED" in plain(screen.query_one("#info", Label))
        await pilot.press("space")
        assert not source.paused
        # + / - are hidden and inert on a live source
        assert app.check_action("faster", ()) is False
        await pilot.press("plus")
        assert source.speed is None

        await pilot.press("q")
        await pilot.pause()
        assert source.stopped
    assert not app.is_running


async def test_redraw_coalesces_bursts_and_skips_idle_frames():
    source = ScriptedSource([], hold=True)
    app = make_app(source, refresh_hz=20)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        screen = app.screen
        calls = 0
        original = screen.refresh_from

        def counting(state, src):
            nonlocal calls
            calls += 1
            original(state, src)

        screen.refresh_from = counting  # type: ignore[method-assign]
        bus = source.bus
        bus.publish(Event(0, schema.REQUEST, "A", "r1", {"endpoint": "chat"}))
        for i in range(1000):  # a token storm: one event each, no await in between
            bus.publish(Event(1_000_000 * (i + 1), schema.TOKEN, "A", "r1", {"text": "x"}))
        bus.publish(Event(2_000_000_000, schema.DONE, "A", "r1", {"finish_reason": "stop"}))
        await pilot.pause(0.2)
        assert 1 <= calls <= 2  # 1002 events, at most a couple of repaints
        before = calls
        assert app.redraw() is False  # nothing changed: idle frames are skipped
        await pilot.pause(0.2)
        assert calls == before
        panel = screen.query_one("#lane-A", LanePanel)
        assert len(screen.query_one("#chart-decode", TimeChart).series["A"]) == 1
        assert "est." in plain(panel.query_one("#tps-label", Label))  # no usage block


async def test_lane_seen_only_in_events_gets_a_panel_and_down_badge():
    source = ScriptedSource(
        [Event(5, schema.PROBE, "C.x", None, {"ok": False, "cls": "connect", "message": "connection refused"})]
    )
    app = make_app(source)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.pause()
        panel = app.screen.query_one("#lane-C_x", LanePanel)
        assert plain(panel.query_one("#badge", Label)) == "DOWN"
        assert panel.has_class("-down")
        assert "connect connection refused" in plain(panel.query_one("#errors", Static))
        # the two configured lanes have not answered a probe yet
        assert plain(app.screen.query_one("#lane-A #badge", Label)) == "…"


async def test_replay_keys_change_speed_and_show_finished():
    source = ScriptedSource(mode="replay", speed=4.0, recording_path=SNAP_PATH)
    app = make_app(source)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert app.check_action("faster", ()) is True
        await pilot.press("plus")
        assert source.speed == 8.0
        await pilot.press("minus", "minus")
        assert source.speed == 2.0
        app.redraw()
        info = plain(app.screen.query_one("#info", Label))
        assert "speed ×2" in info and "replay finished" in info
        assert plain(app.screen.query_one("#path", Label)) == f"from {SNAP_PATH}"


# -- snapshots --------------------------------------------------------------------


def _snap_app(**kw) -> LanemonApp:
    theme = kw.pop("theme", None)
    kw.setdefault("recording_path", SNAP_PATH)
    return make_app(ScriptedSource(**kw), theme=theme)


async def _settle_for_snapshot(pilot) -> None:
    await settle(pilot.app, pilot)


def test_snapshot_dashboard_demo(snap_compare):
    assert snap_compare(_snap_app(), terminal_size=(120, 36), run_before=_settle_for_snapshot)


def test_snapshot_dashboard_replay_light_small(snap_compare):
    app = _snap_app(mode="replay", speed=4.0, theme="lanemon-light")
    assert snap_compare(app, terminal_size=(100, 30), run_before=_settle_for_snapshot)


def test_snapshot_dashboard_four_lanes_large(snap_compare):
    lanes = SAMPLE_LANES + [
        {"name": "C", "url": "http://10.0.0.7:8000/v1", "model": "qwen3-32b"},
        {"name": "D", "url": "http://10.0.0.8:8000/v1", "model": None},
    ]
    app = _snap_app(lanes=lanes, mode="live")
    assert snap_compare(app, terminal_size=(160, 45), run_before=_settle_for_snapshot)


async def test_screenshot_goes_to_the_data_dir_which_is_created(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    app = make_app(ScriptedSource(mode="demo", hold=True))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        app.action_screenshot()
        for _ in range(40):
            await pilot.pause(0.05)
            shots = list((tmp_path / "data" / "lanemon" / "screenshots").glob("*.svg"))
            if shots:
                break
        assert len(shots) == 1 and shots[0].read_text().startswith("<svg")
        await pilot.pause(0.2)
        messages = [n.message for n in app._notifications]
        assert any(str(shots[0]) in m for m in messages), messages
        await pilot.press("q")


async def test_q_quits_and_esc_goes_back_from_every_screen():
    source = ScriptedSource(mode="replay", speed=4.0)
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.2)
        for key, name in (("r", "race"), ("t", "timeline")):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen_name() == name
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen_name() == "dashboard"
        await pilot.press("t")
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
    assert not app.is_running and source.stopped
