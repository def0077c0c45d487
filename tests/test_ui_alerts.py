"""Alerts in the TUI: an ``alert`` event (live or replayed) is a banner and the bell when it fires; ``!`` lists
every alert, the firing ones on top."""

from __future__ import annotations

import pytest
from textual.widgets import Label, Static

from lanemon import events as schema
from lanemon.events import Event
from lanemon.sessions.sources import MonitorOptions
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource, sample_events
from lanemon.ui.screens.alerts import AlertsScreen


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _alert(t_s: float, state: str, value: float) -> Event:
    return Event(int(t_s * 1e9), schema.ALERT, "A", None, {
        "state": state, "alert": "ttft_p50 > 0.05 for 2s", "rule": "ttft_p50 > 0.05", "for_s": 2.0,
        "severity": "critical", "lane": "A", "values": {"ttft_p50": value}, "since_s": t_s, "t_s": t_s})


async def test_an_alert_rings_shows_a_banner_and_is_listed_on_bang():
    events = sample_events()
    end = events[-1].t / 1e9
    events += [_alert(end + 0.1, "firing", 0.21)]
    source = ScriptedSource(events, mode="live", hold=True)
    app = make_app(source)
    bells = []
    app.bell = lambda: bells.append(1)  # type: ignore[method-assign]
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        app.redraw(force=True)
        await pilot.pause()
        assert bells == [1]
        banners = [n for n in app._notifications if "alert FIRING" in (n.title or "")]
        assert banners and "lane A: ttft_p50 > 0.05 for 2s" in banners[0].message and banners[0].severity == "error"
        assert app.alerts_firing == {("A", "ttft_p50 > 0.05 for 2s"): int((end + 0.1) * 1e9)}
        await pilot.press("exclamation_mark")
        await pilot.pause()
        app.redraw(force=True)
        await pilot.pause()
        assert isinstance(app.screen, AlertsScreen)
        head = app.screen.query_one("#al-head", Label).visual.plain
        body = app.screen.query_one("#al-list", Static).visual.plain
        assert "1 firing" in head and "firing now (1)" in body and "FIRING  [critical]  lane A" in body
        assert "ttft_p50=0.21 s" in body
        app.source.bus.publish(_alert(end + 3, "resolved", 0.02))
        app.redraw(force=True)
        await pilot.pause()
        body = app.screen.query_one("#al-list", Static).visual.plain
        assert "firing now" not in body and "resolved [critical]  lane A" in body
        assert bells == [1]  # resolving does not ring


async def test_the_window_table_shows_slo_attainment_and_goodput_and_charts_mark_misses():
    """``--slo`` on live/demo: per lane over the chart window, the share meeting every target and good req/s
    (folds/monitor.slo_window), and a ▴ mark where a request that missed ended (folds/monitor.breaches)."""
    from lanemon.folds.monitor import breaches, slo_window
    from lanemon.ui.widgets.lane_stats import LaneStats
    from lanemon.ui.widgets.time_chart import TimeChart

    source = ScriptedSource(sample_events(), mode="live", hold=True)
    source.monitor_options = MonitorOptions(slo={"ttft": 0.2})
    app = make_app(source)
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause(0.2)
        app.redraw(force=True)
        await pilot.pause()
        t1 = max(app.state.last_t, app.series.last_t)
        t0 = max(0, t1 - app.screen.window_s * 1_000_000_000)
        share, good = slo_window(app.series, "A", t0, t1, {"ttft": 0.2}, final=bool(source.finished))
        assert share is not None
        table = app.screen.query_one(LaneStats)
        text = "\n".join(line.text for line in table.render_lines(table.region.reset_offset))
        assert "SLO met" in text and "good/s" in text and f"{share:.0%}" in text
        chart = app.screen.query_one("#chart-ttft", TimeChart)
        slo_marks = 0
        for lane in ("A", "B"):
            missed = breaches(app.series, lane, t0, t1, {"ttft": 0.2})
            marks = chart.marks.get(lane, [])
            other = {t for t, f in marks if f != "slo"}  # an error is marked as an error (it missed too)
            assert sorted(t for t, f in marks if f == "slo") == [t for t in missed if t not in other]
            slo_marks += sum(1 for _, f in marks if f == "slo")
        assert slo_marks > 0  # lane B's TTFT (~0.22 s) misses 0.2 s


def test_the_alert_log_holds_the_typed_alert_and_a_cut_one_still_shows():
    """The dashboard reads an alert as results/monitor_events.AlertEvent (issue 37); a cut or odd recording's alert
    (keys missing, a value of the wrong type) is shown with what it has, escapes stripped, never dropped."""
    import math

    from lanemon.results.monitor_events import AlertEvent, event_data
    from lanemon.ui.screens.alerts import VALUES_SHOWN, brief_alert, render_alerts

    whole = AlertEvent(state="firing", alert="slow", rule="ttft_p50 > 1", for_s=2.0, severity="critical", lane="A",
                       values={"ttft_p50": 2.5, "e2e_p50": None}, since_s=1.0, t_s=3.0)
    assert brief_alert(event_data(whole)) == whole
    cut = brief_alert({"state": "firing", "alert": "slow\x1b[31m ttft", "for_s": "long",
                       "values": {f"v{i}\x07": float(i) for i in range(20)}})
    assert isinstance(cut, AlertEvent) and cut.alert == "slow ttft" and cut.state == "firing"
    assert cut.severity == "warning" and cut.lane == "" and math.isnan(cut.for_s) and math.isnan(cut.t_s)
    assert list(cut.values) == [f"v{i}" for i in range(VALUES_SHOWN)]
    text = render_alerts([(1, "A", cut), (2, "A", brief_alert(event_data(whole)))], {("A", cut.alert): 1}).plain
    assert "● A  slow ttft" in text and "lane A: slow ttft  (v0=0 v1=1" in text
    assert "lane A: slow  (ttft_p50=2.5 s e2e_p50=-)" in text
    assert brief_alert({}).state == "?"
