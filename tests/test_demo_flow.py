"""End to end through the UI: demo lanes go live, get recorded, and replay to the same panels."""

from __future__ import annotations

import time


from lanemon.config import LaneConfig, ProbeConfig
from lanemon.recording.writer import Recorder, make_header
from lanemon.recording.reader import read_events
from lanemon.sessions.sources import DEMO_PROMPTS, LiveSession, ReplaySession
from lanemon.sim.server import SimThread
from lanemon.ui.app import make_app
from lanemon.ui.widgets.lane_panel import LanePanel
from lanemon.ui.widgets.time_chart import TimeChart


async def wait_for(pilot, condition, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        await pilot.pause(0.05)


def panel_data(app):
    """Per lane: what the TTFT and decode charts plot (time, value) and mark, and the panel's figures."""
    out = {}
    charts = {c.id: c for c in app.screen.query(TimeChart) if c.id in ("chart-ttft", "chart-decode")}
    for panel in app.screen.query(LanePanel):
        out[panel.lane] = {cid: sorted(c.series.get(panel.lane, [])) for cid, c in charts.items()}
        out[panel.lane]["marks"] = sorted(charts["chart-ttft"].marks.get(panel.lane, []))
        out[panel.lane]["ttft-median"] = panel.query_one("#ttft-median").visual.plain
    return out


async def test_demo_session_records_and_replays_to_the_same_panels(tmp_path):
    sims = [SimThread("tensorfold-exl3", time_scale=0.05).start(), SimThread("sglang-native", time_scale=0.05).start()]
    try:
        lanes = [LaneConfig("A", sims[0].base_url, defaults={"temperature": 0}),
                 LaneConfig("B", sims[1].base_url, defaults={"temperature": 0})]
        recorder = Recorder(tmp_path / "demo.jsonl", make_header("demo", [lane.public() for lane in lanes]))
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.05, max_tokens=24), mode="demo",
                              recorder=recorder, prompts=DEMO_PROMPTS)
        app = make_app(session, refresh_hz=20)
        async with app.run_test(size=(120, 36)) as pilot:
            state = app.state
            # three finished requests per lane: plotted, or marked client-bound when this machine starved
            # lanemon (either way the same in replay)
            await wait_for(pilot, lambda: all(l.up for l in state.lanes.values())
                           and all(l.requests_ok >= 3 for l in state.lanes.values()), timeout=60)
            app.source_call(session.toggle_pause)  # no new probes: the in-flight ones finish (on its loop)
            # the measuring side has nothing in flight (asked on its loop: the UI's fold may not have seen a
            # probe that started just before the pause), then every event it published is folded here
            await wait_for(pilot, lambda: app.source_call(session.idle))
            app.drain()
            await wait_for(pilot, lambda: all(l.in_flight == 0 for l in state.lanes.values()))
            # and the load watcher has judged every finished request (a sample it has not reported past yet is
            # neither a point nor a mark: folds/series.pending)
            await wait_for(pilot, lambda: not any(app.series.pending(s) for n in state.lanes
                                                  for s in app.series.lane(n).samples))
            app.redraw(force=True)
            await pilot.pause()
            live = panel_data(app)
            live_state = {n: (l.up, l.model, list(l.ttft_history), list(l.tps_history)) for n, l in state.lanes.items()}
            await pilot.press("q")
        session.close()
    finally:
        for sim in sims:
            sim.stop()

    assert set(live) == {"A", "B"}
    for lane in ("A", "B"):
        assert live_state[lane][0] is True and live_state[lane][1] == "deepseek-v4.1-flash"
        # every finished request is on the TTFT chart: as a point, or as a mark (client-bound, burst, ...)
        assert len(live[lane]["chart-ttft"]) + len(live[lane]["marks"]) >= 3, live[lane]
    header, events, warnings = read_events(recorder.path)
    assert warnings == [] and [l["name"] for l in header["lanes"]] == ["A", "B"]
    assert any(e.kind == "token" for e in events)

    replay = ReplaySession(recorder.path, speed=float("inf"))
    app2 = make_app(replay, refresh_hz=20)
    async with app2.run_test(size=(120, 36)) as pilot:
        await wait_for(pilot, lambda: replay.finished)
        app2.redraw(force=True)
        await pilot.pause()
        replayed = panel_data(app2)
        replayed_state = {n: (l.up, l.model, list(l.ttft_history), list(l.tps_history))
                          for n, l in app2.state.lanes.items()}
    assert replayed == live
    assert replayed_state == live_state


async def test_replay_of_a_truncated_recording_keeps_the_rest_and_warns_once(tmp_path):
    from lanemon import events as schema
    from lanemon.events import Event

    path = tmp_path / "cut.jsonl"
    with Recorder(path, make_header("test", [{"name": "A", "url": "http://x/v1", "model": "m"}])) as rec:
        rec(Event(0, schema.PROBE, "A", None, {"ok": True, "latency_s": 0.002, "model": "m"}))
        for i in range(3):
            req = f"A-{i}"
            t = 1_000_000_000 * (i + 1)
            rec(Event(t, schema.REQUEST, "A", req, {"endpoint": "chat", "purpose": "probe"}))
            for k in range(5):
                rec(Event(t + 170_000_000 + k * 10_000_000, schema.TOKEN, "A", req, {"text": "x"}))
            rec(Event(t + 210_000_000, schema.DONE, "A", req, {"finish_reason": "stop"}))
    data = path.read_bytes()
    path.write_bytes(data[:-20])  # the last line (A-2's done) is cut in half
    replay = ReplaySession(path, speed=float("inf"))
    app = make_app(replay)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: replay.finished)
        lane = app.state.lanes["A"]
        assert lane.up is True and lane.requests_ok == 2 and lane.in_flight == 1
        assert [round(x, 3) for x in lane.ttft_history] == [0.17, 0.17]
    assert len(replay.warnings) == 1 and "truncated" in replay.warnings[0]
