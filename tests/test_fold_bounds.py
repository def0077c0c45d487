"""The live folds stay bounded however many requests a long session finishes (issue 23 item 4, the soak):
items are counted, not time or bytes measured by the clock.

* the series fold keeps :class:`Sample` objects only for its recent minutes and packs older ones into typed
  columns, with the very same figures (window numbers, throughput, chart points) as keeping every object;
* ``ClientLoad`` with ``keep_ns`` keeps only the windows its oldest sample can ask about;
* the request timeline keeps per scope the bars its screen can draw, and counts the rest.
"""

from __future__ import annotations

from pathlib import Path

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.dashboard import SessionState
from lanemon.folds.requests import SHOWN, RequestTimeline
from lanemon.folds.series import KEEP_NS, RECENT_NS, WINDOWS_S, SeriesState
from lanemon.measure.load import ClientLoad
from lanemon.recording.reader import Recording

SAMPLES = Path(__file__).resolve().parent.parent / "sample_sessions"
NS = 1_000_000_000
MS = 1_000_000


def _session(minutes: float, per_s: float, tokens: int = 8, lanes=("A", "B"), cell_every: int = 0):
    """A steady synthetic session: ``per_s`` requests finishing per second (alternating lanes), each of
    ``tokens`` chunks over 0.5 s, a ``client_load`` window every 0.5 s (every 40th starved)."""
    out = []
    step = int(NS / per_s)
    n = int(minutes * 60 * per_s)
    for k in range(1, int(minutes * 120) + 1):
        t = k * NS // 2
        out.append(Event(t, schema.CLIENT_LOAD, data={"t0": t - NS // 2, "lag_ms": 25.0 if k % 40 == 0 else 1.0,
                                                       "bound": k % 40 == 0, "threshold_ms": 20.0}))
    for i in range(n):
        lane = lanes[i % len(lanes)]
        req = f"{lane}-{i}"
        t = i * step
        data = {"endpoint": "chat", "purpose": "load"}
        if cell_every:
            data.update(bench="decode", cell=f"C{i // cell_every}")
        out.append(Event(t, schema.REQUEST, lane, req, data))
        first = t + 100 * MS + (i % 7) * 10 * MS
        for j in range(tokens):
            out.append(Event(first + j * 50 * MS, schema.TOKEN, lane, req, {"text": "x", "n": 1}))
        end = first + tokens * 50 * MS
        if i % 50 == 7:
            out.append(Event(end, schema.ERROR, lane, req, {"cls": "http", "message": "500", "status": 500}))
        else:
            out.append(Event(end, schema.DONE, lane, req, {"finish_reason": "length", "status": 200}))
    out.sort(key=lambda e: e.t)
    return out


def _fold_series(events, **kw) -> SeriesState:
    series = SeriesState(**kw)
    for ev in events:
        series.apply(ev)
    return series


def _points(series: SeriesState, lane: str, t0: int, t1: int):
    """What the charts draw from the samples (ui/screens/dashboard.draw_charts)."""
    return [(s.t, s.sent, s.ttft_s, s.tpot_s, s.e2e_s, s.tok_s, s.outcome, s.first, s.tokens,
             sorted(series.flags_of(s))) for s in series.samples(lane, t0)
            if s.t <= t1 and not series.pending(s)]


def _same_figures(packed: SeriesState, objects: SeriesState, t1: int) -> int:
    n = 0
    for lane in objects.lanes:
        for w in WINDOWS_S:
            t0 = max(0, t1 - w * NS)
            assert packed.window(lane, t0, t1) == objects.window(lane, t0, t1), (lane, w, t1)
            avg = {60: 5, 300: 15, 900: 30}[w]
            assert packed.tokens_per_s(lane, t0, t1, avg) == objects.tokens_per_s(lane, t0, t1, avg)
            pts = _points(objects, lane, t0, t1)
            assert _points(packed, lane, t0, t1) == pts
            n += len(pts)
    return n


def test_packed_series_shows_the_same_numbers_as_every_sample_kept_on_recorded_sessions() -> None:
    for name in ("decode.jsonl", "today.jsonl"):
        events = list(Recording(SAMPLES / name).events())
        packed, objects = SeriesState(recent_ns=20 * NS), SeriesState(recent_ns=1 << 62)
        checked = next_check = 0
        for ev in events:
            packed.apply(ev)
            objects.apply(ev)
            if ev.t >= next_check:
                checked += _same_figures(packed, objects, objects.last_t)
                next_check = ev.t + 15 * NS
        checked += _same_figures(packed, objects, objects.last_t)
        assert sum(len(s.packed) for s in packed.lanes.values()) > 100, name  # packing did happen
        assert checked > 1000, name


def test_series_holds_objects_only_for_the_recent_minutes_and_packs_the_rest_compactly() -> None:
    events = _session(minutes=20, per_s=6)
    series = _fold_series(events)
    ends = [ev.t for ev in events if ev.kind in (schema.DONE, schema.ERROR)]
    last = series.last_t
    objects = sum(len(s.samples) for s in series.lanes.values())
    packed = sum(len(s.packed) for s in series.lanes.values())
    assert len(ends) == 20 * 60 * 6
    # the Sample objects: only the requests of the last RECENT_NS (plus the few the watcher has not covered)
    assert objects <= sum(1 for t in ends if t >= last - RECENT_NS) + 12
    # the packed rows: only to KEEP_NS, and never more than the requests in that span
    assert packed <= sum(1 for t in ends if last - KEEP_NS <= t < last - RECENT_NS) + 1
    assert packed > 1000
    for s in series.lanes.values():  # a few dozen bytes a row, arrays included (no object per request)
        p = s.packed
        size = sum(a.buffer_info()[1] * a.itemsize for a in (p.t, p.sent, p.first, p.vals, p.code))
        assert size <= 2 * len(p) * (3 * 8 + 5 * 8 + 2) + 1024 * 66


def test_client_load_with_keep_ns_keeps_only_its_span_of_windows() -> None:
    events = [ev for ev in _session(minutes=30, per_s=0.01) if ev.kind == schema.CLIENT_LOAD]
    kept, every = ClientLoad(keep_ns=KEEP_NS), ClientLoad()
    for ev in events:
        kept.apply(ev)
        every.apply(ev)
    assert len(every.stalls) == len(events) == 3600
    per_window = NS // 2
    assert len(kept.stalls) <= KEEP_NS // per_window + 1
    assert len(kept.bound_stalls) <= KEEP_NS // per_window // 40 + 1
    assert len(kept.bound) <= KEEP_NS // per_window // 40 + 1
    last = events[-1].t
    # what the fold can still be asked about answers as before
    for start in range(last - KEEP_NS + NS, last, 7 * NS):
        assert kept.overlaps(start, start + 3 * NS) == every.overlaps(start, start + 3 * NS)
        assert kept.worst_stall_s(start, start + 3 * NS) == every.worst_stall_s(start, start + 3 * NS)


def test_client_load_keeps_its_stalls_for_stalls_ns() -> None:
    events = [ev for ev in _session(minutes=30, per_s=0.01) if ev.kind == schema.CLIENT_LOAD]
    load = ClientLoad(keep_ns=KEEP_NS, stalls_ns=60 * NS)
    for ev in events:
        load.apply(ev)
    assert len(load.stalls) <= 121 and len(load.bound_stalls) <= 4
    assert len(load.bound) > 40  # the starved windows the samples are judged by: still 16 minutes


def test_the_live_folds_forget_old_load_windows() -> None:
    state, series = SessionState(), SeriesState()
    for ev in _session(minutes=30, per_s=0.5):
        state.apply(ev)
        series.apply(ev)
    for load in (state.load, series.load):
        assert len(load.stalls) <= 60 * 2 + 1
        assert len(load.bound) <= KEEP_NS // (NS // 2) // 40 + 1


def test_timeline_keeps_per_scope_what_the_screen_can_show_and_counts_every_request() -> None:
    events = _session(minutes=10, per_s=8)
    capped, every = RequestTimeline(), RequestTimeline(shown=1 << 30)
    for ev in events:
        capped.apply(ev)
        every.apply(ev)
    sent = 10 * 60 * 8
    assert len(every.bars) == sent and len(capped.bars) <= 2 * SHOWN + 10  # running ones stay too
    assert capped.totals() == every.totals() == (sent, sum(1 for i in range(sent) if i % 50 == 7))
    # the latest SHOWN bars (what the screen draws) are the same bars
    assert [b.req for b in capped.select()[-SHOWN:]] == [b.req for b in every.select()[-SHOWN:]]


def test_timeline_keeps_each_cells_latest_bars() -> None:
    events = _session(minutes=5, per_s=8, cell_every=1000)  # cells of 1000 requests (500 a lane)
    capped, every = RequestTimeline(), RequestTimeline(shown=1 << 30)
    for ev in events:
        capped.apply(ev)
        every.apply(ev)
    assert capped.cells == every.cells and len(capped.cells) == 3
    for cell in capped.cells:
        assert capped.totals(cell) == every.totals(cell)
        assert [b.req for b in capped.select(cell)[-SHOWN:]] == [b.req for b in every.select(cell)[-SHOWN:]]
    assert [b.req for b in capped.select()[-SHOWN:]] == [b.req for b in every.select()[-SHOWN:]]
    assert len(capped.bars) <= 2 * SHOWN * len(capped.cells) + 10


def _traced_in(module_file: str, fn) -> int:
    """Bytes still allocated by ``module_file``'s own lines after ``fn()`` (tracemalloc: counted, not timed)."""
    import tracemalloc

    tracemalloc.start()
    try:
        keep = fn()
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, module_file)])
        del keep
        return sum(st.size for st in snap.statistics("filename"))
    finally:
        tracemalloc.stop()


def test_client_load_keeps_its_starved_windows_in_columns_not_an_object_each() -> None:
    """A live fold keeps 16 minutes of starved intervals (KEEP_NS); on a starved machine (every other window)
    that is ~960 of them in each of two folds: 16 bytes each in two typed columns, not a tuple of two ints
    (~130 bytes) each."""
    import lanemon.measure.load as load_mod

    events = []
    for k in range(1, 30 * 120 + 1):  # 30 minutes of 0.5 s windows, every other one starved (never merged)
        t = k * NS // 2
        events.append(Event(t, schema.CLIENT_LOAD, data={"t0": t - NS // 2 + 1, "lag_ms": 1.0,
                                                          "bound": k % 2 == 0, "threshold_ms": 20.0}))

    def fold():
        load = ClientLoad(keep_ns=KEEP_NS, stalls_ns=0)
        for ev in events:
            load.apply(ev)
        return load

    load = fold()
    n = len(load.bound)
    assert KEEP_NS // NS - 2 <= n <= KEEP_NS // NS + 1  # one starved interval a second, 16 minutes of them
    kept = _traced_in(load_mod.__file__, fold)
    assert kept <= 24 * n + 4096, (kept, n)


def test_packed_rows_hold_at_most_a_third_more_than_the_live_rows() -> None:
    """Rows dropped from the front are compacted away once they are a quarter of the arrays (not half):
    a steady 15-minute window of packed rows costs at most 4/3 of its live rows, plus one batch."""
    from lanemon.folds.series import Packed, Sample

    p = Packed()
    worst = 0.0
    live = 8000
    for i in range(60_000):
        p.add(Sample(i, i - 5, 0.1, 0.01, 1.0, 100.0, "ok", first=i - 4, tokens=64.0), ())
        p.drop_before(i - live + 1)
        if i > live:
            assert len(p) == live
            worst = max(worst, len(p.t) / len(p))
    assert worst <= 4 / 3 + 1024 / live, worst


def test_scrapes_are_kept_for_keep_ns_in_columns_and_read_back_as_they_came() -> None:
    """/metrics and GPU readings: 20 minutes of a scrape every 2 s per lane.  Kept only to KEEP_NS, in typed
    columns (about 40 bytes a scrape; a (t, dict) pair each held about 400), and read back with the figures
    each reading had: a figure it lacked or that could not be true is not there."""
    series = SeriesState(["A"])
    n = 20 * 60 // 2
    for i in range(n):
        t = (i + 1) * 2 * NS
        data = {"ok": True, "running": i % 7, "waiting": 3, "gen_tok_s": 100.0 + i}
        if i % 5:
            data["kv_usage"] = 0.5 if i % 11 else 7.0  # 7.0: not a share, never drawn
        series.apply_event(Event(t, schema.SERVER_METRICS, "A", None, data))
        series.apply_event(Event(t, schema.GPU, "A", None, {"ok": True, "power_w": 40.0 + i % 3,
                                                             "gpus": [{"util_pct": 50}]}))
    server, gpu = series.lane("A").server, series.lane("A").gpu
    kept = [i for i in range(n) if (i + 1) * 2 * NS >= series.last_t - KEEP_NS]
    assert len(server) == len(gpu) == len(kept)
    assert server.points("gen_tok_s") == [((i + 1) * 2 * NS, 100.0 + i) for i in kept]
    assert server.points("kv_usage") == [((i + 1) * 2 * NS, 0.5) for i in kept if i % 5 and i % 11]
    t, last = server[-1]
    assert t == n * 2 * NS and last == {"running": float((n - 1) % 7), "waiting": 3.0, "gen_tok_s": 100.0 + n - 1,
                                        "kv_usage": 0.5}
    assert gpu[-1] == (n * 2 * NS, {"power_w": 40.0 + (n - 1) % 3, "util_pct": 50.0})
    size = server.t.buffer_info()[1] * 8 + sum(c.buffer_info()[1] * 8 for c in server.cols.values())
    assert size <= len(server) * 40 * 4 // 3 + 1024  # typed columns, a third spare at most after compaction
