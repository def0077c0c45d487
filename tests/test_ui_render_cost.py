"""The idle dashboard's render work, counted (not timed): issue 23, "drawing costs what changes".

A live dashboard between probes still takes in a ``client_load`` window every 0.5 s, a host sample
every second and a /metrics scrape every 2 s.  None of that changes what most of the screen shows, so
it must not re-render the screen: these tests replay such a span of session time into the real app
under Textual's pilot, let every redraw and compositor pass run, and count the widgets Textual
rendered, the charts' repaints and the layout passes per simulated second.  Before the fix every
redraw re-rendered every label and chart and reflowed the screen (~70 renders per redraw).
"""

from __future__ import annotations

import collections

import pytest
from textual.screen import Screen
from textual.widget import Widget

from lanemon import events as schema
from lanemon.events import Event
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource, sample_events
from lanemon.ui.widgets import repaint
from lanemon.ui.widgets.time_chart import TimeChart

NS = 1_000_000_000
SPAN_S = 20
STEP_NS = NS // 10  # the redraw timer's period (10 Hz)
RENDERS_PER_S = 6.0
"""Widgets rendered per simulated second while idle (labels and the window table; the charts are counted by
their lines, below): a probe every 5 s repaints its lane's figures and the window table; the status bar's
event count and clock move once a second.  Measured 3.8 (8.3 with the charts' repaints before they drew
only their changed lines; ~150 before issue 23's first fix)."""
CHART_LINES_PER_S = 40.0
"""Chart lines redrawn per simulated second (six charts of ~13 lines at 160x45): each chart's axis moves a
column every ~1.3 s and redraws only the lines that changed.  Measured 22."""
LAYOUTS_PER_S = 1.0
"""Layout passes per simulated second (measured ~0.3; before, one per redraw: 2-10)."""
COMPOSITES_PER_S = 1.25
"""Compositor passes per simulated second: live, the dashboard takes in what arrived within a second and
draws it at the next one (measured 1.1 here; 1.95 when each probe's end, load window, scrape and chart step
was drawn in a frame of its own -- in the demo at 160x45 that was 5.3 passes a second, each re-rendering
every widget between the changed ones, Textual's compositor cropping to their bounding box)."""


def _idle_events(t0: int, seconds: int) -> list[Event]:
    """What a live session takes in between probes: client_load every 0.5 s, host every 1 s, /metrics
    every 2 s per lane, a probe's request on one lane every 5 s."""
    evs: list[Event] = []
    for k in range(1, seconds * 10 + 1):
        t = t0 + k * STEP_NS
        if k % 5 == 0:
            evs.append(Event(t, schema.CLIENT_LOAD, None, None,
                             {"t0": t - NS // 2, "lag_ms": 0.4, "lag_mean_ms": 0.1, "samples": 25, "bound": False,
                              "threshold_ms": 20.0, "runq_ms": 0.2, "runq_slices": 30, "cpu_pct": 12.0,
                              "proc_cpu_pct": 3.0}))
        if k % 10 == 0:
            evs.append(Event(t, schema.HOST, None, None, {"cpu_pct": 12.0 + k % 7, "mem_pct": 40.0}))
        if k % 20 == 0:
            for lane in ("A", "B"):
                evs.append(Event(t, schema.SERVER_METRICS, lane, None,
                                 {"engine": "vllm", "running": 0, "waiting": 0, "kv_usage": 0.0}))
        if k % 50 == 0:
            lane, rid = ("A", "B")[k // 50 % 2], f"idle-{k}"
            evs += [Event(t, schema.REQUEST, lane, rid, {"endpoint": "chat", "purpose": "probe", "max_tokens": 8}),
                    Event(t + 170_000_000, schema.FIRST_BYTE, lane, rid),
                    *(Event(t + 170_000_000 + i * 7_000_000, schema.TOKEN, lane, rid, {"text": "tok "})
                      for i in range(8)),
                    Event(t + 240_000_000, schema.USAGE, lane, rid, {"prompt_tokens": 20, "completion_tokens": 8}),
                    Event(t + 240_000_000, schema.DONE, lane, rid, {"finish_reason": "length", "status": 200})]
    return sorted(evs, key=lambda e: e.t)


@pytest.fixture
def counts(monkeypatch):
    """Every widget render Textual does (``Widget._render_content``), every chart repaint (Line API
    strips built), every layout pass of a screen and every compositor pass (``_compositor_refresh``)."""
    seen: collections.Counter = collections.Counter()
    render, layout, strip = Widget._render_content, Screen._refresh_layout, repaint.line_strip
    composite = Screen._compositor_refresh

    def counting_render(self):
        seen["render"] += 1
        return render(self)

    def counting_layout(self, *args, **kwargs):
        seen["layout"] += 1
        return layout(self, *args, **kwargs)

    def counting_composite(self):
        seen["composite"] += 1
        return composite(self)

    def counting_strip(*args, **kwargs):  # a chart's line turned into a strip (a repaint redoes the changed ones)
        seen["chart lines"] += 1
        return strip(*args, **kwargs)

    monkeypatch.setattr(Widget, "_render_content", counting_render)
    monkeypatch.setattr(Screen, "_refresh_layout", counting_layout)
    monkeypatch.setattr(repaint, "line_strip", counting_strip)
    monkeypatch.setattr(Screen, "_compositor_refresh", counting_composite)
    return seen


async def _published(source, pilot) -> None:
    """Wait (bounded) until the scripted source published its events and the app folded every one of them, so
    a test that plays events after the app's latest time plays the same input whatever the machine's load.
    (Waiting for the publishing alone, the app sometimes had folded none of them yet beside CPU hogs: the GPU
    demo then played its settling span from session time 0, under the sample's, and counted 14.5 renders a
    simulated second, not 10.9, for what was another input.)"""
    app, last = pilot.app, max((ev.t for ev in source.events), default=0)
    for _ in range(3000):
        if source.bus.published >= len(source.events):
            app.drain()  # what the redraw tick folds first (the test drives the redraws)
            if app.state.last_t >= last:
                break
        await pilot.pause(0.01)
    assert source.bus.published >= len(source.events) and app.state.last_t >= last, (app.state.last_t, last)
    await pilot.pause(0.2)


async def _play(app, pilot, source, events) -> None:
    """Publish ``events`` a redraw period at a time, each period redrawn and composited like the timer
    would (the span is simulated: no wall-clock wait).  ``pilot.pause(0)``: every message the redraw queued on
    the screen and its widgets is handled, then the compositor pass; ``pilot.pause()`` waited besides for the
    process to look idle (at least 20 ms of wall clock a period: 4-7 s of each test); the counts were the same
    (the replays' a little lower: no app timer fired between the periods)."""
    by_step: dict[int, list[Event]] = collections.defaultdict(list)
    for ev in events:
        by_step[ev.t // STEP_NS].append(ev)
    for step in range(min(by_step), max(by_step) + 1):
        for ev in by_step.get(step, []):
            source.bus.publish(ev)
        app.redraw()
        await pilot.pause(0)


async def test_idle_dashboard_renders_what_changed_not_the_screen(counts):
    source = ScriptedSource(sample_events(), hold=True, mode="live", real_time=True)
    app = make_app(source, refresh_hz=0.01)  # the test drives the redraws; the app's own timer stays out
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        app.redraw(force=True)
        await pilot.pause(0.2)
        t0 = max(app.state.last_t, app.series.last_t)
        counts.clear()
        await _play(app, pilot, source, _idle_events(t0, SPAN_S))
        assert app.series.lane("A").samples[-1].t > t0  # the probes landed ...
        assert len(app.screen.query_one("#chart-ttft", TimeChart).series["A"]) > 12  # ... and were drawn
        per_s = {k: v / SPAN_S for k, v in counts.items()}
        assert per_s.get("render", 0) <= RENDERS_PER_S, per_s
        assert per_s.get("layout", 0) <= LAYOUTS_PER_S, per_s
        assert counts["chart lines"] <= SPAN_S * CHART_LINES_PER_S, per_s


async def test_live_dashboard_draws_once_a_second_of_session_time(counts):
    """Live, what arrives within a second (a probe's request and end, two load windows, a host sample, the
    scrapes, a chart's column step) is drawn together at the next second: one compositor pass a second, not
    one per kind of event -- and every change is on the screen within that second."""
    source = ScriptedSource(sample_events(), hold=True, mode="live", real_time=True)
    app = make_app(source, refresh_hz=0.01)
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        app.redraw(force=True)
        await pilot.pause(0.2)
        t0 = max(app.state.last_t, app.series.last_t)
        before = app.state.lanes["A"].requests_ok + app.state.lanes["B"].requests_ok
        counts.clear()
        await _play(app, pilot, source, _idle_events(t0, SPAN_S))
        per_s = {k: v / SPAN_S for k, v in counts.items()}
        assert 0 < per_s.get("composite", 0) <= COMPOSITES_PER_S, per_s
        # the last probe ended at t0 + 20.24 s; the span's last second is drawn at its events (t0 + 20 s):
        # one more second's frame shows it
        source.bus.publish(Event(t0 + (SPAN_S + 1) * NS, schema.HOST, None, None, {"cpu_pct": 1.0}))
        await pilot.pause()
        assert app.redraw()
        await pilot.pause()
        ok = app.state.lanes["A"].requests_ok + app.state.lanes["B"].requests_ok
        assert ok == before + SPAN_S // 5
        shown = " ".join(str(app.screen.query_one(f"#lane-{n} #requests").render()) for n in ("A", "B"))
        assert f"{app.state.lanes['A'].requests_ok} ok" in shown and f"{app.state.lanes['B'].requests_ok} ok" in shown


async def test_paused_dashboard_renders_nothing(counts):
    source = ScriptedSource(sample_events(), hold=True, mode="live", real_time=True)
    app = make_app(source, refresh_hz=0.01)
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        await pilot.press("p")
        for _ in range(5):  # the pause itself is drawn (the status bar says so), and the layout that
            app.redraw()  # the first draw of the data changed (panels grew) settles, before the count starts
            await pilot.pause(0.1)
        t0 = max(app.state.last_t, app.series.last_t)
        counts.clear()
        await _play(app, pilot, source, _idle_events(t0, 5))  # the loop watcher and monitors go on
        assert counts["render"] == 0 and counts["layout"] == 0, dict(counts)
        await pilot.press("p")  # resumed: everything taken in while paused is drawn at once
        await pilot.pause(0.2)
        assert counts["render"] > 0


# -- the demo's own case: simulated GPU telemetry, its row and chart, probes streaming (issue 23 item 1) --------

DEMO_SPAN_S = 30
DEMO_LINES_PER_S = 60.0
"""Screen lines Textual rendered per simulated second of an idle ``lanemon demo``-like session at 160x45 (GPU
telemetry every second per lane, /metrics every 2 s, a probe streaming on each lane every 2.5 s): a line is
rendered when the widget it belongs to was refreshed there.  Measured 40 after issue 23's
repaint-what-changed work (charts refresh only their changed lines, once per column-period; the status bar's
count and clock once a second; the window table at most once a second; figures that cannot reflow the
screen), 124 before it."""
DEMO_RENDERS_PER_S = 14.0
"""Widget renders (labels, the window table; not the charts, drawn through the Line API) per simulated
second: measured 12.0 after, 17.7 before."""
DEMO_LAYOUTS_PER_S = 0.5
"""Layout passes per simulated second: 0.07 after, 0.93 before (a decode rate or the /models round trip
changing its width reflowed the screen)."""


GPU_READING = {"ok": True, "source": "sim", "gpu_count": 1,
               "gpus": [{"gpu": "0", "model": "simulated GB10", "util_pct": 40.0, "power_w": 30.0,
                         "temp_c": 40.0, "unified": True, "throttle": [], "xid": 0}]}


def _demo_events(t0: int, seconds: int) -> list[Event]:
    """What ``lanemon demo`` takes in: the idle session's loop-watcher and host windows, GPU telemetry every
    second per lane (power and utilisation moving), /metrics every 2 s per lane (the queue moving with the
    probe), and a probe on each lane every 2.5 s streaming 24 tokens."""
    evs = [e for e in _idle_events(t0, seconds) if e.kind in (schema.CLIENT_LOAD, schema.HOST)]
    for k in range(1, seconds * 10 + 1):
        t = t0 + k * STEP_NS
        if k % 10 == 0:
            for i, lane in enumerate(("A", "B")):
                gpu = dict(GPU_READING["gpus"][0], util_pct=float(20 + (k * 7 + i * 13) % 60),
                           power_w=float(10 + (k * 3 + i * 11) % 30))
                evs.append(Event(t + i, schema.GPU, lane, None, {**GPU_READING, "power_w": gpu["power_w"],
                                                                 "gpus": [gpu]}))
        if k % 20 == 0:
            for i, lane in enumerate(("A", "B")):
                evs.append(Event(t + i, schema.SERVER_METRICS, lane, None,
                                 {"ok": True, "engine": "vllm", "running": float(k // 20 % 2), "waiting": 0.0,
                                  "kv_usage": 0.001 * (k % 7), "gen_tok_s": float(20 + k % 5)}))
        if k % 25 == 0:
            for i, lane in enumerate(("A", "B")):
                rid, s = f"demo-{lane}-{k}", t + i * 1_200_000_000
                evs += [Event(s, schema.REQUEST, lane, rid, {"endpoint": "chat", "purpose": "probe",
                                                             "max_tokens": 24}),
                        Event(s + 170_000_000 + i * 50_000_000, schema.FIRST_BYTE, lane, rid),
                        *(Event(s + 170_000_000 + i * 50_000_000 + j * (9 + k % 4) * 1_000_000, schema.TOKEN,
                                lane, rid, {"text": "tok "}) for j in range(24)),
                        Event(s + 600_000_000, schema.USAGE, lane, rid, {"prompt_tokens": 200, "completion_tokens": 24}),
                        Event(s + 600_000_000, schema.DONE, lane, rid, {"finish_reason": "length", "status": 200})]
    return sorted(evs, key=lambda e: e.t)


@pytest.fixture
def lines(monkeypatch):
    """Screen lines Textual rendered (``StylesCache.render_line``: a widget's line that was refreshed or not yet
    cached), widget renders and layout passes."""
    from textual._styles_cache import StylesCache

    seen: collections.Counter = collections.Counter()
    line, render, layout = StylesCache.render_line, Widget._render_content, Screen._refresh_layout

    def counting_line(self, *args, **kwargs):
        seen["lines"] += 1
        return line(self, *args, **kwargs)

    def counting_render(self):
        seen["render"] += 1
        return render(self)

    def counting_layout(self, *args, **kwargs):
        seen["layout"] += 1
        return layout(self, *args, **kwargs)

    monkeypatch.setattr(StylesCache, "render_line", counting_line)
    monkeypatch.setattr(Widget, "_render_content", counting_render)
    monkeypatch.setattr(Screen, "_refresh_layout", counting_layout)
    return seen


def _gpu_demo_source() -> ScriptedSource:
    """The sample events, then both lanes announced with simulated GPU telemetry: a live source held open."""
    events = sample_events()
    t = events[-1].t
    events += [Event(t + 1, schema.LANE, lane, None, {"url": f"http://127.0.0.1:1/{lane}", "telemetry": "sim"})
               for lane in ("A", "B")]
    return ScriptedSource(events, hold=True, mode="live", real_time=True)


async def test_idle_demo_with_gpu_telemetry_renders_what_changed(lines):
    source = _gpu_demo_source()
    app = make_app(source, refresh_hz=0.01)
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        t0 = max(app.state.last_t, app.series.last_t)
        assert t0 == source.events[-1].t  # after the sample: the same input on every run
        settle = _demo_events(t0, 5)
        await _play(app, pilot, source, settle)  # the GPU row and chart appear, the layout settles
        await pilot.pause(0.2)
        t0 = max(app.state.last_t, app.series.last_t)
        assert t0 == settle[-1].t, (t0, settle[-1].t)  # every event of the settling span folded
        lines.clear()
        await _play(app, pilot, source, _demo_events(t0, DEMO_SPAN_S))
        screen = app.screen
        gpu_chart = screen.query_one("#chart-gpu", TimeChart)
        assert gpu_chart.display and len(gpu_chart.series["A"]) > 20  # the GPU chart is drawn and scrolls ...
        assert screen.query_one("#lane-A").has_class("-gpu")  # ... beside each lane's GPU row
        assert app.series.lane("B").samples[-1].t > t0  # the probes landed
        per_s = {k: v / DEMO_SPAN_S for k, v in lines.items()}
        assert per_s.get("lines", 0) <= DEMO_LINES_PER_S, per_s
        assert per_s.get("render", 0) <= DEMO_RENDERS_PER_S, per_s
        assert per_s.get("layout", 0) <= DEMO_LAYOUTS_PER_S, per_s


async def test_a_measuring_app_leaves_its_startup_objects_out_of_later_collections():
    """A full garbage collection walked every object of the process (Textual, Rich, the widgets): 66-113 ms
    with every thread stopped, a starved window of the measuring loop and a client-bound probe in the demo's
    first minute.  A live app freezes what it made at mount, and again after its first frames (``gc.freeze``):
    in the demo's first 75 s, full collections of 16-32 ms every ~23 s, not 100-240 ms every ~7 s."""
    import gc

    gc.unfreeze()
    source = ScriptedSource(sample_events(), hold=True, mode="live")
    app = make_app(source, refresh_hz=0.01)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.pause()
            assert gc.get_freeze_count() > 10_000  # the app's whole startup, not a handful
    finally:
        gc.unfreeze()


async def test_a_streams_tokens_alone_do_not_redraw_the_dashboard():
    """A token changes nothing the dashboard shows until its request ends, so a frame that took in only
    tokens is not redrawn; the screen still steps once a second of session time (the stall marks' seconds,
    the clock) and at the request's other events.  10 frames of tokens within two session seconds: at most
    the two seconds' frames redraw (every frame did before: the token moved the dashboard's version)."""
    source = ScriptedSource(sample_events(), hold=True, mode="live", real_time=True)
    app = make_app(source, refresh_hz=0.01)  # the test drives the redraws
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        app.redraw(force=True)
        await pilot.pause(0.2)
        t0 = (max(app.state.last_t, app.series.last_t) // NS + 1) * NS + STEP_NS // 2  # mid-frame, new second
        start = [Event(t0, schema.REQUEST, "A", "stream-1", {"endpoint": "chat", "purpose": "probe"}),
                 Event(t0 + 1_000_000, schema.FIRST_BYTE, "A", "stream-1")]
        for ev in start:
            source.bus.publish(ev)
        await _published(source, pilot)
        assert app.redraw()  # the request's start: in flight now
        painted = []
        for k in range(1, 11):  # a token a frame for 1 s: the session's second changes once
            source.bus.publish(Event(t0 + k * STEP_NS, schema.TOKEN, "A", "stream-1", {"text": "tok "}))
            await pilot.pause()
            painted.append(app.redraw())
        assert app.state.lanes["A"].active["stream-1"] == t0 + 10 * STEP_NS  # the tokens were folded
        assert sum(painted) <= 2, painted
        source.bus.publish(Event(t0 + 11 * STEP_NS, schema.DONE, "A", "stream-1", {"finish_reason": "stop"}))
        await pilot.pause()
        assert not app.redraw()  # live, its end waits for the next second of session time ...
        source.bus.publish(Event(t0 + 20 * STEP_NS, schema.HOST, None, None, {"cpu_pct": 12.0, "mem_pct": 40.0}))
        await pilot.pause()
        assert app.redraw()  # ... and is drawn then
        assert "stream-1" not in app.state.lanes["A"].active


# -- what is redrawn is what changed: each chart at its own axis steps, a card only for its own lane (the brief of
#    h-cpu: "a test that fails if a chart or card is redrawn when nothing it shows changed", counted, not timed) --

async def test_each_chart_repaints_only_when_its_axis_stepped_and_a_quiet_lanes_card_not_at_all():
    """Live at 160x45 with GPU telemetry: over 20 s of session time in which only lane A is probed, scraped and
    read (lane B sends nothing), every chart repaints at most once per column its axis moved (what came in
    meanwhile waits for the column: ``settle``), and no widget of lane B's card is rendered -- nothing it shows
    changed.  Before a chart is told its column moved, a repaint per frame with new data would count 10 a
    second; a card repainting its labels whatever changed would count dozens for lane B."""
    source = _gpu_demo_source()
    app = make_app(source, refresh_hz=0.01)
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        t0 = max(app.state.last_t, app.series.last_t)
        await _play(app, pilot, source, _demo_events(t0, 5))  # both lanes' GPU rows and charts, the layout settles
        t0 = max(app.state.last_t, app.series.last_t)  # B's last events drawn (live: at the next second)
        await _play(app, pilot, source, [e for e in _demo_events(t0, 3) if e.lane != "B"])
        await pilot.pause(0.2)
        screen = app.screen
        charts = {c.id: c for c in screen.query(TimeChart) if c.display}
        assert {"chart-ttft", "chart-decode", "chart-tput"} <= set(charts)
        t0 = max(app.state.last_t, app.series.last_t)
        quiet = [e for e in _demo_events(t0, SPAN_S) if e.lane != "B"]
        before = {cid: c.repaints for cid, c in charts.items()}
        card_b = screen.query_one("#lane-B")
        rendered: collections.Counter = collections.Counter()
        render = Widget._render_content

        def counting(widget):
            if card_b in widget.ancestors_with_self:
                rendered[widget.id or type(widget).__name__] += 1
            return render(widget)

        Widget._render_content = counting
        try:
            await _play(app, pilot, source, quiet)
            await pilot.pause(0.2)
        finally:
            Widget._render_content = render
        t1 = max(app.state.last_t, app.series.last_t)
        assert app.series.lane("A").samples[-1].t > t0 and app.state.lanes["A"].gpu.configured  # A moved ...
        for cid, chart in charts.items():
            column = chart.column_ns(60 * NS)
            steps = t1 // column - t0 // column
            assert 0 < chart.repaints - before[cid] <= steps + 1, (cid, chart.repaints - before[cid], steps)
        assert not rendered, dict(rendered)  # ... B's card: nothing of it drawn again


def test_a_chart_row_cut_into_segments_as_rich_would():
    """``line_strip`` cuts a line built by appends (a chart row) at its spans itself, and reuses the styles with
    their offsets; the segments (text, colour, offset meta) are those of Rich's own ``Text.render`` path --
    for gaps, unknown style names, a line with no spans, an empty line, and a line with a style of its own or
    overlapping spans (Rich's path)."""
    from rich.console import Console
    from rich.segment import Segment
    from rich.style import Style
    from rich.text import Text

    console, base = Console(), Style.parse("#e0e0e0 on #1e1e1e")

    def rich_path(line: Text, y: int) -> list[Segment]:  # what line_strip did before: every segment via Rich
        out, x = [], 0
        for seg in line.render(console):
            style = base + seg.style if seg.style is not None else base
            out.append(Segment(seg.text, style + Style.from_meta({"offset": (x, y)})))
            x += len(seg.text)
        return out

    row = Text()
    row.append("  125 ms", style="dim")
    row.append("┤", style="dim")
    row.append("   ")
    row.append("⣿⡇", style="#ff8800")
    row.append("⠁", style="bold #ffffff")
    row.append("  ", style="no-such-style-name")
    row.append("⢸", style=Style(color="blue"))
    row.append("    ")
    own = Text("abc", style="red")
    own.append("d", style="bold")
    overlap = Text("overlapping")
    overlap.stylize("red", 0, 6)
    overlap.stylize("bold", 3, 9)
    for y, line in enumerate([row, Text("plain"), Text(""), own, overlap, row]):
        got = list(repaint.line_strip(line, y, console, base))
        assert got == rich_path(line, y), (y, got)
        assert [s.style.meta["offset"] for s in got] == [s.style.meta["offset"] for s in rich_path(line, y)]


@pytest.mark.parametrize("speed", [1.0, 4.0, float("inf")])
async def test_a_replay_at_up_to_4x_draws_a_frame_a_second_of_session_time(counts, speed):
    """A replay playing at 1x (or up to 4x) is drawn as the live session it recorded: what arrives within a second
    of session time in one frame, the charts a column at a time (``DashboardScreen._settles``).  It drew every
    change in a frame of its own (19-21 % of a core for ``sample_sessions/demo.jsonl`` at 160x45, more than the
    live demo).  As fast as it goes ('max'), every change is drawn at once, as before."""
    source = ScriptedSource(sample_events(), hold=True, mode="replay", speed=speed)
    app = make_app(source, refresh_hz=0.01)
    async with app.run_test(size=(160, 45)) as pilot:
        await _published(source, pilot)
        source.finished = False  # still playing: the test publishes the rest of the recording as time goes by
        app.redraw(force=True)
        await pilot.pause(0.2)
        t0 = max(app.state.last_t, app.series.last_t)
        counts.clear()
        await _play(app, pilot, source, _idle_events(t0, SPAN_S))
        per_s = {k: v / SPAN_S for k, v in counts.items()}
        if speed <= 4:
            assert 0 < per_s.get("composite", 0) <= COMPOSITES_PER_S, per_s
            assert counts["chart lines"] <= SPAN_S * CHART_LINES_PER_S, per_s
        else:
            assert per_s.get("composite", 0) > 1.5 * COMPOSITES_PER_S, per_s  # (2.45 a second)


COMPOSITED_WIDGETS_PER_S = 40.0
"""Widgets a compositor pass renders (``Widget.render_lines``), per simulated second of the demo at 160x45: those
under the spans it sends (``ui/compositor.SpanCompositor``).  Measured 27; Textual's own pass, rendering every
widget in the bounding box of the changes (the status bar at the top, a chart at the bottom: nearly the
screen), 91."""


async def test_a_compositor_pass_renders_the_widgets_under_what_changed_and_sends_what_textual_would(monkeypatch):
    """Each partial update of the live demo at 160x45 sends the terminal the same bytes as Textual's stock pass
    would (both computed from the same refreshed regions, ours first), while rendering only the widgets under
    the refreshed spans: at most :data:`COMPOSITED_WIDGETS_PER_S`, under half of what the stock pass renders."""
    from textual._compositor import Compositor

    from lanemon.ui.compositor import SpanCompositor

    source = _gpu_demo_source()
    app = make_app(source, refresh_hz=0.01)
    rendered: collections.Counter = collections.Counter()
    passes: list[bool] = []
    whose: list[str | None] = [None]
    ours, stock, render_lines = SpanCompositor.render_partial_update, Compositor.render_partial_update, \
        Widget.render_lines

    def counting_lines(self, crop):
        if whose[0] is not None:
            rendered[whose[0]] += 1
        return render_lines(self, crop)

    def both(self):
        regions = set(self._dirty_regions)
        whose[0] = "ours"
        mine = ours(self)
        self._dirty_regions.update(regions)
        whose[0] = "stock"
        theirs = stock(self)
        whose[0] = None
        if regions and measuring[0]:
            passes.append(mine is not None and theirs is not None
                          and mine.render_segments(app.console) == theirs.render_segments(app.console))
        return mine

    measuring = [False]
    monkeypatch.setattr(Widget, "render_lines", counting_lines)
    monkeypatch.setattr(SpanCompositor, "render_partial_update", both)
    async with app.run_test(size=(160, 45)) as pilot:
        assert isinstance(app.screen._compositor, SpanCompositor)
        await _published(source, pilot)
        t0 = max(app.state.last_t, app.series.last_t)
        await _play(app, pilot, source, _demo_events(t0, 5))  # the GPU rows and charts appear, the layout settles
        await pilot.pause(0.2)
        t0 = max(app.state.last_t, app.series.last_t)
        rendered.clear()
        measuring[0] = True
        await _play(app, pilot, source, _demo_events(t0, SPAN_S))
        await pilot.pause(0.2)
    assert len(passes) >= SPAN_S * 0.8 and all(passes), passes  # a pass a second of session time, each the same
    assert rendered["ours"] <= SPAN_S * COMPOSITED_WIDGETS_PER_S, dict(rendered)
    assert 2 * rendered["ours"] <= rendered["stock"], dict(rendered)


def test_a_compositor_pass_renders_a_widget_over_the_band_of_its_lines_that_change():
    from textual.geometry import Region

    from lanemon.ui.compositor import _band

    spans = {3: [(10, 20)], 5: [(0, 4), (30, 40)], 9: [(50, 60)]}
    assert _band(Region(0, 0, 80, 12), spans) == Region(0, 3, 80, 7)  # the screen: lines 3 to 9
    assert _band(Region(12, 2, 5, 5), spans) == Region(12, 3, 5, 1)  # under line 3's span alone
    assert _band(Region(20, 0, 5, 12), spans) == Region(20, 3, 5, 1)  # starts where a span ends: Textual's update
    assert _band(Region(21, 0, 8, 12), spans) is None  # moves the cursor there; one column on, no span reaches it
    assert _band(Region(0, 6, 80, 3), spans) is None  # lines with no span
    assert _band(Region(0, 0, 0, 12), spans) is None


def test_a_textual_without_the_parts_it_builds_on_keeps_textuals_own_compositor(monkeypatch):
    """ui/compositor.py leans on Textual's private compositor parts: where they are missing (another Textual), a
    lanemon screen keeps the compositor Textual gave it instead of failing."""
    from textual._compositor import Compositor

    from lanemon.ui import compositor as ours
    from lanemon.ui.screens.base import LanemonScreen

    assert type(LanemonScreen()._compositor) is ours.SpanCompositor  # this Textual: ours
    monkeypatch.setattr(ours, "SUPPORTED", False)
    assert type(LanemonScreen()._compositor) is Compositor
