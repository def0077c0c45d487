"""When samples are flagged client-bound, lanemon says why (its own CPU, this machine's load, CPU steal) and
what to do; the status bar shows lanemon's own CPU share (issue 23, item 5)."""

from __future__ import annotations

import asyncio
from collections import namedtuple

import msgspec

from lanemon import events as schema
from lanemon.client.loadwatch import LoadWatch, steal_pct
from lanemon.events import Clock, Event
from lanemon.measure.load import ClientLoad, starvation_cause, window_of
from lanemon.recording.schema import DATA_SCHEMAS
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource, sample_events
from lanemon.ui.widgets.status_bar import StatusBar

MS = 1_000_000
Times = namedtuple("Times", "user nice system idle iowait irq softirq steal guest guest_nice")


def test_steal_share_between_two_cpu_times_readings():
    before = Times(100, 0, 50, 800, 0, 0, 0, 10, 0, 0)
    after = Times(130, 0, 60, 840, 0, 0, 0, 30, 5, 0)  # 100 s of CPU time went by (guest is inside user)
    assert steal_pct(before, after) == 20.0
    assert steal_pct(None, after) is None
    NoSteal = namedtuple("NoSteal", "user system idle")
    assert steal_pct(NoSteal(1, 1, 1), NoSteal(2, 2, 2)) is None  # macOS, Windows: no steal figure
    assert steal_pct(after, after) is None


def test_the_load_watcher_records_steal_beside_the_run_queue():
    got: list[Event] = []

    async def main() -> None:
        watch = LoadWatch(Clock(), got.append, interval=0.01, window=0.1)
        watch.start()
        await asyncio.sleep(0.35)
        await watch.stop()

    asyncio.run(main())
    assert got
    for ev in got:
        steal = ev.data.get("steal_pct")
        assert steal is None or 0.0 <= steal <= 100.0
    assert any("steal_pct" in ev.data for ev in got)  # Linux: psutil's cpu_times() has steal


def test_each_cause_is_named_with_what_to_do():
    steal = starvation_cause(window_of({"lag_ms": 40, "steal_pct": 22.0, "proc_cpu_pct": 95.0, "cpu_pct": 100.0}))
    assert steal.cause == "steal" and "22 %" in steal.why and "dedicated" in steal.advice
    assert steal.short == "CPU steal 22 %"
    own = starvation_cause(window_of({"lag_ms": 40, "steal_pct": 0.5, "proc_cpu_pct": 97.0, "cpu_pct": 60.0}))
    assert own.cause == "own" and "97 % of a core" in own.why and "--headless" in own.advice
    busy = starvation_cause(window_of({"lag_ms": 3, "runq_ms": 34.2, "proc_cpu_pct": 6.0, "cpu_pct": 99.0}))
    assert busy.cause == "machine" and "CPU 99 %" in busy.why and "34 ms" in busy.why
    assert "other CPU-heavy work" in busy.advice
    # a quiet machine (12 % busy, 4 ms run-queue wait) and a 30 ms late wake-up: the delay was lanemon's own
    # (its drawing thread held the interpreter), not "this machine's load" as the demo once said
    own_work = starvation_cause(window_of({"lag_ms": 30.0, "runq_ms": 4.0, "proc_cpu_pct": 20.0, "cpu_pct": 12.0}))
    assert own_work.cause == "internal" and own_work.short == "lanemon's own work"
    assert "30 ms late" in own_work.why and "12 % busy" in own_work.why and "(p)" in own_work.advice
    # the same lag with most of it waiting for a CPU is the machine's, even at a low average CPU
    waited = starvation_cause(window_of({"lag_ms": 30.0, "runq_ms": 25.0, "proc_cpu_pct": 20.0, "cpu_pct": 40.0}))
    assert waited.cause == "machine"
    # an old recording's window (no steal, no run queue) still gets a cause
    old = starvation_cause(window_of({"lag_ms": 31.0, "proc_cpu_pct": 12.0, "cpu_pct": 88.0}))
    assert old.cause == "machine" and "31 ms late" in old.why


def test_the_fold_keeps_the_latest_starved_window():
    fold = ClientLoad()
    fold.apply(Event(100 * MS, schema.CLIENT_LOAD, None, None, {"t0": 0, "lag_ms": 45, "bound": True,
                                                                  "proc_cpu_pct": 99.0}))
    fold.apply(Event(600 * MS, schema.CLIENT_LOAD, None, None, {"t0": 100 * MS, "lag_ms": 1, "bound": False,
                                                                  "proc_cpu_pct": 5.0}))
    assert fold.last_bound_t == 100 * MS and fold.last_bound.proc_cpu_pct == 99.0
    assert fold.last.proc_cpu_pct == 5.0


def test_recordings_with_and_without_steal_decode():
    for data in ({"lag_ms": 1.0, "bound": False}, {"lag_ms": 1.0, "bound": False, "steal_pct": 3.5}):
        decoded = msgspec.convert(data, DATA_SCHEMAS[schema.CLIENT_LOAD])
        assert decoded.steal_pct == data.get("steal_pct")


async def test_dashboard_shows_its_own_cpu_and_why_samples_were_flagged():
    evs = sample_events()
    t_end = max(e.t for e in evs)
    # the watcher covers the whole session; one starved window overlaps A's last probe: machine load
    a_last = max(e.t for e in evs if e.lane == "A" and e.kind == schema.DONE)
    load = [Event(t, schema.CLIENT_LOAD, None, None,
                  {"t0": t - 500 * MS, "lag_ms": 2.0, "bound": False, "proc_cpu_pct": 4.0, "cpu_pct": 30.0})
            for t in range(500 * MS, t_end + 1_000 * MS, 500 * MS)]
    load.append(Event(a_last, schema.CLIENT_LOAD, None, None,
                      {"t0": a_last - 300 * MS, "lag_ms": 3.0, "runq_ms": 41.0, "runq_slices": 4, "bound": True,
                       "proc_cpu_pct": 4.0, "cpu_pct": 99.0, "steal_pct": 0.0}))
    source = ScriptedSource(sorted(evs + load, key=lambda e: e.t), hold=True, mode="live")
    app = make_app(source)
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(50):
            if source.bus.published >= len(source.events):
                break
            await pilot.pause(0.05)
        app.redraw()
        await pilot.pause(0.2)
        assert app.state.lane("A").client_bound >= 1
        info = app.screen.query_one(StatusBar).query_one("#info").visual.plain
        assert "lanemon   4 % CPU" in info
        assert "starved: machine load" in info  # the figures are in the notification
        # the why and what to do: the notice under the status bar (issue 40 item 9: a toast covered the charts)
        notice = app.screen.query_one("#notice").visual.plain
        assert "CPU 99 %, waited 41 ms for a CPU" in notice and "What to do: stop other CPU-heavy work" in notice, notice


async def test_a_replay_does_not_show_the_recorded_cpu_as_its_own():
    """In a replay the client_load figures are the recorded process's: the status bar does not print them as
    'lanemon N % CPU' (this process), but still says the recorded samples were starved."""
    evs = sample_events()
    a_last = max(e.t for e in evs if e.lane == "A" and e.kind == schema.DONE)
    load = [Event(a_last, schema.CLIENT_LOAD, None, None,
                  {"t0": a_last - 300 * MS, "lag_ms": 3.0, "runq_ms": 41.0, "runq_slices": 4, "bound": True,
                   "proc_cpu_pct": 4.0, "cpu_pct": 99.0, "steal_pct": 0.0})]
    source = ScriptedSource(sorted(evs + load, key=lambda e: e.t), hold=True, mode="replay")
    app = make_app(source)
    async with app.run_test(size=(160, 45)) as pilot:
        for _ in range(50):
            if source.bus.published >= len(source.events):
                break
            await pilot.pause(0.05)
        app.redraw()
        await pilot.pause(0.2)
        info = app.screen.query_one(StatusBar).query_one("#info").visual.plain
        assert "% CPU" not in info and "starved: machine load" in info


def test_the_status_bars_own_cpu_is_the_last_ten_seconds_not_one_window():
    """The dashboard draws once a second, so one 0.5 s load window holds its frame (14 %) and the next does
    not (2 %): the status bar's figure is the windows of the last 10 s weighted by their length, not the
    latest window's."""
    from lanemon.folds.dashboard import OWN_CPU_S, HostState

    host = HostState()
    assert host.own_cpu_pct() is None
    half = 500 * MS
    for k in range(1, 41):  # 20 s of windows alternating 14 % and 2 %
        host.apply_load({"t0": (k - 1) * half, "proc_cpu_pct": 14.0 if k % 2 else 2.0}, k * half)
    assert host.client_load["proc_cpu_pct"] == 2.0  # the latest window alone
    assert host.own_cpu_pct() == 8.0
    assert all(t1 > 40 * half - OWN_CPU_S * 1_000_000_000 for _, t1, _ in host.own_cpu)  # the last 10 s kept
    # a starved window is published early (shorter): it counts for its length, not as a whole window
    host.apply_load({"t0": 40 * half, "proc_cpu_pct": 90.0}, 40 * half + 50 * MS)
    assert 8.0 < host.own_cpu_pct() < 8.0 + 90.0 * 0.05 / 10
    # a `bench load --workers` worker's window (its own loop, measure/load.py): its CPU is not this process's
    before = host.own_cpu_pct()
    host.apply_load({"t0": 40 * half + 50 * MS, "proc_cpu_pct": 99.0, "worker": 0}, 41 * half)
    assert host.own_cpu_pct() == before
    # a window without its start (an older recording): the latest figure, as before
    other = HostState()
    other.apply_load({"proc_cpu_pct": 6.0}, half)
    assert other.own_cpu_pct() == 6.0
