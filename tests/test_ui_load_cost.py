"""The busy dashboard's work, counted (not timed): issue 23 item 1, "≥ 10 frames/s at ~6,000 events/s".

Under load the UI folds every event its measuring thread handed over (sessions/runner.Inbox) and repaints ten
times a second.  Its cost per frame must follow what changed, not the event rate nor the length of the chart
window: here a live (``real_time``) app takes in a steady load -- 100 requests a second over two lanes, the
load watcher reporting every 0.5 s -- and these tests count

* the bytecode instructions the UI's fold runs per token event (the bulk of the stream: 64 of every 68
  events of a 64-token request), and
* the requests' samples the dashboard reads per frame once a minute of them fills the chart window (each
  read of the window -- the saturation badge, the window's figures, the request charts -- reads them all).

Before: 409 instructions per token event (every fold's ``apply`` tested every kind) and 11,105 samples read per
frame (the saturation badge judged the window at every frame, the charts read it again whenever any chart --
a /metrics gauge too -- moved a column); now 257 and 1,411.
"""

from __future__ import annotations

import collections
import sys

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.series import SeriesState
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource, sample_events
from test_ui_render_cost import _published

NS = 1_000_000_000
STEP_NS = NS // 10  # the redraw timer's period (10 Hz)
RATE = 100
"""Requests finished per second of session time (both lanes)."""
TOKENS = 16

OPCODES_PER_TOKEN = 320
"""Bytecode instructions the UI's fold runs per token event, the drain's own loop included (Python 3.11).
Measured 257 (``fold_batch``: each fold's ``apply_token``); 409 before, every event through every fold's
``apply`` testing for every other kind."""
SAMPLES_PER_FRAME = 2_000
"""Samples read per frame with 6,000 in the chart window (3,000 a lane), averaged over 3 s of frames.  Live, the
window is read once a second for the figures and once for the saturation badge; the request charts read only
the samples judged since their last column step (folds/series.ChartFeed): measured 1,411.  Before: 11,105 (the
badge read the window twice a lane at every frame, and every chart's step, a /metrics gauge's too, read it all
again); 2,580 with the charts still reading the whole window at their own steps."""


def _load_events(t_start: int, seconds: float) -> list[Event]:
    """``RATE`` requests a second of ``TOKENS`` tokens each, alternating lanes, and a ``client_load`` window
    every 0.5 s (not starved: every sample is judged clean once the watcher reported past it)."""
    evs: list[Event] = []
    for i in range(int(seconds * RATE)):
        sent = t_start + i * NS // RATE
        lane, rid = ("A", "B")[i % 2], f"load-{t_start}-{i}"
        first = sent + 50_000_000
        evs += [Event(sent, schema.REQUEST, lane, rid, {"endpoint": "chat", "purpose": "load", "max_tokens": TOKENS}),
                Event(first, schema.FIRST_BYTE, lane, rid),
                *(Event(first + k * 5_000_000, schema.TOKEN, lane, rid, {"text": "tok "}) for k in range(TOKENS)),
                Event(first + TOKENS * 5_000_000, schema.USAGE, lane, rid,
                      {"prompt_tokens": 20, "completion_tokens": TOKENS}),
                Event(first + TOKENS * 5_000_000, schema.DONE, lane, rid, {"finish_reason": "length", "status": 200})]
    for k in range(1, int(seconds * 2) + 1):
        t = t_start + k * NS // 2
        evs.append(Event(t, schema.CLIENT_LOAD, None, None,
                         {"t0": t - NS // 2, "lag_ms": 0.4, "lag_mean_ms": 0.1, "samples": 25, "bound": False,
                          "threshold_ms": 20.0, "runq_ms": 0.2, "runq_slices": 30, "cpu_pct": 40.0,
                          "proc_cpu_pct": 30.0}))
    return sorted(evs, key=lambda e: e.t)




def _opcodes(fn) -> int:
    """Bytecode instructions ``fn()`` runs (every Python frame it enters, traced opcode by opcode)."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        frame.f_trace_opcodes = True
        if event == "opcode":
            count += 1
        return tracer

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(before)
    return count


async def test_token_events_cost_the_fold_little(monkeypatch):
    source = ScriptedSource(sample_events(), hold=True, mode="live", real_time=True)
    app = make_app(source, refresh_hz=0.01)  # the test drives the redraws
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        app.redraw(force=True)
        t0 = max(app.state.last_t, app.series.last_t) + NS
        events = _load_events(t0, 1.0)
        opening = [ev for ev in events if ev.kind in (schema.REQUEST, schema.FIRST_BYTE)]
        tokens = [ev for ev in events if ev.kind == schema.TOKEN]
        closing = [ev for ev in events if ev.kind not in (schema.REQUEST, schema.FIRST_BYTE, schema.TOKEN)]
        for ev in opening:  # the requests open without being counted ...
            source.bus.publish(ev)
        app.drain()
        folded = app.state.events
        for ev in tokens:  # ... then their tokens, handed over as the measuring thread does, folded in one drain
            source.bus.publish(ev)
        per_token = _opcodes(app.drain) / len(tokens)
        assert app.state.events == folded + len(tokens)  # every one folded ...
        for ev in closing:
            source.bus.publish(ev)
        app.drain()
        assert app.state.lanes["A"].requests_ok + app.state.lanes["B"].requests_ok >= RATE  # ... into its request
        assert per_token <= OPCODES_PER_TOKEN, per_token


async def test_busy_dashboard_reads_the_window_per_second_not_per_frame(monkeypatch):
    reads: collections.Counter = collections.Counter()
    samples = SeriesState.samples

    def counting_samples(self, lane, t0=None):
        for s in samples(self, lane, t0):
            reads["samples"] += 1
            yield s

    source = ScriptedSource(sample_events(), hold=True, mode="live", real_time=True)
    app = make_app(source, refresh_hz=0.01)
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        t0 = max(app.state.last_t, app.series.last_t) + NS
        for ev in _load_events(t0, 70):  # a full chart window (60 s) of requests, then the frames counted
            source.bus.publish(ev)
        app.redraw(force=True)
        await pilot.pause(0.2)
        monkeypatch.setattr(SeriesState, "samples", counting_samples)
        play = collections.defaultdict(list)
        start = max(app.state.last_t, app.series.last_t)
        for ev in _load_events(start, 3):
            play[(ev.t - start) // STEP_NS].append(ev)
        feeds = getattr(app.screen, "_feeds", {})  # live, the request charts' own reads (folds/series.ChartFeed)
        fed = sum(f.reads for f in feeds.values())
        frames = 0
        for step in range(max(play) + 1):
            for ev in play.get(step, []):
                source.bus.publish(ev)
            frames += app.redraw()
            await pilot.pause()
        reads["samples"] += sum(f.reads for f in feeds.values()) - fed
        assert frames >= 25  # a frame per period: the data changed at each
        in_window = sum(1 for n in ("A", "B") for s in samples(app.series, n, app.series.last_t - 60 * NS))
        assert in_window >= 5_500
        assert reads["samples"] / frames <= SAMPLES_PER_FRAME, (reads["samples"] / frames, in_window)


def test_fold_batch_folds_as_each_event_is_folded():
    """The batch fold's token path makes the same changes as ``_fold``: the folds end equal, tokens of an
    unknown request, a token before its request and one without a lane included."""
    import pickle

    events = _load_events(NS, 2.0)
    events += [Event(3 * NS, schema.TOKEN, "A", "never-sent", {"text": "x"}),
               Event(3 * NS + 1, schema.TOKEN, None, "no-lane", {"text": "x"}),
               Event(3 * NS + 2, schema.TOKEN, "C", None, {"text": "x"}),
               Event(3 * NS + 3, schema.REQUEST, "A", "never-sent", {"endpoint": "chat", "purpose": "probe"}),
               Event(3 * NS + 4, schema.DONE, "A", "never-sent", {"finish_reason": "stop", "status": 200})]
    one, batch = (make_app(ScriptedSource([], mode="live")) for _ in range(2))
    for ev in events:
        one._fold(ev)
    for i in range(0, len(events), 97):
        batch.fold_batch(events[i:i + 97])
    for name in ("state", "series", "race_state", "timeline", "gauntlet"):
        assert pickle.dumps(getattr(one, name).__dict__) == pickle.dumps(getattr(batch, name).__dict__), name


def test_packed_samples_from_t0_in_or_out_of_order():
    from lanemon.folds.series import Packed, Sample

    def packed(ends):
        p = Packed()
        for t in ends:
            p.add(Sample(t, t - 5, 0.1, 0.01, 0.2, 50.0, "ok"), frozenset())
        return p

    assert [s.t for s in packed([10, 20, 30, 40]).samples(25)] == [30, 40]
    unordered = packed([10, 40, 20, 30])
    assert not unordered.ordered
    assert [s.t for s in unordered.samples(25)] == [40, 30]


async def test_a_starvation_note_coming_and_going_lays_the_screen_out_once(monkeypatch):
    """Under load the status bar's starvation note comes, goes and changes its words about twice a second;
    each change of the bar's width laid the whole screen out again (~10 ms, every widget re-rendered).  Live,
    the bar keeps its widest width: one layout pass, then the label alone repaints."""
    from textual.screen import Screen

    from lanemon.measure.load import Starvation
    from lanemon.ui.widgets.status_bar import StatusBar

    layouts = collections.Counter()
    layout = Screen._refresh_layout

    def counting_layout(self, *args, **kwargs):
        layouts["layout"] += 1
        return layout(self, *args, **kwargs)

    source = ScriptedSource(sample_events(), hold=True, mode="live", real_time=True)
    app = make_app(source, refresh_hz=0.01)
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        bar = app.screen.query_one(StatusBar)
        notes = [None, Starvation("machine", "w", "a", short="machine load"), None,
                 Starvation("own", "w", "a", short="lanemon's CPU 97 %")]
        monkeypatch.setattr(Screen, "_refresh_layout", counting_layout)
        for k in range(12):
            if k == 4:  # each note shown once: the bar is as wide as the widest
                await pilot.pause(0.1)
                layouts.clear()
            bar.update_from(mode="live", events=1000 + k, last_t=(20 + k) * NS, paused=False, speed=None, finished=False,
                            recording_path=None, own_cpu_pct=50.0, starved=notes[k % 4], tick=True)
            await pilot.pause()
        assert "lanemon's CPU 97 %" in str(bar.query_one("#info").visual)  # the last note is shown
        assert layouts["layout"] == 0, layouts  # (before: 16, two per change)
        info = bar.query_one("#info")
        held = info.size.width
        for k in range(12, 24):  # the note gone for 12 s: after 10 the bar gives its room back, once
            bar.update_from(mode="live", events=1000 + k, last_t=(20 + k) * NS, paused=False, speed=None,
                            finished=False, recording_path=None, own_cpu_pct=50.0, starved=None, tick=True)
            await pilot.pause()
        assert info.size.width < held


def test_chart_feed_draws_what_reading_the_window_draws():
    """Live, the request charts take in only the newly judged samples (folds/series.ChartFeed); what they
    draw is what reading every sample of the window again draws -- points, marks (client-bound windows
    here) and throughput -- step after step, while samples wait to be judged and the window slides."""
    import pytest

    from lanemon.folds.series import ChartFeed

    events = _load_events(NS, 90)
    windows = [i for i, ev in enumerate(events) if ev.kind == schema.CLIENT_LOAD]
    for i in windows[::7]:  # every 7th load-watch window starved: its requests flagged client-bound
        ev = events[i]
        events[i] = Event(ev.t, ev.kind, None, None, {**ev.data, "bound": True, "lag_ms": 80.0})
    app = make_app(ScriptedSource([], mode="live"))
    feed = ChartFeed(app.series, "A")
    series = app.series
    step = len(events) // 40
    for k in range(0, len(events), step):
        app.fold_batch(events[k:k + step])
        t1 = max(app.state.last_t, series.last_t)
        t0 = max(0, t1 - 60 * NS)
        reads = feed.reads
        feed.update(t0)
        assert feed.reads - reads <= 2 * step // (TOKENS + 4) + 10  # the new samples only
        ttft, tok, marks = [], [], []
        until = series.judged_until()
        for s in series.samples("A", t0):
            if s.t < t0 or until is None or s.t > until:
                continue
            if series.flagged(s):
                marks.append((s.t, s.outcome if s.outcome != "ok" else sorted(series.flags_of(s))[0]))
                continue
            ttft.append((s.t, s.ttft_s))
            tok.append((s.t, s.tok_s))
        assert (list(feed.ttft), list(feed.tok), list(feed.marks)) == (ttft, tok, marks)
        full = series.tokens_per_s("A", t0, t1, avg_s=5)
        fed = feed.tokens_per_s(t0, t1, avg_s=5)
        assert [t for t, _ in fed] == [t for t, _ in full]
        assert [v for _, v in fed] == pytest.approx([v for _, v in full], rel=1e-9, abs=1e-9)
    assert any(label == "client_bound" for _, label in feed.marks) and len(feed.ttft) > 2_000


def test_chart_feed_reads_the_lane_again_when_its_samples_were_replaced():
    """A fold restored from a snapshot (fewer samples filed than the feed took in) is read again, not indexed
    past its end."""
    import copy

    from lanemon.folds.series import ChartFeed

    app = make_app(ScriptedSource([], mode="live"))
    events = _load_events(NS, 6)
    app.fold_batch(events[: len(events) // 2])
    saved = copy.deepcopy(app.series.__dict__)
    app.fold_batch(events[len(events) // 2:])
    feed = ChartFeed(app.series, "A")
    feed.update(0)
    taken = len(feed.ttft)
    app.series.__dict__.clear()
    app.series.__dict__.update(saved)
    feed.update(0)
    assert 0 < len(feed.ttft) < taken
