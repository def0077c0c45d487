"""2 to 8 lanes from 100x30 to 240x70: full lane cards where they fit, one-line lane rows where they
would crowd out the charts, figures dropped least important first; the shared LaneCard look.

The 8-lane snapshots were looked at (rendered to PNG) before they were accepted.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from textual.widgets import Label

from lanemon import events as schema
from lanemon.events import Event
from lanemon.ui.app import make_app
from lanemon.ui.colours import lane_colour
from lanemon.ui.sample import _PROFILE, MS, ScriptedSource, _request, sample_events
from lanemon.ui.widgets.lane_panel import LanePanel, fit, lane_grid
from test_host_metrics import metric_events

SNAP_PATH = Path("recordings/20260503-101500-demo.jsonl")


def lanes_and_events(n: int) -> tuple[list[dict], list[Event]]:
    """``n`` lanes A, B, C...: A and B as in the sample session; lane k > 2 runs A's request profile
    with TTFT k x 12 % longer and decode as much slower (so the charts tell the lanes apart)."""
    names = [chr(ord("A") + i) for i in range(n)]
    lanes = [{"name": x, "url": f"http://10.0.0.{i + 1}:8000/v1", "model": f"model-{x.lower()}-32b"}
             for i, x in enumerate(names)]
    evs = [e for e in sample_events() if e.lane in names]
    for k, x in enumerate(names[2:], start=1):
        f = 1 + 0.12 * k
        evs.append(Event(60 * MS + k * MS, schema.PROBE, x, None, {"ok": True, "latency_s": 0.01 * k, "models": ["m"]}))
        for i, (ttft, tps) in enumerate(_PROFILE["A"]):
            evs += _request(x, f"{x}-{i}", 200 * MS + k * 150 * MS + i * 2_000 * MS, ttft * f, tps / f)
    evs += metric_events()  # A and B scrape /metrics (their gauges stay out of a one-line row)
    evs.sort(key=lambda e: e.t)
    return lanes, evs


def app_with(n: int):
    lanes, evs = lanes_and_events(n)
    return make_app(ScriptedSource(evs, lanes=lanes, mode="replay", speed=4.0, recording_path=SNAP_PATH))


async def settle(pilot) -> None:
    app = pilot.app
    for _ in range(60):
        await pilot.pause(0.05)
        if app.source.finished:
            break
    await pilot.pause(0.2)
    app.redraw(force=True)
    await pilot.pause(0.2)
    app.redraw(force=True)
    await pilot.pause()


async def until(pilot, ok, timeout: float = 10.0) -> None:
    """Event-loop turns until ``ok()`` holds (or ``timeout`` s): the state a test asserts next, not a fixed
    sleep (they were 0.2-0.3 s each, about 20 of them in this file)."""
    deadline = time.monotonic() + timeout
    while not ok() and time.monotonic() < deadline:
        await pilot.pause(0.02)


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


# -- the rule -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("lanes, size, expected", [
    (2, (100, 30), (2, False)),   # two cards side by side
    (3, (100, 30), (3, False)),
    (4, (100, 30), (2, True)),    # 2 x 2 cards would take half the screen: rows, two per line
    (8, (100, 30), (2, True)),    # four lines of two
    (4, (160, 45), (4, False)),   # one row of four cards
    (8, (160, 45), (3, True)),    # two rows of cards would take 18 of 45 rows
    (8, (240, 70), (8, False)),   # one row of eight cards
    (1, (100, 30), (1, False)),   # a zoomed lane is always a full card
])
def test_lane_grid_picks_cards_or_rows_by_the_room(lanes, size, expected):
    assert lane_grid(lanes, *size) == expected


def test_fit_drops_the_least_important_figures_first_and_keeps_the_order():
    parts = [(0, "[b]TTFT 169 ms[/]", "TTFT 169 ms"), (4, "12 ok", "12 ok"), (1, "150.6 tok/s", "150.6 tok/s"),
             (2, "1 err", "1 err"), (6, "model-x", "model-x")]
    assert fit(parts, 200) == "[b]TTFT 169 ms[/]  12 ok  150.6 tok/s  1 err  model-x"
    assert fit(parts, 31) == "[b]TTFT 169 ms[/]  150.6 tok/s  1 err"   # ok (4) and model (6) left out
    assert fit(parts, 30) == "[b]TTFT 169 ms[/]  150.6 tok/s"          # then the errors too
    assert fit(parts, 38) == "[b]TTFT 169 ms[/]  12 ok  150.6 tok/s  1 err"  # a lesser one that still fits
    assert fit(parts, 37) == "[b]TTFT 169 ms[/]  150.6 tok/s  1 err"
    assert fit(parts, 3) == "[b]TTFT 169 ms[/]"  # the first stays; the label's ellipsis cuts it


# -- on screen ----------------------------------------------------------------------------------------

def plain(label: Label) -> str:
    return str(label.render())


async def test_eight_lanes_at_100x30_are_one_line_each_and_leave_the_charts_room():
    app = app_with(8)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        panels = list(app.screen.query(LanePanel))
        assert len(panels) == 8
        assert all(p.compact and p.outer_size.height == 1 for p in panels)
        a, b = panels[0], panels[1]
        assert plain(a.query_one("#brief", Label)).startswith("TTFT 169 ms  150.6 tok/s")
        assert "2 err" in plain(b.query_one("#brief", Label))  # errors come before the ok count
        assert plain(a.query_one("#badge", Label)) == "UP"  # a narrow row drops the probe latency
        assert not a.query_one("#url", Label).display
        assert a.query_one("ServerGauges").has_class("-shown")  # /metrics scraped, yet the row stays one line
        grid = app.screen.query_one("#lanes")
        assert grid.outer_size.height == 4  # two per line
        assert app.screen.query_one("#chart-ttft").outer_size.height >= 10
        # every lane's name chip in its chart colour
        for i, p in enumerate(panels):
            assert p.query_one("#name", Label).styles.background.hex == lane_colour(app, i)
        await pilot.press("z")  # zoomed at 100x30: the lane's one-line row, the charts take the screen
        chart = app.screen.query_one("#chart-ttft")
        await until(pilot, lambda: not any(p.display for p in panels[1:]) and chart.outer_size.height >= 10)
        assert panels[0].display and not any(p.display for p in panels[1:])
        assert panels[0].compact and panels[0].outer_size.height == 1
        assert app.screen.query_one("#chart-ttft").outer_size.height >= 10


async def test_a_click_on_a_one_line_row_or_a_card_zooms_that_lane_and_esc_or_z_return():
    from lanemon.ui.widgets.time_chart import TimeChart

    def shown(app) -> list[str]:
        return [p.lane for p in app.screen.query(LanePanel) if p.display]

    app = app_with(8)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.panel("C").compact
        await pilot.click("#lane-C", offset=(30, 0))  # a one-line row, on its figures
        await until(pilot, lambda: shown(app) == ["C"])
        assert screen.zoomed == "C" and shown(app) == ["C"]
        app.redraw(force=True)
        ttft = screen.query_one("#chart-ttft", TimeChart)
        await until(pilot, lambda: set(ttft.series) == {"C"} and ttft.outer_size.height >= 10)
        assert set(ttft.series) == {"C"} and ttft.outer_size.height >= 10
        # A's /metrics: zoomed on A, the server charts are shown too, in a second row, even at 100x30
        await pilot.press("1")
        app.redraw(force=True)
        queue, kv = screen.query_one("#chart-server", TimeChart), screen.query_one("#chart-kv", TimeChart)
        await until(pilot, lambda: shown(app) == ["A"] and queue.display and kv.display
                    and queue.region.y >= ttft.region.bottom and queue.outer_size.height >= 8)
        assert screen.zoomed == "A" and shown(app) == ["A"]
        assert queue.display and kv.display and screen.query_one("#chart-tput", TimeChart).display
        assert queue.region.y >= ttft.region.bottom and queue.outer_size.height >= 8
        assert screen.check_action("back", ()) is True  # esc is offered while zoomed, on the first screen too
        await pilot.press("escape")
        await until(pilot, lambda: len(shown(app)) == 8)
        assert screen.zoomed is None and len(shown(app)) == 8 and app.screen is screen
        await pilot.press("z")  # z zooms the lane zoomed last, z again returns
        await until(pilot, lambda: screen.zoomed == "A")
        assert screen.zoomed == "A"
        await pilot.press("z")
        await until(pilot, lambda: screen.zoomed is None)
        assert screen.zoomed is None and screen.check_action("back", ()) is False

    app = app_with(2)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.click("#lane-B", offset=(10, 3))  # a full card
        await until(pilot, lambda: shown(app) == ["B"])
        assert screen.zoomed == "B" and shown(app) == ["B"] and not screen.panel("B").compact
        await pilot.click("#lane-B", offset=(10, 3))  # the zoomed card again: every lane
        await until(pilot, lambda: shown(app) == ["A", "B"])
        assert screen.zoomed is None and shown(app) == ["A", "B"]


async def test_a_lane_first_seen_while_zoomed_stays_hidden_until_the_zoom_ends():
    from lanemon.folds.dashboard import SessionState

    app = app_with(2)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        screen = app.screen
        await pilot.press("z")
        await until(pilot, lambda: screen.zoomed == "A")
        state = SessionState()
        for ev in lanes_and_events(3)[1]:
            state.apply(ev)
        screen.refresh_from(state, app.source)
        await until(pilot, lambda: [p.lane for p in screen.query(LanePanel)] == ["A", "B", "C"]
                    and [p.lane for p in screen.query(LanePanel) if p.display] == ["A"])
        assert [p.lane for p in screen.query(LanePanel)] == ["A", "B", "C"]
        assert [p.lane for p in screen.query(LanePanel) if p.display] == ["A"]
        await pilot.press("escape")
        await until(pilot, lambda: all(p.display for p in screen.query(LanePanel)))
        assert all(p.display for p in screen.query(LanePanel))


async def test_eight_lanes_at_240x70_and_two_at_100x30_keep_full_cards():
    for n, size in ((8, (240, 70)), (2, (100, 30))):
        app = app_with(n)
        async with app.run_test(size=size) as pilot:
            await settle(pilot)
            panels = list(app.screen.query(LanePanel))
            assert not any(p.compact for p in panels)
            assert all(p.outer_size.height >= 6 for p in panels)
            assert len({p.region.y for p in panels}) == 1  # one row of cards
            gauges = panels[0].query_one("ServerGauges")
            kv = plain(gauges.query_one("#srv-kv-val", Label))
            assert kv.startswith("2.0%")
            # 8 cards of ~28 columns: the KV figure without its bar (a bar would leave no room for it)
            assert gauges.query_one("#srv-kv-bar").display is (n == 2)
            assert gauges.query_one("#srv-kv-val").region.width >= len("2.0%")


async def test_shrinking_the_terminal_switches_cards_to_rows_and_back():
    app = app_with(8)
    async with app.run_test(size=(240, 70)) as pilot:
        await settle(pilot)
        assert not any(p.compact for p in app.screen.query(LanePanel))
        await pilot.resize_terminal(100, 30)
        await until(pilot, lambda: all(p.compact for p in app.screen.query(LanePanel)))
        assert all(p.compact for p in app.screen.query(LanePanel))
        await pilot.resize_terminal(240, 70)
        await until(pilot, lambda: not any(p.compact for p in app.screen.query(LanePanel)))
        assert not any(p.compact for p in app.screen.query(LanePanel))


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_snapshot_dashboard_eight_lanes(snap_compare, size):
    assert snap_compare(app_with(8), terminal_size=size, run_before=settle)


def test_window_table_leaves_out_all_zero_counts_only_when_too_wide():
    from rich.text import Text

    from lanemon.ui.widgets.lane_stats import COLUMNS, fitting_columns

    def row(trunc: str) -> list:
        return [Text("■ H"), "0.48", "12", Text("0"), Text(trunc), Text("0"), Text("0"), "295·322·340 ms",
                "11.6·12.0·12.3 ms", "1,025·1,080·1,113 ms"]

    everything = list(range(len(COLUMNS)))
    assert fitting_columns(list(COLUMNS), [row("0")], 200) == everything
    # 100 columns less the padding: `empty` (all zeros) goes first, and that is enough
    assert fitting_columns(list(COLUMNS), [row("0")], 96) == [i for i in everything if i != 5]
    # narrower: then `trunc`, then `flag`; a count that is not zero stays, however narrow
    assert fitting_columns(list(COLUMNS), [row("0")], 80) == [i for i in everything if i not in (4, 5, 6)]
    # ... and where that is still too wide, the E2E percentiles go whole (lane_stats.WHOLE, issue 40 item 10)
    assert fitting_columns(list(COLUMNS), [row("3")], 80) == [i for i in everything if i not in (5, 6, 9)]


async def test_name_chips_follow_a_theme_change():
    app = app_with(2)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        b = app.screen.query_one("#lane-B #name", Label)
        assert b.styles.background.hex == lane_colour(app, 1)
        before = b.styles.background.hex
        app.theme = "lanemon-light"
        await until(pilot, lambda: b.styles.background.hex != before)
        assert b.styles.background.hex == lane_colour(app, 1) != before
