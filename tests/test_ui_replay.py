"""The dashboard over a real recording: Recorder -> file -> ReplaySession -> same panels."""

from __future__ import annotations

import math
import time

from pathlib import Path

import msgspec
import pytest
from textual.widgets import Label, Static

from lanemon.recording.writer import Recorder, make_header
from lanemon.sessions.sources import ReplaySession
from lanemon.folds.dashboard import SessionState
from lanemon.ui import format as fmt
from lanemon.ui.app import make_app
from lanemon.ui.sample import SAMPLE_LANES, sample_events
from lanemon.ui.widgets.lane_panel import LanePanel


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def plain(widget) -> str:
    return widget.visual.plain


@pytest.fixture
def recording(tmp_path):
    with Recorder(tmp_path / "session.jsonl", make_header("demo", msgspec.to_builtins(SAMPLE_LANES))) as rec:
        for ev in sample_events():
            rec(ev)
    return rec.path


async def test_replay_at_max_speed_matches_direct_fold(recording):
    events = sample_events()
    direct = SessionState([(d.name, d.url, d.model) for d in SAMPLE_LANES])
    for ev in events:
        direct.apply(ev)

    source = ReplaySession(recording, speed=math.inf)
    app = make_app(source)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        app.redraw()
        await pilot.pause()
        assert source.finished
        assert app.state.events == len(events)
        for name, lane in direct.lanes.items():
            panel = app.screen.query_one(f"#lane-{name}", LanePanel)
            chart = app.screen.query_one("#chart-ttft")
            assert [v for _, v in sorted(chart.series[name])] == list(lane.ttft_history)
            assert plain(panel.query_one("#ttft-last", Label)) == fmt.seconds(lane.last_ttft_s)
            assert plain(panel.query_one("#ttft-median", Label)) == fmt.seconds(lane.median_ttft_s)
            assert plain(panel.query_one("#tps-median", Label)) == fmt.tok_s(lane.median_tps)
            assert plain(panel.query_one("#model", Label)) == f"model {lane.model}"
            requests = plain(panel.query_one("#requests", Label))
            assert f"{lane.in_flight} in flight" in requests
            assert f"{lane.requests_ok} ok" in requests and f"{lane.requests_err} err" in requests
            errors = plain(panel.query_one("#errors", Static)).splitlines()
            assert len(errors) == len(lane.errors)
            assert errors[0].endswith(lane.errors[-1][2])
        info = plain(app.screen.query_one("#info", Label))
        assert "speed max" in info and "replay finished" in info
        assert plain(app.screen.query_one("#mode", Label)) == "REPLAY · SIM"  # the sample is the simulator's
        assert str(recording.name) in plain(app.screen.query_one("#path", Label))
        # speed keys reach the real session
        await pilot.press("minus")
        assert source.speed == 64.0
        await pilot.press("plus")
        assert math.isinf(source.speed)


async def test_replay_pause_key_pauses_playback(recording):
    source = ReplaySession(recording, speed=1.0)
    app = make_app(source)
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.press("p")
        assert source.paused
        await pilot.pause(0.15)
        published = source.published
        await pilot.pause(0.15)
        assert source.published == published  # nothing moves while paused
        await pilot.press("p")
        assert not source.paused
        await pilot.press("q")
    assert not source.finished  # quit long before the 25 s recording ended


SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
OPENS = {"decode": "bench", "prefill": "bench", "needles": "bench", "today": "bench", "yesterday": "bench",
         "gauntlet": "gauntlet", "races": "race", "demo": "dashboard", "agree": "result", "kl": "result",
         "qeval-A": "result", "qeval-B": "result"}


async def _until(pilot, ok, timeout: float = 20.0) -> None:
    """Event-loop turns until ``ok()`` holds, at most ``timeout`` s (the caller asserts it next): the screen
    the replay opens and its first events, where a fixed 0.3 s pause was (12 tests here, 12 below)."""
    deadline = time.monotonic() + timeout
    while not ok() and time.monotonic() < deadline:
        await pilot.pause(0.02)


@pytest.mark.parametrize("name", sorted(OPENS))
async def test_replaying_each_sample_session_opens_the_screen_its_run_showed(name):
    """A bench recording opens the bench screen, a gauntlet the gauntlet, races the race screen;
    headless workloads (agree, kl, qeval) and demo sessions the dashboard.  Esc goes back to it."""
    from lanemon.sessions.sources import ReplaySession

    path = SAMPLES / f"{name}.jsonl"
    # played in real time: the screen is the one the run opened (the seeking test below plays each to its end
    # at max speed and holds the screen there); at max speed this test folded all of decode.jsonl's 88,000
    # events (today's and yesterday's 47,000) in the background while it waited 0.3 s and pressed two keys
    source = ReplaySession(path, speed=1.0)
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await _until(pilot, lambda: source.published > 0 and app.screen_name() == OPENS[name])
        assert source.published > 0  # the replay is playing
        assert app.screen_name() == OPENS[name]
        if OPENS[name] != "dashboard":
            await pilot.press("escape")
            await pilot.pause()
            assert app.screen_name() == "dashboard"
        await pilot.press("q")


@pytest.mark.parametrize("name", sorted(OPENS))
async def test_seeking_each_sample_session_at_max_speed_holds_and_keeps_its_screen(name):
    """At --speed max, home / ] / end seek without playing straight on to the end (the replay holds the
    position, paused), the workload's screen stays, and the folds it draws from end where the run ended."""
    from test_replay_controls import wait_seek

    from lanemon.recording.reader import read_events
    from lanemon.sessions.sources import ReplaySession

    path = SAMPLES / f"{name}.jsonl"
    source = ReplaySession(path, speed=float("inf"))
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await _until(pilot, lambda: source.published > 0 and app.screen_name() == OPENS[name])
        await pilot.press("home")  # very likely still playing: a seek at max speed must hold it
        await wait_seek(app, pilot)
        assert source.playhead_ns == 0 and source.paused and not source.finished
        published = source.published
        await pilot.pause(0.3)
        assert source.published == published  # held: nothing played on
        assert app.screen_name() == OPENS[name]
        target = app.marker_target(1)
        if target is not None:
            await pilot.press("right_square_bracket")
            await wait_seek(app, pilot)
            assert source.playhead_ns == target and source.paused and not source.finished
            published = source.published
            await pilot.pause(0.2)
            assert source.published == published
        await pilot.press("end")
        await wait_seek(app, pilot)
        assert source.finished and app.screen_name() == OPENS[name]
        if OPENS[name] == "bench":  # rewound and replayed: the screen's results are the whole run's
            from lanemon.workloads.bench.decode import decode_results
            from lanemon.workloads.bench.needles import needle_results
            from lanemon.workloads.bench.prefill import prefill_results

            _, events, _ = read_events(path)
            kind = app.bench.kind
            reference = {"decode": decode_results, "prefill": prefill_results, "needles": needle_results}[kind](events)
            assert app.bench_results.results(in_progress=False).lanes == reference.lanes
        await pilot.press("q")
