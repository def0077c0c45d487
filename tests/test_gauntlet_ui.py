"""Gauntlet screen: pilot tests on fixed events and on a real run, and one layout snapshot."""

from __future__ import annotations

import asyncio

import pytest
from textual.widgets import Label, Static

from lanemon.cli.common import demo_lanes
from lanemon import events as schema
from lanemon.events import Event
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource
from lanemon.ui.screens.gauntlet import GauntletScreen
from lanemon.ui.widgets.gauntlet_lane import GauntletLanePanel
from lanemon.folds.gauntlet import GauntletState
from lanemon.sessions.gauntlet import GauntletSource
from lanemon.workloads.gauntlet import BENCH, GauntletConfig, gauntlet_results

LANES = [{"name": "A", "url": "http://127.0.0.1:8001/v1", "model": "deepseek-v4.1-flash"},
         {"name": "B", "url": "http://127.0.0.1:8888/v1", "model": "deepseek-v4.1-flash"}]
MS = 1_000_000


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def fixed_events(hops: int = 6, reps: int = 2, partial: dict[str, int] | None = None) -> list[Event]:
    """A deterministic gauntlet: lane A prefills 2.6K tok/s, B 3.6K with a 512-token cached prefix.

    ``partial`` cuts a lane's last rep after that many turns (and the run has no end mark).
    """
    partial = partial or {}
    finish = not partial
    ev: list[Event] = []
    config = {"hops": hops, "reps": reps, "system_prompt_tokens": 1950, "max_turns": hops + 5, "lanes": ["A", "B"],
              "stable_prompt": False, "seed": 1, "max_tokens": 512, "time_scale": None, "tool": "read_file"}
    ev.append(Event(0, schema.MARK, None, None, {"label": BENCH, "bench": BENCH, "phase": "start", "config": config,
                                                 "lanes": LANES}))
    timelines: dict[str, list[Event]] = {}
    for lane, rate, cached, tps in (("A", 2600, 0, 140), ("B", 3650, 512, 126)):
        out = timelines[lane] = []
        t = 1 * MS
        n = 0
        for rep in range(reps):
            last_rep = rep == reps - 1
            out.append(Event(t, schema.MARK, lane, None, {"label": BENCH, "bench": BENCH, "phase": "rep_start",
                                                          "rep": rep, "first": "amber-q3k9vz.txt", "hops": hops}))
            rep_t0 = t
            cut = last_rep and lane in partial
            turns = partial[lane] if cut else hops + 1
            for turn in range(turns):
                n += 1
                req = f"{lane}-{n}"
                prompt = 2023 + 85 * turn
                c = cached if (turn or rep) else 0
                ttft = int(((prompt - c) / (rate if rate else 1) + c / 12542) * 1000) * MS
                out.append(Event(t, schema.REQUEST, lane, req, {"endpoint": "chat", "purpose": BENCH, "bench": BENCH,
                                                                "rep": rep, "turn": turn, "hops": hops}))
                out.append(Event(t + ttft - 5 * MS, schema.FIRST_BYTE, lane, req, {"status": 200}))
                out.append(Event(t + ttft, schema.TOKEN, lane, req, {"text": "", "tool_calls": []}))
                tool = turn < hops
                ntok = 50 if tool else 24
                dec = int((ntok - 1) / tps * 1000) * MS
                out.append(Event(t + ttft + dec, schema.USAGE, lane, req,
                                 {"prompt_tokens": prompt, "completion_tokens": ntok, "cached_tokens": c}))
                out.append(Event(t + ttft + dec, schema.DONE, lane, req, {"finish_reason": "tool_calls" if tool else "stop"}))
                t += ttft + dec + 2 * MS
                if tool:
                    out.append(Event(t, schema.MARK, lane, None, {
                        "label": BENCH, "bench": BENCH, "phase": "tool", "rep": rep, "turn": turn,
                        "name": "read_file", "path": f"file-{turn + 1:02d}.txt", "ok": True, "malformed": False,
                        "reason": "", "calls": turn + 1}))
            if not cut:
                out.append(Event(t, schema.MARK, lane, None, {
                    "label": BENCH, "bench": BENCH, "phase": "rep_end", "rep": rep, "correct": True,
                    "tool_calls": hops, "malformed_calls": 0, "wall_s": (t - rep_t0) / 1e9, "turns": hops + 1,
                    "stopped": "answer", "answer": "The secret answer is OPAL-4821-KZQ3."}))
            t += 3 * MS
    merged = sorted(timelines["A"] + timelines["B"], key=lambda e: e.t)
    ev.extend(merged)
    if finish:
        ev.append(Event(merged[-1].t + MS, schema.MARK, None, None, {"label": BENCH, "bench": BENCH, "phase": "end"}))
    return ev


def plain(widget) -> str:
    return widget.visual.plain


def test_state_fold_matches_the_results_function():
    events = fixed_events()
    state = GauntletState()
    for ev in events:
        state.apply(ev)
    result = gauntlet_results(events)
    for name in ("A", "B"):
        lv = state.lane(name)
        assert lv.phase == "done" and lv.hops_done == 6 and len(lv.results) == 2
        assert [r.wall_s for r in lv.results] == pytest.approx(result.lanes[name].wall_s, abs=1e-4)
        assert [t.ttft_s for t in lv.turns] == pytest.approx([t.ttft_s for t in result.lanes[name].turns[1]],
                                                             abs=1e-4)
    assert state.ended
    assert result.summary == "B finished the 6-hop chain in 6.2 s vs A 8.4 s (median of 2); both 2/2 correct " \
                                "with 6 tool calls"


async def test_screen_shows_hops_files_bars_and_summary():
    source = ScriptedSource(fixed_events(), lanes=LANES, mode="demo", hold=True)
    app = make_app(source, screen="gauntlet")
    async with app.run_test(size=(150, 40)) as pilot:
        await pilot.pause(0.1)
        app.redraw(force=True)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GauntletScreen)
        panels = list(screen.query(GauntletLanePanel))
        assert [p.lane for p in panels] == ["A", "B"]
        for panel in panels:
            hops = plain(panel.query_one("#hops", Static))
            assert hops.startswith("■■■■■■") and "6/6 hops" in hops
            assert plain(panel.query_one("#file", Label)) == "file file-06.txt"
            assert "✓ correct" in plain(panel.query_one("#now", Label))
            rows = plain(panel.query_one("#turns", Static)).splitlines()
            assert len(rows) == 7 and rows[0].split()[0] == "1"
            assert plain(panel.query_one("#reps", Static)).startswith("2/2 correct")
            assert panel.has_class("-done")
        a_rows = plain(panels[0].query_one("#turns", Static)).splitlines()
        b_rows = plain(panels[1].query_one("#turns", Static)).splitlines()
        # same scale on both lanes: A's longer prefill draws a longer bar
        assert a_rows[3].count("█") > b_rows[3].count("█")
        assert " 512 " in b_rows[0] and " 512 " not in a_rows[0]  # B's cached prefix (A has no cache)
        summary = plain(screen.query_one("#g-summary", Label))
        assert summary.startswith("B finished the 6-hop chain in 6.2 s vs A 8.4 s")
        assert "6 hops × 2 reps" in plain(screen.query_one("#g-info", Label))
        await pilot.press("q")
    assert source.stopped


async def test_redraws_coalesce_token_bursts():
    events = fixed_events(partial={"A": 3, "B": 3})
    source = ScriptedSource(events, lanes=LANES, mode="demo", hold=True)
    app = make_app(source, screen="gauntlet", refresh_hz=2)
    async with app.run_test(size=(150, 40)) as pilot:
        await pilot.pause(0.1)
        before = app.redraws
        lane_req = "A-999"
        source.bus.publish(Event(events[-1].t + MS, schema.REQUEST, "A", lane_req,
                                 {"bench": BENCH, "rep": 1, "turn": 3}))
        for i in range(500):
            source.bus.publish(Event(events[-1].t + 2 * MS + i, schema.TOKEN, "A", lane_req, {"text": "x"}))
        await pilot.pause(0.7)
        assert app.redraws - before <= 3
        assert "decode" in plain(app.screen.query_one("#glane-A #now", Label))
        await pilot.press("q")


async def wait_for(pilot, condition, what: str, timeout: float = 90.0) -> None:
    """Yield to the app until ``condition()`` holds (a deadline, not a number of pauses: under CPU load a
    pause takes as long as it takes)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not condition():
        assert loop.time() < end, f"waited {timeout:.0f} s for {what}"
        await pilot.pause(0.02)


async def test_q_stops_a_real_gauntlet_cleanly(tmp_path):
    """q mid-run cancels the gauntlet: interrupted (not finished), the recording has its start mark and a
    ``cancelled`` error.  Ten reps so the run cannot end before q however slow the machine (it was three: under
    two CPU hogs the run ended first, or sat between reps with no ▶ hop when the screen was read)."""
    from lanemon.recording.writer import Recorder, make_header
    from lanemon.recording.reader import Recording

    path = tmp_path / "g.jsonl"
    with demo_lanes(0.05) as lanes:
        recorder = Recorder(path, make_header("gauntlet", [lane.public() for lane in lanes]))
        source = GauntletSource(lanes, GauntletConfig(reps=10, seed=9, time_scale=0.05), mode="demo",
                                recorder=recorder)
        app = make_app(source, screen="gauntlet")
        hops = lambda: plain(app.screen.query_one("#glane-A #hops", Static))  # noqa: E731
        async with app.run_test(size=(150, 40)) as pilot:
            await wait_for(pilot, lambda: app.gauntlet.lanes.get("A") is not None
                           and app.gauntlet.lanes["A"].hops_done >= 3 and "▶" in hops(),
                           "lane A three hops into a rep, its card showing the hop under way")
            assert "/20 hops" in hops()
            assert not source.finished
            await pilot.press("q")
        cancelled = lambda: any(ev.kind == schema.ERROR and ev.data.get("cls") == "cancelled"  # noqa: E731
                                for ev in list(source.events))
        end = asyncio.get_running_loop().time() + 30  # the app has gone: wait on the loop for the worker's end
        while not (source.interrupted and cancelled()) and asyncio.get_running_loop().time() < end:
            await asyncio.sleep(0.02)
        recorder.close()
    assert source.interrupted and not source.finished
    events = list(Recording(path).events())
    assert any(ev.kind == schema.MARK and ev.data.get("phase") == "start" for ev in events)
    assert any(ev.data.get("cls") == "cancelled" for ev in events if ev.kind == schema.ERROR)


def test_snapshot_gauntlet_screen(snap_compare):
    async def settle(pilot):
        await pilot.pause(0.2)
        pilot.app.redraw(force=True)
        await pilot.pause()

    source = ScriptedSource(fixed_events(hops=20, reps=3, partial={"A": 9}), lanes=LANES, mode="demo",
                            hold=True)
    assert snap_compare(make_app(source, screen="gauntlet"), terminal_size=(150, 42), run_before=settle)
