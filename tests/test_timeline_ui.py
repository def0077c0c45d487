"""The per-request timeline: the pure fold, the layout, a pilot test and a snapshot (fixed events)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Label, Static

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.requests import DECODE, EMPTY, ERROR, WAIT, RequestTimeline, layout, span
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource
from lanemon.ui.screens.timeline import TimelineScreen
from lanemon.ui.widgets.race_column import RaceColumn
from test_race_fixtures import LANES, race_events

MS = 1_000_000
SNAP_PATH = Path("recordings/20260503-101500-race.jsonl")


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def fold(events) -> RequestTimeline:
    tl = RequestTimeline()
    for ev in events:
        tl.apply(ev)
    return tl


def test_fold_groups_by_lane_and_scopes_by_race():
    tl = fold(race_events(races=2, error_in_last=True))
    assert tl.cells == ["race 1", "race 2"]
    bars = tl.select()
    assert [b.lane for b in bars] == ["A", "A", "B", "B"]
    assert [b.req for b in tl.select("race 2")] == ["A-r2", "B-r2"]
    b_err = next(b for b in bars if b.req == "B-r2")
    assert b_err.error == "http" and b_err.finished
    a1 = next(b for b in bars if b.req == "A-r1")
    assert a1.first_ns - a1.sent_ns == 175 * MS  # TTFT of the fixture


def test_layout_phases():
    tl = RequestTimeline()
    for ev in [Event(0, schema.REQUEST, "A", "r1", {}), Event(20 * MS, schema.TOKEN, "A", "r1", {"text": "x"}),
               Event(100 * MS, schema.DONE, "A", "r1", {}),
               Event(50 * MS, schema.REQUEST, "A", "r2", {}), Event(80 * MS, schema.ERROR, "A", "r2", {"cls": "cut"})]:
        tl.apply(ev)
    t0, t1 = span(tl.select())
    assert (t0, t1) == (0, 100 * MS)
    r1, r2 = tl.select()
    row1 = layout(r1, t0, t1, 10)
    assert row1 == [WAIT, WAIT] + [DECODE] * 8
    row2 = layout(r2, t0, t1, 10)
    assert row2[:5] == [EMPTY] * 5 and row2[5:9] == [WAIT, WAIT, WAIT, ERROR] and row2[9:] == [EMPTY]
    # a running request extends to "now"
    tl.apply(Event(100 * MS, schema.REQUEST, "A", "r3", {}))
    r3 = tl.select()[-1]
    assert not r3.finished and layout(r3, 0, 200 * MS, 10, now_ns=200 * MS)[5:] == [WAIT] * 5


async def _open_timeline(pilot) -> None:
    app = pilot.app
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.press("t")
    await pilot.pause()
    app.screen.redraw(force=True)
    await pilot.pause()


async def test_t_opens_the_timeline_and_c_scopes_it():
    source = ScriptedSource(race_events(races=2, error_in_last=True), lanes=LANES, mode="replay", speed=4.0,
                            recording_path=SNAP_PATH)
    app = make_app(source)
    async with app.run_test(size=(100, 24)) as pilot:
        await _open_timeline(pilot)
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        head = screen.query_one("#tl-head", Label).visual.plain
        assert "whole session" in head and "4 requests" in head and "1 error" in head
        bars = str(screen.query_one("#tl-bars", Static).render())
        assert "lane A" in bars and "lane B" in bars and "✖" in bars and "█" in bars
        await pilot.press("c")
        assert screen.cell == "race 1" and "2 requests" in screen.query_one("#tl-head", Label).visual.plain
        await pilot.press("c")
        assert screen.cell == "race 2"
        await pilot.press("a")
        assert screen.cell is None
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TimelineScreen)


async def test_race_column_shows_reasoning_dimmed_above_the_answer():
    evs = [Event(0, schema.MARK, None, None, {"label": "race 1", "bench": "race", "phase": "start", "race": 1,
                                              "prompt": "p", "lanes": ["A"]}),
           Event(1 * MS, schema.REQUEST, "A", "A-1", {"bench": "race", "race": 1, "endpoint": "chat"}),
           Event(10 * MS, schema.TOKEN, "A", "A-1", {"text": "Let me think.", "reasoning": True}),
           Event(20 * MS, schema.TOKEN, "A", "A-1", {"text": " Done.", "reasoning": True, "content": "The"}),
           Event(30 * MS, schema.TOKEN, "A", "A-1", {"text": " answer."}),
           Event(40 * MS, schema.USAGE, "A", "A-1", {"completion_tokens": 6, "reasoning_tokens": 4}),
           Event(41 * MS, schema.DONE, "A", "A-1", {}),
           Event(42 * MS, schema.MARK, None, None, {"label": "race 1", "bench": "race", "phase": "end", "race": 1})]
    source = ScriptedSource(evs, lanes=LANES[:1], mode="replay", speed=4.0, recording_path=SNAP_PATH)
    app = make_app(source)
    async with app.run_test(size=(100, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.press("r")
        await pilot.pause()
        app.redraw(force=True)
        await pilot.pause()
        col = next(iter(app.screen.query(RaceColumn)))
        text = col.query_one("#text", Static).render()
        plain = str(text)
        assert plain.index("Let me think. Done.") < plain.index("The answer.")
        stats = col.query_one("#stats", Label).visual.plain
        assert "TTFO" in stats  # the first content arrived in the mixed chunk at 20 ms
        assert "+ 4 think" in col.query_one("#stats2", Label).visual.plain


def test_snapshot_timeline(snap_compare):
    source = ScriptedSource(race_events(races=2, error_in_last=True), lanes=LANES, mode="replay", speed=4.0,
                            recording_path=SNAP_PATH)
    assert snap_compare(make_app(source), terminal_size=(100, 24), run_before=_open_timeline)
