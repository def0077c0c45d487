"""The race screen: pilot tests (replayed fixed events and real simulated lanes) and a snapshot."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Input, Label, Static

from lanemon.cli.common import demo_lanes
from lanemon.config import ProbeConfig
from lanemon.recording.writer import Recorder, make_header
from lanemon.recording.reader import read_events
from lanemon.events import Event
from lanemon.sessions.sources import LiveSession
from lanemon.ui.app import LanemonApp, make_app
from lanemon.ui.sample import ScriptedSource
from lanemon.ui.screens.dashboard import DashboardScreen
from lanemon.ui.screens.race import RaceScreen
from lanemon.ui.widgets.race_column import RaceColumn
from lanemon.ui.widgets.race_results import RaceResults
from lanemon.workloads.race import RacePlan, RacePrompt, race_results, verdict
from test_race_fixtures import LANES, TEXT_A, TEXT_B, race_events

SNAP_PATH = Path("recordings/20260503-101500-race.jsonl")  # fixed: snapshots must not depend on $HOME


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def plain(widget) -> str:
    return widget.visual.plain


def static_text(widget: Static) -> str:
    return str(widget.render())


async def wait_for(pilot, condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)


async def settle(app: LanemonApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.redraw(force=True)
    await pilot.pause()


def columns(app) -> dict[str, RaceColumn]:
    return {c.lane: c for c in app.screen.query(RaceColumn)}


async def test_replay_r_shows_the_last_recorded_race_without_sending_anything():
    events = race_events(races=2)
    source = ScriptedSource(events, lanes=LANES, mode="replay", speed=4.0, recording_path=SNAP_PATH)
    assert not hasattr(source, "race")  # a replay cannot race
    app = make_app(source)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert isinstance(app.screen, DashboardScreen)
        await pilot.press("r")
        await pilot.pause()
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, RaceScreen)
        assert not screen.query(Input)  # no prompt input in a replay
        cols = columns(app)
        assert list(cols) == ["A", "B"]
        assert plain(cols["A"].query_one("#rank", Label)) == "1st"
        assert plain(cols["B"].query_one("#rank", Label)) == "2nd"
        assert cols["A"].has_class("-r1")
        assert static_text(cols["A"].query_one("#text", Static)) == TEXT_A
        assert static_text(cols["B"].query_one("#text", Static)) == TEXT_B
        assert "TTFT 180 ms" in plain(cols["A"].query_one("#stats", Label))
        assert "est." in plain(cols["B"].query_one("#stats2", Label))  # B sent no usage block
        assert plain(screen.query_one("#race-chip", Label)) == "RACE 2 of 2"
        results = screen.query_one(RaceResults)
        assert results.display
        expected = race_results(events).races[1]
        assert plain(results.query_one("#verdict", Label)) == verdict(expected)
        # the result table, as drawn on screen
        console = Console(width=100, record=True, file=io.StringIO())
        console.print(results.query_one("#table", Static).content)
        rows = [" ".join(line.split()) for line in console.export_text().splitlines()]
        a, b = expected.lanes["A"], expected.lanes["B"]
        # the catalogue's labels (as the headless race table), the delta column named: against the winner
        assert rows[0] == "lane rank TTFT per-stream tok/s output tok E2E E2E vs winner E2E × winner"
        assert rows[1] == f"A 1st 180 ms {a.decode_tok_s:.1f} tok/s {a.output_tokens} tok 369 ms winner —"
        assert rows[2] == f"B 2nd 220 ms {b.decode_tok_s:.1f} tok/s {b.output_tokens} tok est. 460 ms +91 ms ×1.25"
        assert (b.behind_s, b.behind_ratio, a.behind_s) == (round(b.total_s - a.total_s, 4),
                                                           round(b.total_s / a.total_s, 4), None)  # the race's own
        # browse back to race 1 and forward again
        await pilot.press("pageup")
        await pilot.pause()
        assert plain(screen.query_one("#race-chip", Label)) == "RACE 1 of 2"
        assert "TTFT 175 ms" in plain(cols["A"].query_one("#stats", Label))
        await pilot.press("pagedown")
        await pilot.pause()
        assert plain(screen.query_one("#race-chip", Label)) == "RACE 2 of 2"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DashboardScreen)


async def test_race_screen_redraws_on_the_timer_not_per_token():
    source = ScriptedSource([], lanes=LANES, mode="replay", hold=True)
    app = make_app(source, refresh_hz=20)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause(0.1)
        await pilot.press("r")
        await pilot.pause(0.1)
        screen = app.screen
        assert isinstance(screen, RaceScreen)
        calls = 0
        original = screen.refresh_from

        def counting(*args):
            nonlocal calls
            calls += 1
            original(*args)

        screen.refresh_from = counting  # type: ignore[method-assign]
        events = race_events(races=1)
        burst = [e for e in events if e.kind != "mark" or e.data.get("phase") == "start"]
        for ev in burst:  # a whole race's tokens with no await in between
            source.bus.publish(ev)
        await pilot.pause(0.2)
        assert 1 <= calls <= 2
        assert static_text(columns(app)["A"].query_one("#text", Static)) == TEXT_A


async def test_dashboard_r_races_through_the_live_session_and_records_it(tmp_path):
    with demo_lanes(0.05) as lanes:
        recorder = Recorder(tmp_path / "demo.jsonl", make_header("demo", [lane.public() for lane in lanes]))
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.2, max_tokens=8), mode="demo", recorder=recorder)
        app = make_app(session, refresh_hz=20)
        async with app.run_test(size=(120, 36)) as pilot:
            await wait_for(pilot, lambda: all(l.up for l in app.state.lanes.values()))
            await pilot.press("r")
            await pilot.pause(0.1)
            screen = app.screen
            assert isinstance(screen, RaceScreen)
            field = screen.query_one("#race-input", Input)
            assert not field.has_focus  # keys are the screen's until the user focuses the box
            await pilot.press("p")  # a key, not a letter typed into the box
            assert field.value == "" and session.paused
            await pilot.press("p")
            await pilot.press("enter")  # Enter races at once (the placeholder says so): the next shipped prompt
            assert not field.has_focus  # and the keys stay the screen's (issue 40 item 3)
            await wait_for(pilot, lambda: app.race_state.latest is not None and app.race_state.latest.complete)
            first = app.race_state.latest
            # and a typed prompt
            field.value = "Explain why the sky is blue, step by step."
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.race_state.latest is not first and app.race_state.latest.complete)
            app.redraw(force=True)
            await pilot.pause()
            cols = columns(app)
            assert set(cols) == {"A", "B"}
            for col in cols.values():
                assert static_text(col.query_one("#text", Static)).strip()
            assert {plain(c.query_one("#rank", Label)) for c in cols.values()} == {"1st", "2nd"}
            assert screen.query_one(RaceResults).display
            assert " finished first by " in plain(screen.query_one("#verdict", Label))
            assert "Explain why the sky is blue" in plain(screen.query_one("#race-prompt-text", Label))
            assert not field.has_focus  # the race gave the keys back
            await pilot.press("slash")
            assert field.has_focus
            await pilot.press("escape")  # first esc leaves the box, the second the screen
            await pilot.pause()
            assert not field.has_focus and isinstance(app.screen, RaceScreen)
            await pilot.press("escape")
            await pilot.pause()
            assert isinstance(app.screen, DashboardScreen)
            await pilot.press("q")
        session.close()
    _, events, warnings = read_events(recorder.path)
    assert warnings == []
    result = race_results(events)
    assert [r.race for r in result.races] == [1, 2]
    assert result.races[1].prompt == "Explain why the sky is blue, step by step."
    assert all(lane.error is None for r in result.races for lane in r.lanes.values())


async def test_after_a_race_the_prompt_box_gives_the_keys_back():
    """Issue 40 item 3: `r`, Enter at 160x45; after the race the footer still shows `q Quit` and `q` quits
    (it used to type a `q` into the box, which kept the focus). A typed prompt gives the keys back too."""
    with demo_lanes(0.05) as lanes:
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.2, max_tokens=8), mode="demo")
        app = make_app(session, refresh_hz=20)
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_for(pilot, lambda: all(l.up for l in app.state.lanes.values()))
            await pilot.press("r")
            await wait_for(pilot, lambda: isinstance(app.screen, RaceScreen))
            screen = app.screen
            field = screen.query_one("#race-input", Input)
            await pilot.press("enter")
            await wait_for(pilot, lambda: app.race_state.latest is not None and app.race_state.latest.complete)
            await pilot.pause()
            assert not field.has_focus
            await wait_for(pilot, lambda: "q" in {k.key for k in screen.query("FooterKey")}, timeout=5)
            await pilot.press("slash")
            assert field.has_focus
            first = app.race_state.latest
            await pilot.press(*"hi", "enter")
            await wait_for(pilot, lambda: app.race_state.latest is not first and app.race_state.latest.complete)
            await pilot.pause()
            assert not field.has_focus and field.value == ""
            await pilot.press("q")
            await wait_for(pilot, lambda: not app.is_running, timeout=10)
            assert field.value == ""
        session.close()


async def test_lanemon_race_opens_the_race_screen_and_runs_the_plan():
    plan = RacePlan(prompts=[RacePrompt("Write a haiku about queues.", id="haiku")] * 2, endpoint="chat",
                    max_tokens=24)
    with demo_lanes(0.05) as lanes:
        session = LiveSession(lanes, probe=ProbeConfig(interval=1.0, enabled=False), mode="demo")
        app = make_app(session, refresh_hz=20, race=plan)
        async with app.run_test(size=(120, 36)) as pilot:
            await pilot.pause(0.1)
            assert isinstance(app.screen, RaceScreen)
            await wait_for(pilot, lambda: len(app.race_state.races) == 2 and app.race_state.latest.complete)
            app.redraw(force=True)
            await pilot.pause()
            assert plain(app.screen.query_one("#race-chip", Label)) == "RACE 2 of 2"
            assert {plain(c.query_one("#rank", Label)) for c in columns(app).values()} == {"1st", "2nd"}
            await pilot.press("ctrl+q")


async def _snapshot_setup(pilot) -> None:
    app = pilot.app
    await settle(app, pilot)
    await pilot.press("r")
    await pilot.pause()
    await settle(app, pilot)


def test_snapshot_race_screen_replay(snap_compare):
    source = ScriptedSource(race_events(races=2), lanes=LANES, mode="replay", speed=4.0, recording_path=SNAP_PATH)
    assert snap_compare(make_app(source), terminal_size=(120, 36), run_before=_snapshot_setup)


def test_snapshot_race_screen_error_light(snap_compare):
    source = ScriptedSource(race_events(races=1, error_in_last=True), lanes=LANES, mode="replay", speed=1.0,
                            recording_path=SNAP_PATH)
    assert snap_compare(make_app(source, theme="lanemon-light"), terminal_size=(100, 30), run_before=_snapshot_setup)


def test_lane_seen_only_in_a_race_gets_a_column():
    """A race over a lane the source did not list still gets a column (fold only)."""
    from lanemon.folds.race import RaceState

    state = RaceState()
    for ev in race_events(races=1):
        state.apply(ev)
    state.apply(Event(5_000_000_000, "mark", None, None, {"bench": "race", "phase": "start", "race": 2,
                                                          "prompt": "p", "lanes": ["A", "C"]}))
    assert list(state.latest.lanes) == ["A", "C"]


async def test_race_text_follows_every_lane_to_its_end_while_it_streams():
    """Long answers streamed in bursts between repaints (as under load): both columns end scrolled
    to their last line, the slower lane too."""
    from lanemon import events as schema
    from test_race_fixtures import _lane

    long_a, long_b = " ".join([TEXT_A] * 6), " ".join([TEXT_B] * 7)
    start = 1_000 * 1_000_000
    events = [Event(start, schema.MARK, None, None, {"label": "race 1", "bench": "race", "phase": "start",
                                                      "race": 1, "prompt": "p", "lanes": ["A", "B"]})]
    events += _lane("A", "A-r1", 1, start + 1_000_000, 170, 3, long_a)
    events += _lane("B", "B-r1", 1, start + 1_000_000, 220, 4, long_b)
    events.sort(key=lambda e: e.t)
    source = ScriptedSource([], lanes=LANES, mode="replay", speed=4.0, recording_path=SNAP_PATH, hold=True)
    app = make_app(source, refresh_hz=30)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        for i in range(0, len(events), 25):  # bursts of 25 events, a repaint or two in between
            for ev in events[i:i + 25]:
                source.bus.publish(ev)
            await pilot.pause(0.04)
        await pilot.pause(0.3)
        app.redraw(force=True)
        await pilot.pause(0.3)
        for lane, col in columns(app).items():
            scroll = col.query_one("#text-scroll")
            assert scroll.max_scroll_y > 5, lane  # the text is longer than the column
            assert scroll.scroll_y == scroll.max_scroll_y, (lane, scroll.scroll_y, scroll.max_scroll_y)
        await pilot.press("q")
