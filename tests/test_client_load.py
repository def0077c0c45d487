"""lanemon watches its own event loop: client_load events, client-bound requests, CPU hogs beside lanemon."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import time

import pytest

from lanemon import events as schema
from lanemon.client.loadwatch import LoadWatch
from lanemon.events import Clock, Event
from lanemon.folds.dashboard import SessionState
from lanemon.measure.load import ClientLoad, mark_client_bound

MS = 1_000_000


def _load(t, t0, bound, lag=30.0):
    return Event(t, schema.CLIENT_LOAD, None, None, {"t0": t0, "lag_ms": lag if bound else 1.0, "bound": bound})


def _request(lane, req, sent, end, tokens=10, step=10 * MS):
    evs = [Event(sent, schema.REQUEST, lane, req, {"endpoint": "completions", "purpose": "probe"})]
    for i in range(tokens):
        evs.append(Event(sent + 50 * MS + i * step, schema.TOKEN, lane, req, {"text": "x"}))
    evs.append(Event(end, schema.DONE, lane, req, {"finish_reason": "length"}))
    return evs


# ------------------------------------------------------------------ the pure fold
def test_client_load_fold_merges_starved_windows_and_finds_overlaps():
    load = ClientLoad()
    assert not load.watching and not load.overlaps(0, 10)
    for ev in (_load(500 * MS, 0, False), _load(700 * MS, 560 * MS, True), _load(900 * MS, 700 * MS, True),
               _load(1400 * MS, 900 * MS, False)):
        assert load.apply(ev)
    assert not load.apply(Event(0, schema.HOST, None, None, {}))
    assert load.bound == [(560 * MS, 900 * MS)] and load.windows == 4 and load.bound_windows == 2
    assert load.overlaps(100 * MS, 560 * MS) and load.overlaps(890 * MS, 2000 * MS)
    assert not load.overlaps(0, 559 * MS) and not load.overlaps(901 * MS, 1300 * MS)
    assert load.covers(1400 * MS) and not load.covers(1401 * MS) and load.max_lag_ms == 30.0
    assert load.worst_stall_s(0, 100 * MS) == 0.001 and load.worst_stall_s(600 * MS, 650 * MS) == 0.030
    load.apply(Event(1900 * MS, schema.CLIENT_LOAD, None, None, {"t0": 1400 * MS, "lag_ms": 2.0, "runq_ms": 45.0,
                                                                 "bound": True}))
    assert load.worst_stall_s(1500 * MS, 1600 * MS) == 0.045 and load.overlaps(1500 * MS, 1600 * MS)


def test_mark_client_bound_counts_the_records_it_flags():
    from lanemon.measure.records import assemble

    evs = _request("A", "1", 0, 400 * MS) + _request("A", "2", 600 * MS, 1000 * MS) + [_load(800 * MS, 700 * MS, True)]
    recs = assemble(evs)
    assert mark_client_bound(recs, evs) == 1


# ------------------------------------------------------------------ the dashboard fold
def test_dashboard_withholds_client_bound_figures_and_counts_them():
    st = SessionState([("A", "http://a", None)])
    evs = [_load(100 * MS, 0, False)]
    evs += _request("A", "1", 110 * MS, 400 * MS)  # clean: plotted once the watcher reports past 400 ms
    evs += [_load(600 * MS, 100 * MS, False)]
    evs += _request("A", "2", 610 * MS, 900 * MS)  # lanemon starved from 700 to 800 ms: withheld
    evs += [_load(800 * MS, 700 * MS, True)]
    evs += [_load(1000 * MS, 800 * MS, False)]
    for ev in evs[:-2]:
        st.apply(ev)
    lane = st.lanes["A"]
    assert lane.requests_ok == 2 and len(lane.tps_history) == 1  # request 2 waits for the watcher
    for ev in evs[-2:]:
        st.apply(ev)
    assert lane.requests_ok == 2 and len(lane.tps_history) == 1 and len(lane.ttft_history) == 1
    assert lane.client_bound == 1 and lane.last_client_bound_t == 900 * MS
    assert st.host.client_bound is False and st.host.client_bound_windows == 1
    assert list(st.host.client_lag_ms) == [1.0, 1.0, 30.0, 1.0]


def test_dashboard_without_a_watcher_plots_at_once():
    st = SessionState()
    for ev in _request("A", "1", 0, 400 * MS):
        st.apply(ev)
    assert len(st.lanes["A"].tps_history) == 1 and st.lanes["A"].client_bound == 0


# ------------------------------------------------------------------ the watcher, for real
def _watch(seconds: float, block_s: float = 0.0, every_s: float = 0.2) -> list[Event]:
    async def main() -> list[Event]:
        got: list[Event] = []
        watch = LoadWatch(Clock(), got.append)
        watch.start()

        async def hog_the_loop() -> None:
            while True:
                await asyncio.sleep(every_s)
                time.sleep(block_s)  # lanemon's loop blocked (as a heavy redraw would)

        task = asyncio.get_running_loop().create_task(hog_the_loop()) if block_s else None
        await asyncio.sleep(seconds)
        if task:
            task.cancel()
        await watch.stop()
        return got

    return asyncio.run(main())


def test_a_blocked_loop_is_reported_as_starved():
    evs = _watch(1.5, block_s=0.06)
    bound = [e for e in evs if e.data["bound"]]
    assert bound, [e.data for e in evs]
    assert all(e.data["lag_ms"] >= 20 for e in bound)
    for e in bound:  # a late sleep alone marks that sleep, not the whole time since the last event
        if e.data.get("runq_ms", 0) < e.data["threshold_ms"]:
            assert e.t - e.data["t0"] <= (20 + e.data["lag_ms"]) * MS + 5 * MS
    assert all({"t0", "lag_ms", "lag_mean_ms", "samples", "threshold_ms"} <= set(e.data) for e in evs)


@contextlib.contextmanager
def cpu_hogs(n: int = 4, seconds: int = 60):
    # bounded by the hog itself: a ``timeout`` wrapper killed with SIGKILL leaves its child spinning forever
    hog = f"import time\nend = time.monotonic() + {int(seconds)}\nwhile time.monotonic() < end: pass"
    procs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(n)]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


@pytest.mark.timeout(200)
def test_demo_under_cpu_hogs_withholds_what_lanemon_could_not_time():
    """Four CPU hogs beside a demo session whose loop is also busy: every starved window withholds the
    requests it touched, and the figures that are plotted are physically possible for the simulated lane."""
    from lanemon.cli.common import demo_lanes
    from lanemon.config import ProbeConfig
    from lanemon.sessions.sources import LiveSession

    async def main(lanes):
        # 64 tokens at time scale 0.4 take at least ~240 ms, longer than one 190 ms cycle of the busy loop below,
        # so every request spans a block (however the machine's load spaces them): each one must be withheld
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.05, max_tokens=64), mode="demo")
        st = SessionState()
        session.bus.subscribe(st.apply)

        async def redraws() -> None:  # a busy dashboard: the loop is blocked 40 ms every 150 ms
            while True:
                await asyncio.sleep(0.15)
                time.sleep(0.04)

        runner = asyncio.get_running_loop().create_task(session.run())
        busy = asyncio.get_running_loop().create_task(redraws())
        deadline = time.monotonic() + 60  # a loaded machine may need long for a few requests
        while time.monotonic() < deadline and (st.load.windows < 8 or sum(
                lane.requests_ok for lane in st.lanes.values()) < 6):
            await asyncio.sleep(0.1)
        busy.cancel()
        session.stop()
        await runner
        return st

    with cpu_hogs(seconds=90), demo_lanes(0.4) as lanes:
        st = asyncio.run(main(lanes))
    assert st.load.windows >= 5 and st.host.client_bound_windows >= 1
    withheld = sum(lane.client_bound for lane in st.lanes.values())
    plotted = sum(len(lane.tps_history) for lane in st.lanes.values())
    assert withheld >= 1, (st.load.bound, {n: (x.requests_ok, len(x.tps_history)) for n, x in st.lanes.items()})
    assert plotted == 0, (st.load.bound, {n: (x.requests_ok, len(x.tps_history)) for n, x in st.lanes.items()})
    # at time scale 0.4 the simulated lanes decode at most ~150 / 0.4 = 375 tok/s per stream; anything plotted
    # stays below 3x that (a burst read after a starved stretch would be far beyond it)
    assert all(v < 3 * 375 for lane in st.lanes.values() for v in lane.tps_history), plotted


def test_run_queue_wait_is_starvation_only_when_each_wake_up_waits():
    """Many tiny waits (a busy but unstarved client beside a simulator) are not starvation; hogs' slices are."""
    from lanemon.client.loadwatch import RUNQ_SLICE_MS, runq_starved

    assert not runq_starved(None, 0, 20.0)  # no schedstat (not Linux)
    assert not runq_starved(12.0, 3, 20.0)  # under the threshold in all
    assert not runq_starved(45.0, 400, 20.0)  # 45 ms over 400 wake-ups: 0.11 ms each
    assert runq_starved(45.0, 10, 20.0)  # 4.5 ms a slice: CPU hogs
    assert runq_starved(20.0 * RUNQ_SLICE_MS, 20, 20.0)  # exactly at both limits


def test_demo_lanes_as_processes_serve_from_child_processes_not_ours():
    """``bench sweep --demo`` runs the two simulators as child processes: at C16-C24 the in-process simulators
    took lanemon's CPU and GIL, so every high level was (rightly) marked unreliable -- starved by its own lanes."""
    import threading
    from urllib.parse import urlsplit

    import httpx
    import psutil

    from lanemon.cli.common import demo_lanes

    me = psutil.Process()
    before = set(threading.enumerate())  # other tests' in-process simulators may be running
    with demo_lanes(0.05, processes=True) as lanes:
        assert [lane.name for lane in lanes] == ["A", "B"]
        ports = {urlsplit(lane.url).port for lane in lanes}
        def listens(child) -> set[int]:
            try:
                return {c.laddr.port for c in child.net_connections("tcp") if c.status == psutil.CONN_LISTEN}
            except psutil.Error:
                return set()

        listening = {child: listens(child) for child in me.children()}
        assert ports <= set().union(*listening.values()), (ports, listening)
        assert not any(c.laddr.port in ports for c in me.net_connections("tcp") if c.status == psutil.CONN_LISTEN)
        assert not [t for t in set(threading.enumerate()) - before if "sim" in t.name.lower()]
        for lane in lanes:
            assert httpx.get(lane.url + "/models", timeout=30).status_code == 200
        sims = [child for child, mine in listening.items() if mine & ports]  # not other tests' simulators
        assert len(sims) == 2
    assert not [c for c in sims if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


def test_sweep_runs_its_demo_simulators_as_processes_unless_told_not_to():
    from lanemon.cli.main import build_parser

    parser = build_parser()
    assert parser.parse_args(["bench", "sweep", "--demo"]).sim_processes is True
    assert parser.parse_args(["bench", "sweep", "--demo", "--demo-in-process"]).sim_processes is False
    assert getattr(parser.parse_args(["bench", "decode", "--demo"]), "sim_processes", False) is False
