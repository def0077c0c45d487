"""Issue 40 item 10: 80x24 (and 100x30) tell the story with less, but whole: no word cut mid-way where a whole
shorter one would fit (the sweep's result table, the status bar's starvation note and its `not recording`)."""

from __future__ import annotations

from lanemon.public_lane import PublicLane
import textwrap

import pytest
from typed_cells import decode_cell


def _sweep_result():
    """A sweep's typed result (lanemon.results.sweep), as the run's results() returns it."""
    from load_sweep_results import sweep_result

    level = {"aggregate_tok_s": 1063.0, "steady_tok_s": 1076.0, "ttft_p90_s": 0.038, "ttft_n": 8,
             "per_stream_tok_s_p50": 500.0, "errors": 0,
             "goodput": {"rate_rps": 2.5, "share": 0.9, "held": True, "targets": {}}}
    lane = {"levels": {"1": level, "2": level}, "gain_per_doubling": {"1": None, "2": 0.9}, "stopped": "max_level",
            "slo_holds_to": 2, "max_aggregate_tok_s": 1063.0, "slo_held": {"1": True, "2": True}}
    return sweep_result({"A": lane, "B": dict(lane)}, slo={"ttft": 0.5}, knee_gain=0.1)


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_the_sweep_table_is_fitted_to_the_screen_and_names_what_it_hid(size):
    """`bench sweep --slo` at 100x30 cut its header (`goodput req/│`) and at 80x24 scrolled `TPOT p5│` off the
    edge: the table is the CLI's model fitted to the width, columns dropped whole and named in a note."""
    from textual.widgets import DataTable, Static

    from lanemon.ui.app import make_app
    from lanemon.ui.sample import ScriptedSource

    source = ScriptedSource([], mode="bench", hold=True, lanes=[PublicLane("A"), PublicLane("B")])
    source.kind = "sweep"
    source.results = _sweep_result
    app = make_app(source)
    async with app.run_test(size=size) as pilot:
        for _ in range(100):
            await pilot.pause(0.05)
            if app.screen.query(DataTable):
                break
        assert app.screen_name() == "result"
        table = app.screen.query(DataTable).first()
        await pilot.pause()
        labels = [str(c.label) for c in table.columns.values()]
        assert labels[:2] == ["C", "lane"]
        assert table.virtual_size.width <= table.scrollable_content_region.width, (labels, size)
        notes = " ".join(str(w.render()) for w in app.screen.query(Static))
        said = notes.split("hidden at this width: ")[1].split(" (")[0].split(", ") if "hidden at" in notes else []
        hidden = [n for n in ("gain/doubling", "steady tok/s", "TTFT p90", "TPOT p50", "err", "goodput req/s",
                              "SLO") if n in said]
        assert len(labels) + len(hidden) == 10 and (not hidden or "hidden at this width" in notes)
        assert "goodput req/s" in labels or "good/s" in labels or "goodput req/s" in hidden
        await pilot.press("q")


@pytest.mark.parametrize("size,chip", [(80, ""), (100, " · SIM · SHARED 2 viewers"), (60, " · SIM")])
async def test_the_status_bar_drops_whole_items_rather_than_cut_a_word(size, chip):
    """At 80x24 the bar read `◌ starved: machine lo` (Label's ellipsis cut the note) and a live header at 100x30
    `not reco…`: lower items go whole (lanemon's CPU, then the cause's words, then the event count) and the
    right end says `not recording`, a shorter whole form, or nothing."""
    from textual.app import App

    from lanemon.measure.load import Starvation
    from lanemon.ui.widgets.status_bar import StatusBar

    class Bar(App):
        def compose(self):
            yield StatusBar()

    why = Starvation("internal", "lanemon's own work: its measuring loop woke 80 ms late", "pause",
                     "lanemon's own work")
    app = Bar()
    async with app.run_test(size=(size, 4)) as pilot:
        bar = app.query_one(StatusBar)
        for k in range(3):  # the path's room is the last layout's: it settles on the second draw
            bar.update_from(mode="live", events=1_234_567, last_t=(3_600 + k) * 1_000_000_000, paused=True,
                            speed=None, finished=False, recording_path=None, own_cpu_pct=12.0, starved=why,
                            simulated=chip, tick=True)
            await pilot.pause()
        info, path = bar.query_one("#info"), bar.query_one("#path")
        text, right = info.visual.plain, path.visual.plain
        assert "◌ starved" in text and "PAUSED" in text and "t +" in text, text
        room = bar.size.width - bar.query_one("#mode").size.width
        assert len(text) + 2 <= room, (text, room)  # whole, not cut by the edge or the ellipsis
        assert right in ("not recording", "no rec", ""), right
        assert len(right) + 2 <= path.size.width or not right, (right, path.size.width)
        if size >= 100 and not chip:
            assert "starved: lanemon's own work" in text


@pytest.mark.parametrize("size", [(80, 24), (100, 30)])
async def test_the_client_bound_notice_is_whole_at_small_sizes(size):
    """At 100x30 the notice under the status bar read `… this machine's load: CPU 100 %, wa…`: it takes the
    fullest of its forms that fits the line (the cause's short words, then without what to do) -- whole words."""
    from textual.widgets import Label

    from lanemon.ui.app import make_app
    from lanemon.ui.sample import ScriptedSource
    from lanemon.ui.widgets.time_chart import TimeChart
    from test_starved_notice import LANES, S, _events, _wait

    app = make_app(ScriptedSource(_events(8.0), lanes=LANES, mode="live", hold=True))
    async with app.run_test(size=size) as pilot:
        await _wait(pilot, lambda: app.state.last_t >= 8 * S and app.state.lane("A").client_bound)
        app.redraw(force=True)
        await pilot.pause()
        notice = app.screen.query_one("#notice", Label)
        text = notice.visual.plain
        assert notice.display and text.startswith("client-bound: 1 sample not plotted")
        assert "lanemon was held up" in text and text.endswith((".", ")")), text
        box = notice.content_region
        assert len(textwrap.wrap(text, box.width)) <= box.height, (text, box)  # whole words in its rows
        if size[1] >= 30:  # two rows from 30: the cause's short words and what to do
            assert "What to do: stop other CPU-heavy work" in text
        for chart in app.screen.query(TimeChart):
            if chart.display and chart.region.area:
                assert not chart.region.overlaps(notice.region)


def _three_sim_lanes():
    """Three simulated lanes as `lanemon live` shows them: probes that stream, two /metrics scrapes each (the
    engine idle at the second: `gen 63.3 tok/s 2 s ago`), prefix-cache counters on B."""
    from lanemon import events as schema
    from lanemon.events import Event

    S, MS = 1_000_000_000, 1_000_000
    evs = []
    for lane, sim, engine in (("A", "tensorfold-exl3", "vllm"), ("B", "sglang-native", "sglang"),
                              ("C", "tensorfold-exl3", "vllm")):
        evs.append(Event(0, schema.LANE, lane, None, {"url": f"http://127.0.0.1:1861{ord(lane) - 64}/v1",
                                                       "model": "deepseek-v4.1-flash"}))
        evs.append(Event(1, schema.PROBE, lane, None, {"ok": True, "model": "deepseek-v4.1-flash", "latency_s": 0.004,
                                                        "simulated": True, "simulates": sim}))
        for i in range(6):
            t, req = (1 + i) * S, f"{lane}{i}"
            evs.append(Event(t, schema.REQUEST, lane, req, {"endpoint": "completions", "purpose": "probe"}))
            step = (2 + 3 * i) * MS  # decode rates from ~80 to ~500 tok/s: a wide range
            evs += [Event(t + 40 * MS + k * step, schema.TOKEN, lane, req, {"text": "x", "n": 1}) for k in range(12)]
            evs.append(Event(t + 40 * MS + 12 * step, schema.DONE, lane, req, {"finish_reason": "length"}))
        for k, (gen, total) in enumerate(((63.3, 800.0), (0.0, 800.0))):
            evs.append(Event((5 + 2 * k) * S, schema.SERVER_METRICS, lane, None, {
                "ok": True, "engine": engine, "running": 0, "waiting": 0, "kv_usage": 0.0,
                "kv_capacity_tokens": 1_048_576, "gen_tok_s": gen, "prompt_tok_s": 36.5 if not k else 0.0,
                "requests_success_total": 20.0 + 15 * k, "generation_tokens_total": total + 500 * k,
                "prefix_queries_total": 1000.0 + 1000 * k, "prefix_hits_total": 930.0 + 960 * k,
                "preemptions_total": 0.0, "latency_s": 0.02}))
    evs.sort(key=lambda e: e.t)
    return evs


@pytest.mark.parametrize("size", [(100, 30), (160, 45)])
async def test_three_lanes_cards_leave_parts_out_whole(size):
    """A live session of three simulated lanes: at 100x30 the 30-column cards read `tensorfold-exl3 (si…`,
    `gen 63.3 tok/s 2 s ago prom…` and `session 15 req · prefix hit…`; at 160x45 `n=9 · 42…`.  Every label of
    a card now holds its text whole (a shorter whole form, or the part left out)."""
    from textual.widgets import Label

    from lanemon.ui.app import make_app
    from lanemon.ui.sample import ScriptedSource
    from lanemon.ui.widgets.lane_panel import LanePanel
    from test_starved_notice import _wait

    lanes = [{"name": n, "url": f"http://127.0.0.1:1861{i}/v1", "model": "deepseek-v4.1-flash"}
             for i, n in enumerate("ABC", 1)]
    events = _three_sim_lanes()
    source = ScriptedSource(events, lanes=lanes, mode="live", hold=True)
    app = make_app(source)
    async with app.run_test(size=size) as pilot:
        await _wait(pilot, lambda: source.bus.published >= len(events))
        for _ in range(3):  # a row's room is the last layout's: the second draw fits it
            app.redraw(force=True)
            await pilot.pause()
        cut = []
        for panel in app.screen.query(LanePanel):
            for label in panel.query(Label):
                text = label.visual.plain if label.display and label.region.area else ""
                if "\n" in text or not text.strip():
                    continue
                if len(text.rstrip()) > label.content_region.width or "…" in text:
                    cut.append((panel.lane, label.id, text, label.content_region.width))
        assert not cut, cut
        assert "prompt" in app.screen.query_one("#lane-A #srv-prompt", Label).visual.plain or size[0] < 160


@pytest.mark.parametrize("size", [80, 100])
async def test_the_bench_header_says_not_recording_whole_or_shorter(size):
    """`bench decode --demo --no-record` at 80x24 ended its header in `elapsed +31.9s  no…`."""
    from textual.app import App

    from lanemon.ui.widgets.bench_status import BenchStatus

    class Bar(App):
        def compose(self):
            yield BenchStatus()

    app = Bar()
    async with app.run_test(size=(size, 4)) as pilot:
        bar = app.query_one(BenchStatus)
        for _ in range(3):
            bar.update_from(kind="decode", state="finished", current=None, done=20, total=20, elapsed="+31.9s",
                            errors=0, recording_path=None)
            await pilot.pause()
        path = bar.query_one("#path")
        right = path.visual.plain
        assert right in ("not recording", "no rec", ""), right
        assert len(right) <= path.content_region.width or not right, (right, path.content_region.width)


def test_category_bars_in_a_narrow_panel_stack_each_label_over_its_bars():
    """80x24's bench screen gives the category bars a 21-cell panel: each bar's `tok/s ?` wrapped onto a line
    of its own and `reasoning` read `reason…`.  Too narrow for label, lane, bar and value with its unit on one
    line, each group's label takes a line of its own over its lanes' bars, the unit said once in the key."""
    from lanemon.ui.widgets.bench_chart import fit_bars

    labels = ["coding", "reasoning", "summarization"]
    series = {"A": [1509.0, 965.0, 1171.0], "B": [1324.0, 823.0, 1043.0]}
    flagged = {("A", "coding"), ("B", "reasoning")}
    text, left = fit_bars(labels, series, {}, 21, "tok/s", flagged=flagged, height=20)
    lines = text.plain.split("\n")
    assert left == 0 and all(len(line) <= 21 for line in lines), lines
    assert "(tok/s" in lines[0] and all("…" not in line for line in lines), lines
    for label in labels:
        assert label in lines
    assert "1,509 ?" in text.plain and "823 ?" in text.plain
    wide, _ = fit_bars(labels, series, {}, 60, "tok/s", flagged=flagged, height=20)
    assert "coding" in wide.plain.split("\n")[1] and "1,509 tok/s ?" in wide.plain  # wide: as before


async def _finished(pilot) -> None:
    """Until the replay finished (bounded), then five more frames: what the screen shows with no redraw forced."""
    app = pilot.app
    for _ in range(300):
        await pilot.pause(0.05)
        if getattr(app.source, "finished", False):
            break
    for _ in range(5):
        await pilot.pause(0.05)


def _path_whole(app, name: str) -> None:
    """The finished replay's header names its file whole (or leaves it out), see the test below."""
    path = app.screen.query_one("#path")
    right = path.visual.plain
    assert right in (f"from {name}", name, ""), right  # the dashboard's bar had 1 cell for the whole path
    assert len(right) <= path.content_region.width or not right, (right, path.content_region.width)


async def test_a_finished_replays_header_names_its_file_whole_at_80x24():
    """At 80x24 a replay's header ended in `■ replay finished  fro…` (races) or `elapsed +1m52s  f…` (a bench
    replay): the path was fitted to the width of a layout that had not settled, and nothing redrew it after
    the last event.  The label takes the form that fits again whenever its width changes.  The dashboard's here;
    the race screen's (races.jsonl) in the race header's test and the bench screen's (prefill.jsonl) in the
    bench charts' test, each before anything is redrawn by force (one replay each, not two)."""
    from pathlib import Path

    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app

    rec = Path(__file__).resolve().parent.parent / "sample_sessions" / "demo.jsonl"
    app = make_app(ReplaySession(rec, speed=float("inf")))
    async with app.run_test(size=(80, 24)) as pilot:
        await _finished(pilot)
        _path_whole(app, "demo.jsonl")


async def test_the_gauntlet_header_and_lanes_leave_items_out_whole_at_80x24():
    """The gauntlet replay at 80x24 read `… system prompt 1,950 tok  │  t +92` (the time cut): the header gives
    up the system prompt's size, the time scale, then hops × reps, whole; the time stays.

    Its lanes (the same replay: it was played once for each half): `turn  prompt  cached  ■ TTFT  ■ d…`, rows
    `3,692  –  ████…` (the times cut off), `turn …`, reps wrapped inside an item (`(20` / `calls)`) and the
    verdict `both 3/3 cor…`.  The turns drop the cached then the prompt column whole, each line holds whole
    items, the verdict wraps."""
    from pathlib import Path

    from textual.widgets import Label, Static

    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app
    from lanemon.ui.widgets.gauntlet_lane import GauntletLanePanel

    rec = Path(__file__).resolve().parent.parent / "sample_sessions" / "gauntlet.jsonl"
    app = make_app(ReplaySession(rec, speed=float("inf")))
    async with app.run_test(size=(80, 24)) as pilot:
        await _finished(pilot)
        mode, info, path = (app.screen.query_one(f"#g-{k}") for k in ("mode", "info", "path"))
        text = info.visual.plain
        assert "t +" in text and "■ finished" in text, text
        assert mode.size.width + len(text) + 2 <= 80, (mode.visual.plain, text)
        right = path.visual.plain
        assert right in ("from gauntlet.jsonl", "gauntlet.jsonl", ""), right
        assert len(right) <= path.content_region.width or not right
        # the lanes
        panels = list(app.screen.query(GauntletLanePanel))
        assert len(panels) == 2
        for panel in panels:
            for wid in ("#now", "#turns-head", "#turns", "#reps"):
                w = panel.query_one(wid)
                lines = w.visual.plain.split("\n")
                assert all(len(line.rstrip()) <= w.content_region.width and "…" not in line for line in lines), \
                    (panel.lane, wid, lines, w.content_region.width)
            rows = panel.query_one("#turns", Static).visual.plain.split("\n")
            assert all(line.rstrip().endswith(("s ✓", "s ✗", " s")) for line in rows), rows  # the times whole
            assert "TTFT" in panel.query_one("#turns-head", Label).visual.plain
            reps = panel.query_one("#reps", Static).visual.plain.split("\n")
            assert all(line.startswith(("✓", "✗", "3/3")) for line in reps), reps  # no item split over lines
        summary = app.screen.query_one("#g-summary", Label)
        text = summary.visual.plain
        assert text.endswith("tool calls") and "…" not in text
        assert len(textwrap.wrap(text, summary.content_region.width)) <= summary.content_region.height
        await pilot.press("q")


def _plain(markup) -> str:
    from textual.content import Content

    return Content.from_markup(str(markup)).plain


def _results_table_names_its_units(app, name: str) -> None:
    """The bench screen's results table is 46 cells wide at every size: its labels are the short forms
    (`steady span stream`), with no unit anywhere.  The border's title says it: `results · steady, span, stream
    in tok/s`."""
    from lanemon.measure.catalogue import metric
    from lanemon.ui.widgets.bench_table import BenchTable

    table = app.screen.query_one(BenchTable)
    labels = [str(c.label) for c in table.columns.values()]
    title = _plain(table.border_title)
    assert len(title) <= table.size.width - 6 and "…" not in title, title
    shorts = {m.short: m for m in (metric(n) for n in ("steady_tok_s", "aggregate_tok_s", "per_stream_tok_s",
                                                         "cache_hit_tok_s", "prefill_tok_s"))}
    unitless = [lab for lab in labels if lab in shorts and shorts[lab].unit not in lab.split()]
    if name == "decode.jsonl":
        assert unitless[:2] == ["steady", "span"], labels
    for lab in unitless:
        assert f"{lab}" in title.split(" in ")[0] and "in tok/s" in title, (lab, title)


@pytest.mark.parametrize("name,size", [("decode.jsonl", (80, 24)), ("decode.jsonl", (100, 30)),
                                       ("prefill.jsonl", (80, 24)), ("needles.jsonl", (80, 24))])
async def test_bench_charts_say_their_titles_and_legends_whole(name, size):
    """At 80x24 the bench charts' borders read `aggregate decode v…`, `━A ━B steady •• sp…` and
    `per-stream decode …`: each title takes its fullest form that fits the border whole; a legend that does not
    fit the border goes, whole items on whole lines, to a key line over the plot.  At 80x24 the decode and
    prefill replays' results table (``_results_table_names_its_units``) and prefill's header
    (``_path_whole``) are checked in the same replay."""
    from pathlib import Path

    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app
    from lanemon.ui.widgets.bench_chart import BenchChart
    from test_replay_snapshots import played_out

    rec = Path(__file__).resolve().parent.parent / "sample_sessions" / name
    app = make_app(ReplaySession(rec, speed=float("inf")))
    async with app.run_test(size=size) as pilot:
        if name == "prefill.jsonl":  # the bench screen's header, before played_out redraws anything by force
            await _finished(pilot)
            _path_whole(app, name)
        await played_out(pilot)
        if size == (80, 24) and name in ("decode.jsonl", "prefill.jsonl"):
            _results_table_names_its_units(app, name)  # the same replay: it was played again for the table
        await pilot.pause(0.1)
        charts = [c for c in app.screen.query(BenchChart) if c.display and c.region.area]
        assert charts
        for chart in charts:
            room = chart.size.width - 6  # the corners and a blank either side of a border label
            title, subtitle = _plain(chart.border_title), _plain(chart.border_subtitle)
            assert title and "…" not in title and len(title) <= room, (title, room)
            assert len(subtitle) <= room, (subtitle, room)
            if chart.kind != "lines":
                continue
            key = chart.query_one("#key")
            items = [p for _, p in chart.legend]
            assert len(items) >= 2  # the lanes, what their lines are, the span's points
            shown = subtitle
            if key.display:  # the legend did not fit the border: the rest, each item whole, on the key's lines
                lines = key.visual.plain.split("\n")
                assert all(len(line) <= key.content_region.width for line in lines), lines
                assert len(lines) == 1 or size == (80, 24), lines  # one line at 100x30
                shown = " ".join(x for x in [subtitle] + lines if x)
                assert key.region.bottom <= chart.query_one("#plot").region.y  # over the plot, not on it
                assert subtitle, "the border holds the leading items that fit it"
            assert shown == " ".join(items), (subtitle, items)
        await pilot.press("q")


def test_units_note_names_the_units_short_labels_drop():
    """The model says which shown labels lost their unit to a short form (the CLI prints it under a narrow
    table, the bench screen in its border); times carry their unit in their cells and are not named."""
    from lanemon.reports.tables import decode_table

    level = {"steady_tok_s": 1076.0, "aggregate_tok_s": 1063.0, "ttft_p50_s": 0.038, "ttft_p90_s": 0.05,
             "per_stream_tok_s_p50": 500.0, "errors": 0, "requests": 4}
    from lanemon.results.common import as_result
    from lanemon.results.decode import DecodeResult
    from typed_cells import full_result

    result = as_result(full_result({"bench": "decode", "lanes": {"A": {"levels": {"1": dict(level), "2": dict(level)}},
                                                                 "B": {"levels": {"1": dict(level), "2": dict(level)}}}}),
                       DecodeResult)
    t = decode_table(result, ["A", "B"])
    assert t.units_note() == ""  # full labels: `steady tok/s`
    narrow = t.fit(46, pad=2)
    assert "steady" in narrow.labels() and "steady tok/s" not in narrow.labels()
    assert narrow.units_note().startswith("steady, span") and narrow.units_note().endswith(" in tok/s")
    assert "TTFT" not in narrow.units_note()


def test_the_turn_rows_drop_columns_whole_and_say_which():
    from types import SimpleNamespace

    from lanemon.ui.widgets.gauntlet_lane import turn_rows

    turns = [SimpleNamespace(turn=20, prompt_tokens=3692, cached_tokens=512, ok=True, ttft_s=1.42, decode_s=12.17)]
    for width, hidden in ((60, []), (40, ["cached"]), (34, ["prompt", "cached"]), (26, ["prompt", "cached"])):
        head, rows, gone = turn_rows(turns, 14.0, width)
        assert gone == hidden, (width, gone)
        from lanemon.ui.widgets.status_bar import markup_cells

        assert markup_cells(head) <= width and all(markup_cells(r) <= width for r in rows), (width, head, rows)
        assert rows[0].endswith("1.42 + 12.17 s [$success]✓[/]")
        assert ("3,692" in rows[0]) == ("prompt" not in hidden) and ("512" in rows[0]) == ("cached" not in hidden)
    # 100x30's 44-cell card: times of one digit leave a 6-cell bar beside both columns (a fixed 18-cell time
    # column for `12.34 + 29.68 s ✓` dropped `cached` there, the column that shows lane B's prefix cache)
    short = [SimpleNamespace(turn=8, prompt_tokens=2675, cached_tokens=512, ok=True, ttft_s=1.04, decode_s=0.34)]
    head, rows, gone = turn_rows(short, 14.0, 44)
    assert gone == [] and "cached" in head and rows[0].endswith("1.04 + 0.34 s [$success]✓[/]"), (head, rows)


async def test_the_race_header_leaves_items_out_whole_at_80x24():
    """The race replay at 80x24 read `coding-02 (coding) · completions · max 256 tok · at…` and the prompt
    `… get and p…`: the start time goes whole, and the prompt's preview ends after a whole word."""
    from pathlib import Path

    from lanemon.sessions.sources import ReplaySession
    from lanemon.ui.app import make_app

    rec = Path(__file__).resolve().parent.parent / "sample_sessions" / "races.jsonl"
    app = make_app(ReplaySession(rec, speed=float("inf")))
    async with app.run_test(size=(80, 24)) as pilot:
        await _finished(pilot)
        assert app.screen_name() == "race"
        _path_whole(app, "races.jsonl")  # the finished replay's header names its file whole (test above)
        info, prompt = app.screen.query_one("#race-info"), app.screen.query_one("#race-prompt-text")
        text = info.visual.plain
        assert text.startswith("coding-02") and "…" not in text and len(text) <= info.content_region.width, text
        assert " at" not in text or text.split(" at ")[1].startswith("+")
        shown = prompt.visual.plain
        assert len(shown) <= prompt.content_region.width, shown
        whole = " ".join(app.screen.query_one("RaceHeader")._prompt.split())
        if shown.endswith("…"):
            kept = shown[len("prompt "):-1]
            assert whole.startswith(kept) and whole[len(kept)] == " ", (kept, whole)
        # the footer: `PgUp Prev race  PgDn Next race` cut `←→ ±10s` to `←`; the race keys are one group now
        # and the markers' [] go before seeking does
        from textual.widgets._footer import FooterKey

        footer = app.screen.query_one("Footer")
        from test_starved_notice import _wait

        await _wait(pilot, lambda: any(k.display for k in footer.query(FooterKey)))
        keys = [k for k in footer.query(FooterKey) if k.display]
        shown = {k.key_display for k in keys}
        assert {"←", "→", "PgUp", "PgDn", "q"} <= shown, shown
        palette = [k for k in keys if "-command-palette" in k.classes]
        right = max(k.region.right for k in keys if "-command-palette" not in k.classes)
        assert palette and right <= palette[0].region.x, (right, palette[0].region.x)
        await pilot.press("q")


async def test_the_live_race_screen_says_its_keys_whole_at_80x24(tmp_path, monkeypatch):
    """The demo's race screen at 80x24: the footer read `… PgUp PgDn races  q Quit  p Pause` (`Pause/resume` cut)
    and the prompt box `… · Enter alone races` (the prompt it races cut off).  The footer leaves the race
    browsing keys out whole first; the box says the fullest form of its hint that fits."""
    from textual.widgets import Input
    from textual.widgets._footer import FooterKey

    from lanemon.cli.common import demo_lanes
    from lanemon.config import ProbeConfig
    from lanemon.sessions.sources import LiveSession
    from lanemon.ui.app import make_app
    from lanemon.ui.screens.race import RaceScreen
    from test_starved_notice import _wait

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    with demo_lanes(0.05) as lanes:
        session = LiveSession(lanes, probe=ProbeConfig(interval=0.5, max_tokens=8), mode="demo")
        app = make_app(session, refresh_hz=5)
        async with app.run_test(size=(80, 24)) as pilot:
            await _wait(pilot, lambda: bool(app.state.lanes), timeout=20)
            await pilot.press("r")
            await _wait(pilot, lambda: isinstance(app.screen, RaceScreen), timeout=10)
            screen = app.screen
            box = screen.query_one("#race-input", Input)
            footer = screen.query_one("Footer")
            await _wait(pilot, lambda: {"q", "p"} <= {k.key for k in footer.query(FooterKey) if k.display},
                        timeout=10)
            await _wait(pilot, lambda: len(box.placeholder) <= box.content_region.width, timeout=5)
            assert "Enter alone races" in box.placeholder and box.placeholder.endswith(")"), box.placeholder
            keys = [k for k in footer.query(FooterKey) if k.display]
            palette = [k for k in keys if "-command-palette" in k.classes]
            right = max(k.region.right for k in keys if "-command-palette" not in k.classes)
            assert palette and right <= palette[0].region.x, [(k.key_display, k.description) for k in keys]
            assert {"/", "⏎", "q", "p"} <= {k.key_display for k in keys}
            await pilot.press("q")
        session.close()
