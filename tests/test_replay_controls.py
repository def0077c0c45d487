"""Replay seeking: the index, positions after each kind of seek, state equal to a fresh
fold after a backward seek, the timeline bar, and the keys (hidden on live sources)."""

from __future__ import annotations

import copy
import importlib.util
import math
import time
from collections import deque
from pathlib import Path

import msgspec
import pytest

from lanemon.folds.race import RaceState
from lanemon.recording import index as index_mod
from lanemon import events as schema
from lanemon.recording.writer import Recorder, make_header
from lanemon.recording.reader import Recording
from lanemon.sessions.sources import ReplaySession
from lanemon.folds.dashboard import SessionState
from lanemon.ui.app import make_app
from lanemon.ui.sample import SAMPLE_LANES, ScriptedSource, sample_events
from lanemon.ui.widgets.timeline_bar import TimelineBar, clock

S = 1_000_000_000
ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("replay_load", ROOT / "bench" / "replay_load.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> tuple[Path, int]:
    """A 50k-event recording shaped like a long demo/bench session (two lanes, cells, races)."""
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    n = _generator()(path, 50_000, cell_every_s=60, race_every_s=170)
    return path, n


@pytest.fixture(autouse=True)
def _small_checkpoints(monkeypatch):
    monkeypatch.setattr(index_mod, "CHECKPOINT_EVERY", 2048)  # many checkpoints in a small file


def canon(obj):
    """A comparable plain form of a fold (dataclasses, deques and plain objects alike)."""
    if isinstance(obj, dict):
        return {k: canon(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, deque)):
        return [canon(v) for v in obj]
    if hasattr(obj, "__dict__"):
        return {"__type": type(obj).__name__, **{k: canon(v) for k, v in vars(obj).items()}}
    return obj


class Folds:
    """What the app keeps: a SessionState and a RaceState, with the app's snapshot/restore."""

    def __init__(self, session: ReplaySession) -> None:
        self.state = SessionState([(d.name, d.url, d.model) for d in session.lanes])
        self.races = RaceState()
        session.bus.subscribe(self.state.apply)
        session.bus.subscribe(self.races.apply)
        session.attach_state(self.snapshot, self.restore)

    def snapshot(self):
        return copy.deepcopy([self.state.__dict__, self.races.__dict__])

    def restore(self, snap) -> None:
        for obj, saved in zip((self.state, self.races), copy.deepcopy(snap)):
            obj.__dict__.clear()
            obj.__dict__.update(saved)

    def dump(self):
        return canon([self.state, self.races])


def fresh_fold(path: Path, lanes, target: int):
    """Fold every event before the first one later than ``target`` (what playing to it gives)."""
    state = SessionState([(d.name, d.url, d.model) for d in lanes])
    races = RaceState()
    for ev in Recording(path).events():
        if ev.t > target:
            break
        state.apply(ev)
        races.apply(ev)
    return canon([state, races])


def test_index_holds_offsets_markers_and_times(big):
    path, n = big
    events = list(Recording(path).events())
    session = ReplaySession(path)
    idx = session.index
    assert idx.events == n == len(events)
    assert idx.t_last == max(e.t for e in events) == session.duration_ns
    marks = [e for e in events if e.kind == schema.MARK]
    assert [(m.t, m.label) for m in idx.markers] == [(e.t, e.data["label"]) for e in marks]
    assert len(idx.checkpoints) == math.ceil(n / 2048)
    with path.open("rb") as fh:  # every checkpoint is the start of a line, tmax_before is right
        data = fh.read()
    for cp in idx.checkpoints:
        assert data[cp.offset - 1 : cp.offset] == b"\n"
        before = data[: cp.offset].count(b"\n") - 1  # events before it
        assert cp.tmax_before == max((e.t for e in events[:before]), default=-1)


def test_index_line_by_line_path_agrees_and_warns_like_the_reader(tmp_path):
    """A file with a broken middle line and a cut last line: same events and warnings as Recording."""
    path = tmp_path / "odd.jsonl"
    with Recorder(path, make_header("test", msgspec.to_builtins(SAMPLE_LANES))) as rec:
        for ev in sample_events():
            rec(ev)
    lines = path.read_bytes().split(b"\n")
    lines.insert(20, b'{"t": 5, "kind": "probe", "lane"')  # a broken line in the middle
    data = b"\n".join(lines)
    path.write_bytes(data[:-15])  # and the last line cut short
    reader = Recording(path)
    events = list(reader.events())
    session = ReplaySession(path)
    assert session.index.events == len(events)
    assert session.warnings == reader.warnings and len(reader.warnings) == 2


async def test_seek_positions_and_backward_seek_equals_a_fresh_fold(big):
    path, n = big
    session = ReplaySession(path, speed=math.inf)
    folds = Folds(session)
    await session.run()
    assert session.finished and folds.state.events == n
    total = session.duration_ns
    assert session.playhead_ns == total
    assert len(session.snapshots) == len(session.index.checkpoints)

    await session.seek(total // 2)  # backwards, from the end
    assert session.playhead_ns == total // 2 and not session.finished
    assert folds.dump() == fresh_fold(path, session.lanes, total // 2)

    await session.seek_relative(-10)
    assert session.playhead_ns == total // 2 - 10 * S
    assert folds.dump() == fresh_fold(path, session.lanes, total // 2 - 10 * S)

    await session.seek_relative(+10)  # forward: folds on from where it is
    assert session.playhead_ns == total // 2
    assert folds.dump() == fresh_fold(path, session.lanes, total // 2)

    await session.seek(0)
    assert session.playhead_ns == 0
    assert folds.state.events == sum(1 for e in Recording(path).events() if e.t <= 0)

    markers = session.markers
    assert len(markers) >= 3
    assert await session.seek_marker(+1)
    assert session.playhead_ns == markers[0].t
    assert await session.seek_marker(+1)
    assert session.playhead_ns == markers[1].t
    assert folds.dump() == fresh_fold(path, session.lanes, markers[1].t)
    assert await session.seek_marker(-1)
    assert session.playhead_ns == markers[0].t
    assert not await session.seek_marker(-1)  # nothing before the first marker
    assert session.playhead_ns == markers[0].t

    await session.seek(total + 50 * S)  # clamped to the end
    assert session.playhead_ns == total and session.finished
    assert not await session.seek_marker(+1) or session.playhead_ns <= total
    assert folds.state.events == n
    await session.seek(-5 * S)  # clamped to the start
    assert session.playhead_ns == 0


async def test_playing_on_after_a_backward_seek_reaches_the_same_end(big):
    path, n = big
    session = ReplaySession(path, speed=math.inf)
    folds = Folds(session)
    await session.run()
    end = folds.dump()
    await session.seek(session.duration_ns // 3)
    assert not session.finished
    await session.run()  # the app restarts the source worker like this
    assert session.finished and folds.dump() == end


async def test_seek_backwards_without_attach_state_is_refused(big):
    path, _ = big
    session = ReplaySession(path, speed=math.inf)
    await session.seek(session.duration_ns // 4)  # forward is always possible
    with pytest.raises(RuntimeError, match="attach_state"):
        await session.seek(0)


def test_clock_format():
    assert clock(0) == "0:00.0"
    assert clock(83_400_000_000) == "1:23.4"
    assert clock(3 * 3600 * S + 62 * S) == "3:01:02"


# -- the app -----------------------------------------------------------------


@pytest.fixture
def small(tmp_path) -> Path:
    """The scripted sample session plus three markers, as a real recording (25 s)."""
    path = tmp_path / "sample.jsonl"
    events = sample_events()
    from lanemon.events import Event

    for t, label in ((5 * S, "cell 1"), (12 * S, "race 1"), (20 * S, "cell 2")):
        events.append(Event(t, schema.MARK, None, None, {"label": label}))
    events.sort(key=lambda e: e.t)
    with Recorder(path, make_header("demo", msgspec.to_builtins(SAMPLE_LANES))) as rec:
        for ev in events:
            rec(ev)
    return path


async def wait_seek(app, pilot) -> None:
    """Until no seek is running (the source worker may be paused for ever: do not wait for it)."""
    for _ in range(500):
        await pilot.pause(0.01)
        if not any(w.group == "seek" and not w.is_finished for w in app.workers) and not app.source.seeking:
            break
    await pilot.pause()


async def test_keys_seek_the_replay_and_the_panels_follow(small):
    source = ReplaySession(small, speed=math.inf)
    app = make_app(source)
    async with app.run_test(size=(120, 36)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert source.finished
        end_events = app.state.events
        await pilot.press("p")  # pause, so that the replay does not run on by itself after seeks
        await pilot.press("home")
        await wait_seek(app, pilot)
        assert source.playhead_ns == 0 and app.state.events == 0 and not source.finished
        await pilot.press("right_square_bracket")
        await wait_seek(app, pilot)
        assert source.playhead_ns == 5 * S
        await pilot.press("right")
        await wait_seek(app, pilot)
        assert source.playhead_ns == 15 * S
        assert canon([app.state, app.race_state]) == fresh_fold(small, source.lanes, 15 * S)
        await pilot.press("left_square_bracket")
        await wait_seek(app, pilot)
        assert source.playhead_ns == 12 * S
        await pilot.press("left")
        await wait_seek(app, pilot)
        assert source.playhead_ns == 2 * S
        assert canon([app.state, app.race_state]) == fresh_fold(small, source.lanes, 2 * S)
        timeline = getattr(app, "timeline", None)  # the per-request timeline is rewound too
        if timeline is not None:
            fresh = type(timeline)()
            for ev in Recording(small).events():
                if ev.t > 2 * S:
                    break
                fresh.apply(ev)
            assert canon(list(timeline.bars.values())) == canon(list(fresh.bars.values()))
        bar = app.screen.query_one(TimelineBar)
        bar.sample()
        await pilot.pause()
        text = bar.render().plain
        assert text.startswith("❚❚") and "0:02.0 / 0:25.2" in text and "speed" not in text
        await pilot.press("end")
        await wait_seek(app, pilot)
        assert source.finished and app.state.events == end_events
        # the lane panels were redrawn from the rewound state
        from lanemon.ui.widgets.lane_panel import LanePanel

        panel = app.screen.query_one("#lane-A", LanePanel)
        assert "12 ok" in panel.query_one("#requests").visual.plain


async def test_seek_keys_are_hidden_on_live_sources():
    app = make_app(ScriptedSource(mode="live", hold=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        for action in ("seek_by", "seek_marker", "seek_start", "seek_end"):
            assert app.check_action(action, ()) is False
        assert not app.screen.query(TimelineBar)
        # the footer composes its keys after the screen: wait (bounded) for them, not a fixed number of pauses
        deadline = time.monotonic() + 10.0
        while not app.screen.query("FooterKey") and time.monotonic() < deadline:
            await pilot.pause(0.05)
        footer_keys = {k.key for k in app.screen.query("FooterKey")}
        assert "q" in footer_keys
        assert not footer_keys & {"left", "right", "left_square_bracket", "right_square_bracket"}
        await pilot.press("left", "home")  # and inert
        await pilot.pause()
        await pilot.press("q")


def test_snapshot_timeline_bar(snap_compare, small):
    """The bar alone (so lane-panel changes do not move it): paused at a marker, speed ×4."""
    from textual.app import App

    from lanemon.ui.themes import load_themes

    source = ReplaySession(small, speed=4.0)
    source.paused = True

    class BarApp(App):
        CSS = "Screen { background: $background; }"

        def __init__(self) -> None:
            super().__init__()
            for theme in load_themes().values():
                self.register_theme(theme)
            self.theme = "lanemon-dark"

        def compose(self):
            yield TimelineBar(source)

    async def run_before(pilot) -> None:
        folds = Folds(source)
        source.bus.subscribe(lambda ev: None)
        await source.seek(12 * S)
        assert folds.state.events
        pilot.app.query_one(TimelineBar).sample()
        await pilot.pause()

    assert snap_compare(BarApp(), terminal_size=(100, 2), run_before=run_before)


async def test_one_press_per_distinct_marker_labelled_and_toasts_clear_the_bar(tmp_path):
    """Markers less than half a second apart are one stop; the bar names what the marker marks;
    a notification never covers the timeline bar."""
    from lanemon import events as schema
    from lanemon.events import Event
    from lanemon.recording.writer import Recorder, make_header
    from lanemon.sessions.sources import ReplaySession

    S = 1_000_000_000
    path = tmp_path / "cells.jsonl"
    with Recorder(path, make_header("bench-decode", [{"name": "A", "url": "http://x/v1", "model": "m"},
                                                     {"name": "B", "url": "http://y/v1", "model": "m"}],
                                    {"bench": "decode"})) as rec:
        rec(Event(0, schema.PROBE, "A", None, {"ok": True, "latency_s": 0.002}))
        t = S
        for lane in ("A", "B"):
            for level in (1, 4):
                cell = {"label": "cell", "bench": "decode", "cell": f"{lane}/C{level}/r0", "part": "level",
                        "level": level, "rep": 0}
                rec(Event(t, schema.MARK, lane, None, {**cell, "phase": "start"}))
                t += 3 * S
                rec(Event(t, schema.MARK, lane, None, {**cell, "phase": "end"}))
                t += 200_000  # the next cell starts 0.2 ms later: the same stop
        rec(Event(t + S, schema.PROBE, "A", None, {"ok": True, "latency_s": 0.002}))
    source = ReplaySession(path, speed=4.0)
    app = make_app(source)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await pilot.pause(0.2)
        if not source.paused:
            await pilot.press("p")  # hold playback: only the seeks move the playhead
        await pilot.press("home")
        for _ in range(50):
            await pilot.pause(0.02)
            if not any(w.group == "seek" and w.is_running for w in app.workers):
                break
        assert source.playhead_ns < S
        stops = []
        for _ in range(5):
            await pilot.press("right_square_bracket")
            for _ in range(50):  # the seek runs in a worker of its own
                await pilot.pause(0.02)
                if not any(w.group == "seek" and w.is_running for w in app.workers):
                    break
            stops.append(source.playhead_ns)
        assert stops == [S, 4 * S, 7 * S + 200_000, 10 * S + 400_000, 13 * S + 600_000]
        bar = app.screen.query_one("#timeline")
        assert "C1 · B" in bar.render().plain or "C4 · B" in bar.render().plain
        app.notify("a long notification that would once have covered the bar", timeout=5)
        await pilot.pause(0.5)
        from textual.widgets._toast import Toast

        toasts = [w for w in app.screen.walk_children(with_self=False) if isinstance(w, Toast)]
        assert toasts and all(t.region.bottom <= bar.region.y for t in toasts)
        await pilot.press("q")
