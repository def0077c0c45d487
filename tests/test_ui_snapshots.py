"""Every screen at 100x30 and 160x45 with two lanes, and the dashboard with four lanes.

Each snapshot was looked at (rendered to PNG and read) before it was accepted; regenerate with
``--snapshot-update`` only after looking at the new SVGs the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lanemon.public_lane import PublicLane
from lanemon.ui.app import make_app
from lanemon.ui.sample import SAMPLE_LANES, ScriptedSource
from test_gauntlet_ui import LANES as G_LANES, fixed_events
from test_race_fixtures import LANES as R_LANES, race_events
from test_ui_bench import ScriptedBench, steady_bench

SNAP_PATH = Path("recordings/20260503-101500-demo.jsonl")  # fixed: snapshots must not depend on $HOME
SIZES = [(100, 30), (160, 45)]
FOUR = SAMPLE_LANES + [PublicLane("C", "http://10.0.0.7:8000/v1", "qwen3-32b"),
                       PublicLane("D", "http://10.0.0.8:8000/v1", None)]


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def _compare_result(tmp_path):
    from lanemon.reports.analyse import analyze
    from lanemon.reports.compare import compare
    from test_compare_fixtures import session_events, slow_copy, write_recording

    old = write_recording(tmp_path / "old.jsonl", session_events())
    new = slow_copy(old, tmp_path / "new.jsonl", lane="A", factor=1.3)
    res = compare(analyze(old), analyze(new))
    res.old.recording, res.new.recording = "old.jsonl", "new.jsonl"
    return res


def build(name: str, tmp_path):
    """(app, keys pressed once it settled) for screen ``name``."""
    if name == "dashboard":
        return make_app(ScriptedSource(mode="replay", speed=4.0, recording_path=SNAP_PATH)), []
    if name == "dashboard-4":
        return make_app(ScriptedSource(lanes=FOUR, mode="live", recording_path=SNAP_PATH)), []
    if name == "bench-decode":  # steady != span, a tie, a crossover and a cell run while lanemon was starved
        return make_app(steady_bench()), []
    if name == "bench-prefill":
        return make_app(ScriptedBench("prefill", error_on=None)), []
    if name == "race":
        source = ScriptedSource(race_events(races=2), lanes=R_LANES, mode="replay", speed=4.0,
                                recording_path=SNAP_PATH)
        return make_app(source), ["r"]
    if name == "gauntlet":
        source = ScriptedSource(fixed_events(hops=20, reps=3, partial={"A": 9}), lanes=G_LANES, mode="demo",
                                hold=True)
        return make_app(source, screen="gauntlet"), []
    if name == "compare":
        return make_app(compare=_compare_result(tmp_path)), []
    if name == "timeline":
        source = ScriptedSource(race_events(races=2, error_in_last=True), lanes=R_LANES, mode="replay",
                                speed=4.0, recording_path=SNAP_PATH)
        return make_app(source), ["t"]
    raise ValueError(name)


SCREENS = ["dashboard", "dashboard-4", "bench-decode", "bench-prefill", "race", "gauntlet", "compare", "timeline"]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", SCREENS)
def test_snapshot(snap_compare, name, size, tmp_path):
    app, keys = build(name, tmp_path)

    assert snap_compare(app, terminal_size=size,
                        run_before=lambda pilot: settle(pilot, keys, holds=name == "gauntlet"))


async def settle(pilot, keys=(), holds: bool = False) -> None:
    """Let a scripted source publish (everything at once; a gauntlet, or ``holds``, never finishes), press
    ``keys``, and redraw twice: the state a snapshot or a layout check is taken in."""
    app = pilot.app
    for _ in range(40):
        await pilot.pause(0.05)
        if app.source.finished or holds or app.screen_name() == "gauntlet" or _all_published(app.source):
            break
    await pilot.pause(0.2)
    for key in keys:
        await pilot.press(key)
        await pilot.pause(0.2)
    app.redraw(force=True)
    await pilot.pause(0.2)
    app.redraw(force=True)
    await pilot.pause()


def _all_published(source) -> bool:
    """A live or demo ``ScriptedSource`` never finishes: it has published its whole script when the bus counted
    every event (``settle`` waited out its 40 rounds, 2 s, for the four-lane dashboard)."""
    return isinstance(source, ScriptedSource) and source.bus.published >= len(source.events)
