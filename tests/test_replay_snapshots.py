"""The replay of every file in sample_sessions/ at 100x30 and 160x45 (issue 25): each opens the screen its run
showed -- the bench screen, the gauntlet, the race, the result screen of agree / kl / qeval, the dashboard --
played to the end.  Each snapshot was looked at (rendered to PNG and read) before it was accepted: no number or
key label cut, no label without its value."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanemon.ui.app import make_app

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
NAMES = sorted(p.stem for p in SAMPLES.glob("*.jsonl"))
# decode.jsonl's replay was left out once: its 8 category bars came in an order that followed the redraw
# timing (folds/bench.BenchResults merged them as recomputed); they keep the plan's order now
SIZES = [(100, 30), (160, 45)]


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


async def played_out(pilot) -> None:
    """Play the replay to its end at full speed, let the result screen read, redraw twice."""
    app = pilot.app
    for _ in range(200):
        await pilot.pause(0.05)
        if app.source.finished:
            break
    # a result screen's reading thread starts when the screen mounts (long before the replay's end): wait for
    # it, then for its sections to be mounted (show() runs on the loop and ends _analysing) -- states, where
    # fixed pauses of 0.3 s and 0.2 s were (0.5 s per test: 24 here, 6 more in tests/test_small_screens.py)
    for worker in list(app.workers):
        if worker.group == "result":
            await worker.wait()
    for _ in range(500):
        if not getattr(app.screen, "_analysing", False):
            break
        await pilot.pause(0.02)
    app.redraw(force=True)
    await pilot.pause(0.2)
    app.redraw(force=True)
    await pilot.pause()
    from lanemon.ui.widgets.bench_chart import BenchChart

    if hasattr(app.screen, "_results_at"):  # the bench screen: draw the results once more, now laid out
        app.screen._results_at = None
        app.redraw(force=True)
        await pilot.pause(0.2)
    for chart in app.screen.query(BenchChart):  # the category bars scroll as cells land: show them from the top
        for w in [chart, *chart.query("*")]:
            if w.scroll_y:
                w.scroll_to(y=0, animate=False, immediate=True)
    await pilot.pause()


def test_every_sample_session_is_here():
    assert {"agree", "decode", "kl", "qeval-A", "qeval-B", "gauntlet", "races", "today"} <= set(NAMES)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("name", NAMES)
def test_snapshot_replay(snap_compare, name, size):
    from lanemon.sessions.sources import ReplaySession

    source = ReplaySession(SAMPLES / f"{name}.jsonl", speed=float("inf"))
    source.recording_path = Path(f"sample_sessions/{name}.jsonl")  # the header shows it: no absolute path
    assert snap_compare(make_app(source), terminal_size=size, run_before=played_out)


async def test_gauntlet_replay_scrolls_its_turns_at_100x30():
    """21 turns do not fit 30 rows: the latest show, ↑ scrolls back (every lane), the head says which."""
    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.widgets.gauntlet_lane import GauntletLanePanel

    app = make_app(ReplaySession(SAMPLES / "gauntlet.jsonl", speed=float("inf")))
    async with app.run_test(size=(100, 30)) as pilot:
        await played_out(pilot)
        panel = app.screen.query(GauntletLanePanel).first()
        turns = lambda: str(panel.query_one("#turns").render()).splitlines()  # noqa: E731
        last = turns()
        assert last[-1].split()[0] == "21" and int(last[0].split()[0]) > 1
        head = str(panel.query_one("#turns-head").render())
        assert "–21↑↓" in head
        for _ in range(30):  # up to 30 presses (21 turns), each a key press Textual waits out: until turn 1 shows
            await pilot.press("up")
            if turns()[0].split()[0] == "1":
                break
        await pilot.pause()
        first = turns()
        assert first[0].split()[0] == "1" and len(first) == len(last)
        assert all(" s" in row for row in first)  # the time column is whole: "1.01 + 0.34 s"
        await pilot.press("pagedown", "pagedown", "pagedown")
        await pilot.pause()
        assert turns() == last
