"""Dashboard pilot tests and layout snapshots, driven by a scripted in-memory source."""

from __future__ import annotations

from lanemon.public_lane import PublicLane

import math
from datetime import datetime, timedelta, timezone
from pathlib import Path

import msgspec
import pytest
from textual.widgets import Label, Static

from lanemon.measure import metrics
from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.records import assemble
from lanemon.ui.app import LanemonApp, make_app
from lanemon.ui.sample import SAMPLE_LANES, ScriptedSource, sample_events
from lanemon.ui.screens.dashboard import DashboardScreen, wall_start_s
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
        assert plain(a.query_one("#url", Label)) == SAMPLE_LANES[0].url
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
        assert "connection refused" in plain(panel.query_one("#errors", Static))
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


# -- wall-clock axis ------------------------------------------------------------------

SNAP_START = datetime(2026, 5, 3, 10, 15, 0, tzinfo=timezone.utc)


def test_wall_start_from_the_source_the_recording_or_the_live_clock():
    import time
    from types import SimpleNamespace

    from lanemon.events import Clock

    def app_of(source, header_s=None):
        return SimpleNamespace(source=source, wall_base_s=lambda: header_s)

    # a live session's clock started 5 s ago: session time 0 was 5 s before now on the wall
    clock = Clock(time.perf_counter_ns() - 5 * 1_000_000_000)
    assert wall_start_s(app_of(SimpleNamespace(mode="live", clock=clock))) == pytest.approx(time.time() - 5, abs=0.5)
    # a replay: the recording's header, never now
    assert wall_start_s(app_of(SimpleNamespace(mode="replay"), 1_777_803_300.0)) == 1_777_803_300.0
    assert wall_start_s(app_of(SimpleNamespace(mode="replay", clock=clock))) is None
    # said outright by the source
    assert wall_start_s(app_of(SimpleNamespace(mode="demo", wall_t0_s=1.7e9, clock=clock), 99.0)) == 1.7e9
    # a hostile header (year 9999, 1970, NaN) is not believed: the axis keeps session time, nothing overflows
    for bad in (253_402_300_799.0, 0.0, float("nan")):
        assert wall_start_s(app_of(SimpleNamespace(mode="replay"), bad)) is None


async def test_replay_x_axis_is_the_time_of_the_recording_not_now(tmp_path):
    """A recording made at 10:15:00 UTC replays with 10:15:xx on the x axis (zone given, not the machine's)."""
    from lanemon.recording.writer import Recorder, make_header
    from lanemon.sessions.sources import ReplaySession

    with Recorder(tmp_path / "s.jsonl", make_header("demo", msgspec.to_builtins(SAMPLE_LANES),
                                                    {"created": SNAP_START.isoformat()})) as rec:
        for ev in sample_events():
            rec(ev)
    source = ReplaySession(rec.path, speed=math.inf)
    app = make_app(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        app.screen.tz = timezone.utc
        app.redraw(force=True)
        await pilot.pause()
        for chart_id in ("#chart-ttft", "#chart-decode", "#chart-tput"):
            chart = app.screen.query_one(chart_id, TimeChart)
            labels = [text for _, text in chart.x_labels]
            assert len(labels) >= 2 and all(x.startswith("10:15:") for x in labels), labels
            assert chart.render().plain.split("\n")[-1].strip().startswith("10:15:")
        # another zone: the same instants, other labels
        app.screen.tz = timezone(timedelta(hours=-4))
        app.redraw(force=True)
        await pilot.pause()
        chart = app.screen.query_one("#chart-ttft", TimeChart)
        chart.render()
        assert all(text.startswith("06:15:") for _, text in chart.x_labels)


async def test_replay_of_a_header_from_year_9999_keeps_session_time(tmp_path):
    from lanemon.recording.writer import Recorder, make_header
    from lanemon.sessions.sources import ReplaySession

    with Recorder(tmp_path / "s.jsonl", make_header("demo", msgspec.to_builtins(SAMPLE_LANES),
                                                    {"created": "9999-12-31T23:59:59+00:00"})) as rec:
        for ev in sample_events():
            rec(ev)
    app = make_app(ReplaySession(rec.path, speed=math.inf))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        chart = app.screen.query_one("#chart-ttft", TimeChart)
        chart.render()
        assert chart.wall is None and [text for _, text in chart.x_labels][0] == "+0.0s"


# -- server charts: queue and KV cache ------------------------------------------------


def server_events() -> list[Event]:
    """The sample session plus /metrics scrapes every second: A (vLLM) with KV use rising 10 % -> 58 %
    and one hostile scrape (KV 750 %, a NaN queue); B has none (no /metrics)."""
    out = list(sample_events())
    for i in range(25):
        data = {"ok": True, "engine": "vllm", "running": i % 4, "waiting": max(0, i % 4 - 2),
                "kv_usage": 0.10 + 0.02 * i}
        if i == 12:
            data = {"ok": True, "engine": "vllm", "running": float("nan"), "waiting": 1, "kv_usage": 7.5}
        out.append(Event((i + 1) * 1_000_000_000 - 1, schema.SERVER_METRICS, "A", None, data))
    out.sort(key=lambda ev: ev.t)
    return out


async def test_kv_chart_in_percent_for_lanes_with_metrics_and_its_place_on_short_screens():
    app = make_app(ScriptedSource(server_events(), mode="replay", recording_path=SNAP_PATH))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        kv = screen.query_one("#chart-kv", TimeChart)
        queue = screen.query_one("#chart-server", TimeChart)
        assert kv.display and queue.display and screen.query_one("#chart-tput", TimeChart).display
        assert list(kv.series) == ["A"]  # B exposes no /metrics: not on the server charts
        assert [v for _, v in kv.series["A"]] == pytest.approx([0.10 + 0.02 * i for i in range(25) if i != 12])
        assert kv.y_max == 1.0
        lines = kv.render().plain.split("\n")
        assert lines[1].lstrip().startswith("100 %") and any(line.lstrip().startswith("50 %") for line in lines)
        # running and waiting are two series of lane A, A's colour; the NaN running figure is not drawn
        assert set(queue.series) == {"A running", "A waiting"} and set(queue.lane_of.values()) == {"A"}
        assert [v for _, v in queue.series["A running"]] == [i % 4 for i in range(25) if i != 12]
        assert [v for _, v in queue.series["A waiting"]] == [1 if i == 12 else max(0, i % 4 - 2) for i in range(25)]
        assert queue.dashed == {"A waiting"} and not queue.shared  # one lane's two series share no cell
        head = queue.render().plain.split("\n")[0]
        assert "━━ A" in head and "━ running" in head and "┄ waiting" in head
        assert kv.colours["A"] == screen.query_one("#chart-ttft", TimeChart).colours["A"]
        assert app.screen.check_action("chart", ()) is False  # a tall screen shows all five charts
        # two rows: the two server charts under the three request charts, all of them at least a third wide
        assert kv.region.y > screen.query_one("#chart-ttft", TimeChart).region.bottom - 1
        assert all(screen.query_one(f"#{c}", TimeChart).region.width >= 45 for c in
                   ("chart-ttft", "chart-decode", "chart-tput", "chart-server", "chart-kv"))

    app = make_app(ScriptedSource(server_events(), mode="replay", recording_path=SNAP_PATH))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        shown = lambda: [c for c in ("chart-tput", "chart-server", "chart-kv")  # noqa: E731
                         if screen.query_one(f"#{c}", TimeChart).display]
        assert shown() == ["chart-tput"] and app.screen.check_action("chart", ()) is True
        for expected in (["chart-server"], ["chart-kv"], ["chart-tput"]):
            await pilot.press("c")
            app.redraw()
            await pilot.pause()
            assert shown() == expected
        assert screen.query_one("#chart-ttft", TimeChart).region.height >= 12


async def test_w_widens_and_shift_w_narrows_the_window_of_charts_and_numbers():
    app = make_app(ScriptedSource(mode="replay", recording_path=SNAP_PATH))
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        seen = []
        for key in ("w", "w", "w", "W", "W"):
            await pilot.press(key)
            app.redraw()
            await pilot.pause()
            seen.append((screen.window_s, screen.query_one("#chart-ttft", TimeChart).note))
        assert seen == [(300, "last 5 min"), (900, "last 15 min"), (60, "last 1 min"), (900, "last 15 min"),
                        (300, "last 5 min")]


async def test_no_server_charts_and_no_chart_key_without_metrics():
    app = make_app(ScriptedSource(mode="replay", recording_path=SNAP_PATH))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert not app.screen.query_one("#chart-kv", TimeChart).display
        assert not app.screen.query_one("#chart-server", TimeChart).display
        assert app.screen.check_action("chart", ()) is False
        await pilot.press("c")
        app.redraw()
        assert app.screen.query_one("#chart-tput", TimeChart).display


# -- snapshots --------------------------------------------------------------------


def _snap_app(**kw) -> LanemonApp:
    theme = kw.pop("theme", None)
    kw.setdefault("recording_path", SNAP_PATH)
    events = kw.pop("events", None)
    source = ScriptedSource(events, **kw)
    source.wall_t0_s = SNAP_START.timestamp()  # type: ignore[attr-defined]  # wall-clock x axis, fixed
    return make_app(source, theme=theme)


async def _settle_for_snapshot(pilot) -> None:
    pilot.app.screen.tz = timezone.utc  # not the machine's zone
    await settle(pilot.app, pilot)


def test_snapshot_dashboard_demo(snap_compare):
    assert snap_compare(_snap_app(), terminal_size=(120, 36), run_before=_settle_for_snapshot)


def test_snapshot_dashboard_replay_light_small(snap_compare):
    app = _snap_app(mode="replay", speed=4.0, theme="lanemon-light")
    assert snap_compare(app, terminal_size=(100, 30), run_before=_settle_for_snapshot)


def test_snapshot_dashboard_server_charts_large(snap_compare):
    app = _snap_app(events=server_events(), mode="replay", speed=4.0)
    assert snap_compare(app, terminal_size=(160, 45), run_before=_settle_for_snapshot)


def test_snapshot_dashboard_kv_chart_small(snap_compare):
    async def kv_in_third_place(pilot) -> None:
        await _settle_for_snapshot(pilot)
        await pilot.press("c", "c")
        pilot.app.redraw()
        await pilot.pause()

    app = _snap_app(events=server_events(), mode="replay", speed=4.0)
    assert snap_compare(app, terminal_size=(100, 30), run_before=kv_in_third_place)


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_dashboard_zoomed_lane(snap_compare, size):
    """``z``: lane A on the whole screen (card, window numbers, all five charts, the queue as running and waiting)."""
    async def zoomed(pilot) -> None:
        await _settle_for_snapshot(pilot)
        await pilot.press("z")
        await pilot.pause(0.2)
        pilot.app.redraw(force=True)
        await pilot.pause()

    app = _snap_app(events=server_events(), mode="replay", speed=4.0)
    assert snap_compare(app, terminal_size=size, run_before=zoomed)


def test_snapshot_dashboard_four_lanes_large(snap_compare):
    lanes = SAMPLE_LANES + [
        PublicLane("C", "http://10.0.0.7:8000/v1", "qwen3-32b"),
        PublicLane("D", "http://10.0.0.8:8000/v1", None),
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
