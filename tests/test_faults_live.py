"""Fault injection end to end: the dashboard, a bench, the recording and the `lanemon demo` path.

One faulty simulated lane per fault kind next to a clean lane A: every fault
shows on its own lane's panel while A keeps running; a decode bench marks the
faulty cells errored with no rate; the recordings read back whole.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

import orjson
import pytest
from textual.widgets import Label, Static

from lanemon.config import LaneConfig, ProbeConfig
from lanemon.recording.writer import Recorder, make_header
from lanemon.recording.reader import read_events
from lanemon.results.common import to_json_obj
from lanemon.sessions.sources import DEMO_PROMPTS, LiveSession
from lanemon.sim.server import SimThread
from lanemon.folds.dashboard import SessionState
from lanemon.ui.app import make_app
from lanemon.ui.widgets.lane_panel import LanePanel

STALL_TIMEOUT = 1.5
"""Long enough that a busy machine delaying lanemon's reads is not taken for a stalled lane; the stall
fault holds its stream 3 s."""

# lane name -> (fault spec, what the lane's panel must show)
LANES = {
    "refuse": ("refuse", "connect the server closed the connection without a response"),
    "drop": ("drop:3", "truncated connection closed by the server mid-response"),
    # the read timeout fires first; on a machine too busy to wake lanemon before the stalled bytes arrive, the
    # stall watchdog names it instead: an error either way, never a figure
    "stall": ("stall:3", ("timeout no data from the server within the read/stall timeout",
                          "stalled no data from the server for")),
    "h503": ("http:503", "HTTP 503: The server is overloaded or not ready yet."),
    # the Retry-After hint ends the message: a narrow card cuts before it (the errors screen, e, has it)
    "h429": ("http:429", ("(Retry-After: 1)", "HTTP 429: Rate limit reached for requests. Please retry")),
    "h502": ("http:502:html", "HTTP 502: 502 Bad Gateway"),
    "malf": ("malformed", "malformed invalid JSON in SSE data"),
    # finish_reason and usage but no [DONE]: complete (issue 16); the panel shows the note that the stream was
    # cut when the close reached lanemon as an error, nothing when it read as a clean end
    "nodone": ("nodone", ("cut connection closed by the server mid-response", "no errors")),
    # 17 MiB in one line: refused at the 16 MiB cap, or (when this machine is too busy to read 16 MiB within the
    # stall window) stalled first: an error either way, never a figure
    "huge": ("huge:17", ("malformed an SSE line longer than 16 MiB", "stalled no data from the server")),
    "utf8": ("badutf8", None),  # absorbed: U+FFFD in the text, no error
    "nousage": ("nousage", None),  # absorbed: tokens estimated
    "slowhdr": ("slowheaders:0.25", None),  # absorbed: a late first byte
    "models": ("models-change:2", "model changed: deepseek-v4.1-flash -> deepseek-v4.1-flash-v2"),
}
ERRORING = {"refuse", "drop", "stall", "h503", "h429", "h502", "malf", "huge"}


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))


@contextlib.contextmanager
def faulty_lanes(names, *, time_scale=0.05):
    """Lane A (clean, tensorfold-exl3) plus one sglang-native lane per fault in ``names``."""
    sims = [SimThread("tensorfold-exl3", time_scale=time_scale)]
    sims += [SimThread("sglang-native", time_scale=time_scale, faults=[LANES[n][0]]) for n in names]
    try:
        for sim in sims:
            sim.start()
        lanes = [LaneConfig(name, sim.base_url, defaults={"temperature": 0}, timeout=STALL_TIMEOUT)
                 for name, sim in zip(["A", *names], sims)]
        yield lanes
    finally:
        for sim in sims:
            sim.stop(timeout=1.0)


def plain(widget) -> str:
    return widget.visual.plain


def says(text: str, words: str) -> bool:
    """The card says ``words``: whole, or cut by the card with '…' after at least 20 of its characters (a
    narrow card ends a long error in '…', the whole is on the errors screen: 'e')."""
    text = " ".join(text.split())
    if words in text:
        return True
    return any(words[:k] + "…" in text for k in range(len(words) - 1, min(len(words), 20) - 1, -1))


async def wait_for(pilot, condition, timeout=30.0, what="condition", state=None):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            lanes = {n: (l.model, l.requests_ok, l.requests_err) for n, l in state.lanes.items()} if state else ""
            raise AssertionError(f"{what} not reached in time {lanes}")
        await pilot.pause(0.05)


def replayed_state(path) -> tuple[SessionState, list]:
    header, events, warnings = read_events(path)
    assert warnings == [], warnings
    state = SessionState()
    for ev in events:
        state.apply(ev)
    return state, events


async def test_every_fault_shows_on_its_own_panel_and_lane_a_keeps_running(tmp_path):
    names = list(LANES)
    with faulty_lanes(names) as lanes:
        path = tmp_path / "faults.jsonl"
        recorder = Recorder(path, make_header("demo", [lane.public() for lane in lanes]))
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.2, max_tokens=12), mode="demo",
                              recorder=recorder, prompts=DEMO_PROMPTS)
        app = make_app(session, refresh_hz=2)
        async with app.run_test(size=(30 * len(lanes), 40)) as pilot:
            st = app.state

            def seen_everything() -> bool:
                # a stream cut mid-response is truncated (counted apart from errors), never a completion
                return (all(st.lanes[n].requests_err + st.lanes[n].requests_truncated >= 2 for n in ERRORING)
                        and all(st.lanes[n].requests_ok >= 2 for n in ("utf8", "nousage", "slowhdr", "nodone"))
                        and st.lanes["models"].model == "deepseek-v4.1-flash-v2"
                        and st.lanes["models"].requests_ok >= 3)

            await wait_for(pilot, seen_everything, 120, "an error on every faulty lane", st)
            a_ok = st.lanes["A"].requests_ok
            await wait_for(pilot, lambda: st.lanes["A"].requests_ok >= a_ok + 2, 90, "lane A still growing", st)
            app.redraw(force=True)
            await pilot.pause()
            panels = {p.lane: p for p in app.screen.query(LanePanel)}
            shown = {n: plain(panels[n].query_one("#errors", Static)) for n in ["A", *names]}
            decode = {n: plain(panels[n].query_one("#tps-label", Label)) for n in names}
            live = {n: (lane.requests_ok, lane.requests_err) for n, lane in st.lanes.items()}
            await pilot.press("q")
        session.close()

    assert shown["A"] == "no errors" and live["A"][1] == 0 and live["A"][0] >= 4
    for name, (spec, words) in LANES.items():
        if words is not None:
            assert any(says(shown[name], w) for w in ((words,) if isinstance(words, str) else words)), (name, shown[name])
        else:
            assert shown[name] == "no errors", (name, shown[name])
    assert "est." in decode["nousage"] and "est." not in decode["utf8"]
    # nothing recorded is lost: the recording reads back whole, every finished request in it
    state, events = replayed_state(path)
    for name, (ok, err) in live.items():
        assert state.lanes[name].requests_ok >= ok and state.lanes[name].requests_err >= err, name
    # the slow-header lane's TTFT carries the delay: from the recorded requests themselves (the panel's median
    # leaves out requests that ran while this machine starved lanemon; a starved client only adds time)
    from statistics import median

    from lanemon.measure.metrics import request_metrics
    from lanemon.measure.records import assemble

    slow = [request_metrics(r).ttft_s for r in assemble(events) if r.lane == "slowhdr" and r.ok]
    assert slow and median(slow) >= 0.2, slow


def test_bench_marks_faulty_cells_errored_and_never_reports_a_rate(tmp_path):
    from lanemon.workloads.bench.run import BenchOptions, BenchRun

    names = ["refuse", "drop", "stall", "h503", "malf", "nodone", "huge", "utf8", "nousage", "slowhdr"]
    with faulty_lanes(names) as lanes:
        path = tmp_path / "bench.jsonl"
        recorder = Recorder(path, make_header("bench-decode", [lane.public() for lane in lanes]))
        opts = BenchOptions(levels=[1, 2], categories=["prose"], per_category=False, max_tokens=12, seed=1)
        run = BenchRun("decode", lanes, opts, recorder=recorder, stall_timeout=STALL_TIMEOUT)
        asyncio.run(run.run())
        recorder.close()
        result = to_json_obj(run.results())
    levels = {name: result["lanes"][name]["levels"] for name in ["A", *names]}
    for name in ["A", "utf8", "nousage", "slowhdr", "nodone"]:
        for cell in levels[name].values():
            assert cell["errors"] == 0 and cell["aggregate_tok_s"], (name, cell)
            # a per-stream rate, unless every request was read as a burst or ran while lanemon was starved
            flagged = cell.get("bursts", 0) + cell.get("client_bound", 0)
            assert cell["per_stream_tok_s_p50"] or flagged >= cell["requests"], (name, cell)
    assert all(c["tokens_estimated"] for c in levels["nousage"].values())
    for name in ERRORING & set(names):
        for cell in levels[name].values():
            assert cell["errors"] == cell["requests"] > 0, (name, cell)
            assert cell["aggregate_tok_s"] is None and cell["median"] is None and cell["reps"] == [None]
            assert cell["per_stream_tok_s_p50"] is None and cell["ttft_p50_s"] is None
            assert cell["output_tokens"] == 0 and cell["error"], (name, cell)
    assert "HTTP 503" in levels["h503"]["1"]["error"]
    # refused at the 16 MiB cap, or stalled first on a machine too busy to read 16 MiB within the stall window
    assert any(w in levels["huge"]["1"]["error"] for w in ("16 MiB", "stalled", "no data from the server"))
    # the recording reads back whole and gives the same results
    from lanemon.measure.views import attach_engine_views
    from lanemon.workloads.bench.decode import decode_results

    _, events = replayed_state(path)
    again = to_json_obj(attach_engine_views(decode_results(events), events))  # as the run's results() and every report do
    assert orjson.dumps(again["lanes"], option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        result["lanes"], option=orjson.OPT_SORT_KEYS)


def test_cli_bench_decode_demo_with_a_faulty_lane(capsys):
    from lanemon.cli.main import main

    code = main(["bench", "decode", "--demo", "--time-scale", "0.05", "--fault-b", "drop:4", "--levels", "1",
                 "--categories", "prose", "--no-categories", "--max-tokens", "12", "--json", "--no-record",
                 "--stall-timeout", "5"])
    out = capsys.readouterr().out
    assert code == 0, out
    result = orjson.loads(out)
    a, b = result["lanes"]["A"]["levels"]["1"], result["lanes"]["B"]["levels"]["1"]
    assert a["errors"] == 0 and a["aggregate_tok_s"] > 0
    assert b["errors"] == b["requests"] > 0 and b["aggregate_tok_s"] is None and "mid-response" in b["error"]


def test_lanemon_demo_fault_b_drop_keeps_both_panels_alive(tmp_path, monkeypatch):
    """`lanemon demo --fault-b drop:50` through cli.main: only the app's run loop is swapped for a pilot."""
    from lanemon.cli import launch, main as cli

    seen: dict = {}

    def pilot_run_app(source, theme, args=None):
        async def go():
            app = make_app(source, theme=theme, refresh_hz=10)
            async with app.run_test(size=(120, 36)) as pilot:
                st = app.state
                # B's streams are cut mid-response: truncated (counted apart from errors), never completions
                await wait_for(pilot, lambda: set(st.lanes) == {"A", "B"} and st.lanes["B"].requests_truncated >= 2
                               and st.lanes["A"].requests_ok >= 2, 90, "both lanes probed")
                a_ok, b_cut = st.lanes["A"].requests_ok, st.lanes["B"].requests_truncated
                await wait_for(pilot, lambda: st.lanes["A"].requests_ok > a_ok
                               and st.lanes["B"].requests_truncated > b_cut, 90, "both lanes keep going")
                app.redraw(force=True)
                await pilot.pause()
                panels = {p.lane: p for p in app.screen.query(LanePanel)}
                seen["errors"] = {n: plain(p.query_one("#errors", Static)) for n, p in panels.items()}
                seen["requests"] = {n: plain(p.query_one("#requests", Label)) for n, p in panels.items()}
                seen["live"] = {n: (lane.requests_ok, lane.requests_truncated) for n, lane in st.lanes.items()}
                await pilot.press("q")
            return app.return_code or 0

        return asyncio.run(go())

    monkeypatch.setattr(launch, "run_app", pilot_run_app)
    path = tmp_path / "demo.jsonl"
    code = cli.main(["demo", "--time-scale", "0.05", "--interval", "0.05", "--fault-b", "drop:50",
                     "--record", str(path)])
    assert code == 0
    # A is never cut (on a machine too busy to accept a connection in time A may show a timeout: an error
    # lanemon saw, not a cut stream)
    assert "truncated" in seen["errors"]["B"]
    a_timed_out = seen["errors"]["A"] != "no errors"
    assert not a_timed_out or ("timeout" in seen["errors"]["A"] and "truncated" not in seen["errors"]["A"])
    assert says(seen["errors"]["B"], "truncated connection closed by the server mid-response"), seen["errors"]["B"]
    assert ("0 err" in seen["requests"]["A"] or a_timed_out) and " ok" in seen["requests"]["B"]
    state, _ = replayed_state(path)
    for name, (ok, cut) in seen["live"].items():
        assert state.lanes[name].requests_ok >= ok and state.lanes[name].requests_truncated >= cut
