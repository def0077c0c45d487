"""Bench TUI: pilot tests and a snapshot, driven by a scripted bench run (fixed events, fixed results)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from lanemon.public_lane import PublicLane
from lanemon.bus import EventBus
from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.bench import BenchResults, BenchTracker
from lanemon.ui.app import LanemonApp, make_app
from lanemon.ui.screens.bench import BenchScreen
from lanemon.ui.widgets.bench_chart import BenchChart
from lanemon.ui.widgets.bench_table import BenchTable
from lanemon.results.decode import DecodeResult
from lanemon.workloads.bench.decode import decode_results
from lanemon.workloads.bench.prefill import prefill_results

MS = 1_000_000
SNAP_PATH = Path("recordings/20261018-090000-bench-decode.jsonl")
# decode: (TTFT ms, ms per token) per lane; prefill: prompt tok/s per lane (B's repeat of 2,000 hits the cache)
DECODE = {"A": (170, 6.8), "B": (220, 7.5)}
PREFILL = {"A": 2600.0, "B": 3650.0}
CATEGORIES = ("coding", "prose")


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def plain(widget: Static) -> str:
    return widget.visual.plain  # type: ignore[union-attr]


class ScriptedBench:
    """A bench run that publishes a fixed, well-formed script of events (marks and request meta as
    ``BenchRun`` writes them), so the workload's own results functions apply to it."""

    def __init__(self, kind: str = "decode", *, levels=(1, 2, 3), lengths=(2000, 12000), tokens: int = 40,
                 delay: float = 0.0, hold: bool = False, error_on: tuple[str, Any] | None = ("B", 2),
                 stagger_ms: float = 0.0, slowdown: dict[str, float] | None = None,
                 starved: tuple[str, Any] | None = None, gate_after: int | None = None) -> None:
        """``stagger_ms``: a level's streams are sent that far apart (a ramp-up and a drain, so the
        steady-state window is shorter than first send -> last end); ``slowdown``: per lane, how much
        slower each stream gets per extra stream (default 0.12); ``starved``: (lane, level, category or
        length) of a cell during which lanemon reports a starved ``client_load`` window (it is unreliable);
        ``gate_after``: after that many cells the run waits until it is stopped (a run still going when the
        test presses a key, however slow this machine is)."""
        self.mode = "bench"
        self.kind = kind
        self.bus = EventBus()
        self.lanes = [PublicLane("A", "http://127.0.0.1:8001/v1", "tensorfold-exl3"),
                      PublicLane("B", "http://127.0.0.1:8888/v1", "sglang-native")]
        self.recording_path = SNAP_PATH
        self.paused = False
        self.speed = None
        self.finished = False
        self.interrupted = False
        self.stopped = False
        self.levels, self.lengths = list(levels), list(lengths)
        self.cells_done: list[dict[str, Any]] = []
        self.events: list[Event] = []
        self.results_calls = 0
        self.tokens = tokens
        self.delay = delay
        self.hold = hold
        self.error_on = error_on
        self.stagger_ms = stagger_ms
        self.slowdown = slowdown or {}
        self.starved = starved
        self.gate_after = gate_after
        self._stop: asyncio.Event | None = None

    def config(self) -> dict[str, Any]:
        if self.kind == "decode":
            return {"lanes": ["A", "B"], "reps": 1, "levels": self.levels, "categories": list(CATEGORIES),
                    "per_category": True}
        return {"lanes": ["A", "B"], "reps": 1, "lengths": self.lengths, "cache_check": True}

    def cells(self, lane: str) -> list[dict[str, Any]]:
        if self.kind == "decode":
            return ([{"cell": f"{lane}/C{lvl}/r0", "part": "level", "level": lvl, "rep": 0} for lvl in self.levels]
                    + [{"cell": f"{lane}/{c}/r0", "part": "category", "category": c, "level": 1, "rep": 0}
                       for c in CATEGORIES])
        return ([{"cell": f"{lane}/calibrate", "part": "calibrate", "rep": 0}]
                + [{"cell": f"{lane}/{n}/r0", "part": "length", "length": n, "rep": 0} for n in self.lengths])

    def _request(self, out, t: int, lane: str, req: str, meta: dict[str, Any], ttft_ms: float, tokens: int,
                 prompt_tokens: int, error: bool = False, slow: float = 1.0) -> int:
        out.append((Event(t, schema.REQUEST, lane, req, {"endpoint": "completions", "bench": self.kind, **meta}), None))
        if error:
            t += 50 * MS
            out.append((Event(t, schema.ERROR, lane, req, {"cls": "http", "status": 503,
                                                           "message": "503 Service Unavailable"}), None))
            return t
        t += int(ttft_ms * MS)
        step = (DECODE[lane][1] if self.kind == "decode" else 5.0) * slow
        for i in range(tokens):
            out.append((Event(t + int(i * step * MS), schema.TOKEN, lane, req, {"text": "x"}), None))
        t += int((tokens - 1) * step * MS)
        out.append((Event(t, schema.USAGE, lane, req, {"prompt_tokens": prompt_tokens, "completion_tokens": tokens}),
                    None))
        out.append((Event(t, schema.DONE, lane, req, {"finish_reason": "length"}), None))
        return t

    def script(self) -> list[tuple[Event, dict | None]]:
        """(event, cell finished by this event or None)."""
        out: list[tuple[Event, dict | None]] = []
        t = 0
        out.append((Event(t, schema.MARK, None, None, {"label": "bench", "bench": self.kind, "phase": "start",
                                                       "config": self.config()}), None))
        n = 0
        for lane in ("A", "B"):
            for cell in self.cells(lane):
                t += 10 * MS
                out.append((Event(t, schema.MARK, lane, None, {"label": "cell", "bench": self.kind, "phase": "start",
                                                               **cell}), None))
                meta = {k: v for k, v in cell.items()}
                cell_t = t
                if self.kind == "decode":  # a level cell runs `level` streams at once, 12% slower each per level
                    err = self.error_on == (lane, cell.get("level")) and cell["part"] == "level"
                    streams = cell["level"] if cell["part"] == "level" else 1
                    ends = []
                    slow = 1 + self.slowdown.get(lane, 0.12) * (streams - 1)
                    for i in range(streams):
                        n += 1
                        sent = t + MS + int(i * self.stagger_ms * MS)
                        ends.append(self._request(out, sent, lane, f"{lane}-{n}", meta, DECODE[lane][0], self.tokens,
                                                  20, error=err, slow=slow))
                    t = max(ends)
                elif cell["part"] == "calibrate":
                    n += 1
                    t = self._request(out, t + MS, lane, f"{lane}-{n}", {**meta, "run": "calibrate", "chars": 4000},
                                      300, 1, 1000)
                else:
                    length = cell["length"]
                    n += 1
                    t = self._request(out, t + MS, lane, f"{lane}-{n}", {**meta, "run": "cold"},
                                      length / PREFILL[lane] * 1000, 1, length)
                    if length == self.lengths[0]:  # the cache check repeats the first length's prompt
                        n += 1
                        hit = lane == "B"
                        ttft = length / (PREFILL[lane] * (4 if hit else 1.05)) * 1000
                        t = self._request(out, t + MS, lane, f"{lane}-{n}", {**meta, "run": "repeat"}, ttft, 1, length)
                key = cell.get("length") if cell["part"] == "length" else (
                    cell.get("category") if cell["part"] == "category" else cell.get("level"))
                if self.starved == (lane, key) and cell["part"] != "calibrate":
                    out.append((Event(t, schema.CLIENT_LOAD, None, None,
                                      {"t0": cell_t + 5 * MS, "lag_ms": 180.0, "lag_mean_ms": 60.0, "samples": 4,
                                       "cpu_pct": 100.0, "bound": True, "threshold_ms": 20.0}), None))
                t += 1 * MS
                out.append((Event(t, schema.MARK, lane, None, {"label": "cell", "bench": self.kind, "phase": "end",
                                                               **cell}), {"lane": lane, **cell}))
        out.append((Event(t + MS, schema.MARK, None, None, {"label": "bench", "bench": self.kind, "phase": "end",
                                                            "interrupted": False, "cut": []}), None))
        return out

    async def run(self) -> None:
        self._stop = asyncio.Event()
        for ev, done in self.script():
            if self.stopped:
                self.interrupted = True
                return
            self.events.append(ev)
            self.bus.publish(ev)
            if done is not None:
                self.cells_done.append(done)
                if self.delay:
                    await asyncio.sleep(self.delay)
                if self.gate_after is not None and len(self.cells_done) >= self.gate_after and not self.stopped:
                    await self._stop.wait()
        self.finished = True
        if self.hold and not self.stopped:
            await self._stop.wait()

    def results(self) -> dict[str, Any]:
        """What the old bench app called on every cell end; the UI must never call it now."""
        self.results_calls += 1
        return {}

    def toggle_pause(self) -> bool:
        return False

    def faster(self) -> None:
        pass

    def slower(self) -> None:
        pass

    def stop(self) -> None:
        self.stopped = True
        if self._stop is not None:
            self._stop.set()


async def settle(app: LanemonApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.redraw()
    await pilot.pause()


def _series_from(results: DecodeResult) -> dict[str, list[tuple[float, float]]]:
    return {lane: [(float(k), v.aggregate_tok_s) for k, v in body.levels.items()
                   if v.aggregate_tok_s is not None] for lane, body in results.lanes.items()}


async def test_decode_progress_charts_table_and_errors():
    run = ScriptedBench("decode", tokens=300)
    app = make_app(run)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        info = plain(screen.query_one("#info"))
        assert "10/10 cells" in info and "finished" in info
        progress = plain(screen.query_one("#progress")).splitlines()
        assert progress[0].startswith("A ") and "5/5" in progress[0]
        assert progress[1].startswith("B ") and "5/5" in progress[1]
        # the screen's figures are the workload's own results over the whole run, folded cell by cell
        reference = decode_results(run.events)
        main = screen.query_one("#chart-main", BenchChart)
        assert main.kind == "lines"
        assert main.series == _series_from(reference)
        assert [x for x, _ in main.series["B"]] == [1.0, 3.0]  # B's C2 errored: no figure
        # 300 tokens / (170 ms TTFT + 299 gaps of 6.8 ms)
        assert main.series["A"][0][1] == pytest.approx(300 / (0.170 + 299 * 0.0068), rel=0.01)
        side = screen.query_one("#chart-side", BenchChart)
        assert side.series == {lane: [(c, body.categories[c].per_stream_tok_s) for c in CATEGORIES]
                               for lane, body in reference.lanes.items()}
        table = screen.query_one(BenchTable)
        assert table.row_count == 6
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(6)]
        # level-major as the CLI prints it: steady before span, ▲ on the level's leader (A by ~10 %, beyond
        # the 5 % band); B's errored C2 has no figure, so nobody leads there
        assert [r[:2] for r in rows] == [["C1", "A ▲"], ["", "B"], ["C2", "A"], ["", "B"], ["C3", "A ▲"], ["", "B"]]
        assert rows[3][2:4] == ["—", "—"] and rows[3][-1] == "2"
        log = plain(screen.query_one("#log")).splitlines()
        assert len(log) == 2 and all("B C2 r0 http 503 Service Unavailable" in line for line in log)  # both streams
        # 3,000 token events, 10 cell ends: each cell's group is folded once; the run is never asked
        assert run.results_calls == 0
        assert app.bench_results.computed <= 10


def steady_bench(**kw) -> ScriptedBench:
    """A decode ladder whose streams ramp up 400 ms apart (so steady != span), A slowing 25 % per extra stream and
    B 5 %: A leads at C1, C2 is within the noise band, B leads at C3 (B overtakes A between C1 and C3), and
    lanemon is starved while B's C4 runs."""
    return ScriptedBench("decode", levels=(1, 2, 3, 4), tokens=120, error_on=None, stagger_ms=400,
                         slowdown={"A": 0.25, "B": 0.05}, starved=("B", 4), **kw)


async def test_decode_screen_leads_with_the_steady_figure_and_marks_starved_cells():
    from lanemon.workloads.bench.decode import crossover_sentence, level_leads

    run = steady_bench()
    app = make_app(run)
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        reference = decode_results(run.events)
        lanes = reference.lanes
        b4 = lanes["B"].levels["4"]
        assert b4.unreliable and b4.client_bound == 4 and not lanes["A"].levels["4"].unreliable
        a3 = lanes["A"].levels["3"]
        assert a3.steady_tok_s > a3.aggregate_tok_s * 1.05  # the ramp and the drain are left out
        main = screen.query_one("#chart-main", BenchChart)
        # the line is the steady figure; the span is beside it (faded); the starved cell is a "?" off the line
        assert main.series == {"A": [(float(k), c.steady_tok_s) for k, c in lanes["A"].levels.items()],
                               "B": [(float(k), lanes["B"].levels[k].steady_tok_s) for k in ("1", "2", "3")]}
        assert main.ghost["A"] == [(float(k), c.aggregate_tok_s) for k, c in lanes["A"].levels.items()]
        assert main.flagged == {"B": [(4.0, b4.steady_tok_s)]}
        cross = reference.crossover
        assert cross.between == [1, 3] and cross.leader_after == "B"
        assert main.vline == (2.0, "B overtakes A")
        assert "span" in str(main.border_subtitle) and "starved" in str(main.border_subtitle)
        table = screen.query_one(BenchTable)
        assert [str(c.label) for c in table.columns.values()][:4] == ["C", "lane", "steady", "span"]
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        leads = {x.level: x.leader for x in level_leads(lanes, "A", "B")}
        assert leads == {1: "A", 2: "tie", 3: "B", 4: None}
        # ▲ the leader beyond the noise band, = both inside it, nothing where lanemon was starved (not judged)
        assert [r[1] for r in rows] == ["A ▲", "B", "A =", "B =", "A", "B ▲", "A", "B"]
        assert [r[0] for r in rows] == ["C1", "", "C2", "", "C3", "", "C4", ""]
        assert rows[7][2] == f"{b4.steady_tok_s:,.0f}?" and rows[7][3] == f"{b4.aggregate_tok_s:,.0f}?"
        assert rows[4][2] == f"{a3.steady_tok_s:,.0f}" and rows[4][3] == f"{a3.aggregate_tok_s:,.0f}"
        assert "? starved" in str(table.border_subtitle) and "= tie" in str(table.border_subtitle)
        verdict = " ".join(plain(screen.query_one("#verdict")).split())
        c1, c3 = (cross.levels[i].gap * 100 for i in (0, 2))
        # the crossover with the gaps and the noise band it rests on (the same facts as the CLI's sentence)
        assert verdict.startswith(f"B overtakes A between C1 and C3: C1 B {c1:+.1f} %, C3 B {c3:+.1f} % vs A "
                                  "(noise band 5.0 %)")
        assert f"C1 B {c1:+.1f} % vs A" in crossover_sentence(reference)
        assert "starved in 4 requests (1 cell): not judged" in verdict


def test_a_starved_window_reported_after_its_cell_ended_still_marks_it():
    """The load watcher may publish a starved window once the cell's end mark is out: the fold re-opens that
    cell's group, so the screen shows the same unreliable cell as the workload's results."""
    run = steady_bench()
    script = [ev for ev, _ in run.script()]
    load = next(i for i, ev in enumerate(script) if ev.kind == schema.CLIENT_LOAD)
    ev = script.pop(load)
    end = next(i for i, e in enumerate(script) if i >= load and e.kind == schema.MARK and e.data.get("phase") == "end")
    script.insert(end + 1, Event(script[end].t + 1, ev.kind, None, None, ev.data))
    fold = BenchResults("decode")
    for i, e in enumerate(script):
        fold.apply(e)
        if i == end:
            assert not fold.results(in_progress=True).lanes["B"].levels["4"].unreliable  # not yet known
    got = fold.results(in_progress=False)
    assert got.lanes["B"].levels["4"].unreliable
    assert got == decode_results(script)


async def _running(app, pilot, run, timeout=30.0):
    """Until the first cell finished (the script paces its cells 0.25 s apart; a loaded machine may take a
    while to start the app: a fixed 2.5 s was not always enough beside other work)."""
    deadline = time.monotonic() + timeout
    while not run.cells_done:
        assert time.monotonic() < deadline, "no cell finished in time"
        await pilot.pause(0.05)
    app.redraw()
    await pilot.pause()


async def test_progress_while_running_and_q_twice_stops_the_bench():
    run = ScriptedBench("decode", gate_after=1)  # still running when the keys are pressed
    app = make_app(run, refresh_hz=20)
    async with app.run_test(size=(140, 42)) as pilot:
        await _running(app, pilot, run)
        info = plain(app.screen.query_one("#info"))
        done = int(info.split("/10 cells")[0].split()[-1])
        assert 1 <= done < 10 and "finished" not in info
        assert app.screen.query_one("#chart-main", BenchChart).series  # the first cell reached the chart
        await pilot.press("q")  # the first q asks
        await pilot.pause()
        assert not run.stopped and app.is_running
        assert any("Press q again" in str(n.message) for n in app._notifications)
        await pilot.press("q")
        await pilot.pause()
    assert run.stopped and run.interrupted
    assert not run.finished
    assert app.return_code == 130  # as headless: the run was cut


async def test_ctrl_c_stops_a_running_bench_at_once():
    """Textual binds Ctrl-C to a "press q to quit" notice; lanemon's app stops the bench (README: Ctrl-C
    stops cleanly) and exits 130."""
    run = ScriptedBench("decode", gate_after=1)  # still running when the keys are pressed
    app = make_app(run, refresh_hz=20)
    async with app.run_test(size=(140, 42)) as pilot:
        await _running(app, pilot, run)
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert run.stopped and run.interrupted and not run.finished
    assert app.return_code == 130


async def test_q_after_the_bench_finished_quits_at_once_with_0():
    run = ScriptedBench("decode", error_on=None)
    app = make_app(run)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(app, pilot)
        await pilot.press("q")
        await pilot.pause()
    assert run.finished and app.return_code == 0


async def test_prefill_bars_mark_cache_hits():
    run = ScriptedBench("prefill", error_on=None)
    app = make_app(run)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(app, pilot)
        main = app.screen.query_one("#chart-main", BenchChart)
        assert main.kind == "bars"
        reference = prefill_results(run.events)
        b = reference.lanes["B"].lengths
        assert main.series["B"] == [("2,000", b["2000"].prefill_tok_s), ("12K", b["12000"].prefill_tok_s)]
        assert main.series["B"][0][1] == pytest.approx(3650, rel=0.01)
        hit = b["2000"].cache_hit_tok_s
        assert hit == pytest.approx(4 * 3650, rel=0.01)
        assert reference.lanes["A"].lengths["2000"].cache_hit_tok_s is None  # A's repeat was no faster
        assert main.marks == [(f"B cache hit {hit:,.0f} tok/s", "2,000", b["2000"].prefill_tok_s)]  # with its unit
        assert not app.screen.query_one("#chart-side", BenchChart).display
        table = app.screen.query_one(BenchTable)
        labels = [str(c.label) for c in table.columns.values()]
        rows = [dict(zip(labels, (str(c) for c in table.get_row_at(i)))) for i in range(4)]
        assert labels[:5] == ["length", "lane", "tok/s", "TTFT", "hit tok/s"]  # the model (reports/tables.py)
        assert [(r["length"], r["lane"], r["hit tok/s"]) for r in rows] == [
            ("2,000", "A", "—"), ("", "B", f"{hit:,.0f}"), ("12K", "A", "—"), ("", "B", "—")]  # no hit: not measured


async def test_prefill_and_category_cells_run_while_lanemon_was_starved_are_marked():
    """Bars of a cell that ran while lanemon itself was starved are drawn ░ with ?, not as lane speed, and the
    table marks the cell: prefill lengths and decode categories alike."""
    run = ScriptedBench("prefill", error_on=None, starved=("B", 12000))
    app = make_app(run)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(app, pilot)
        b = prefill_results(run.events).lanes["B"].lengths
        assert b["12000"].unreliable and not b["2000"].unreliable
        main = app.screen.query_one("#chart-main", BenchChart)
        assert main.flagged_bars == {("B", "12K")}
        bars = plain(main.query_one("#bars"))
        legend, *lines = bars.splitlines()
        assert "░? lanemon starved" in legend
        [line] = [x for x in lines if "░" in x]
        assert line.split()[0] == "B" and line.rstrip().endswith("tok/s ?") and "█" not in line
        assert lines[lines.index(line) - 1].split()[:2] == ["12K", "A"]  # B's 12K bar, right under A's
        table = app.screen.query_one(BenchTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert [r[2].endswith("?") for r in rows] == [r[:2] == ["", "B"] and i == 3 for i, r in enumerate(rows)]
        assert "? starved" in str(table.border_subtitle)
    run = ScriptedBench("decode", error_on=None, starved=("A", "prose"))
    app = make_app(run)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(app, pilot)
        side = app.screen.query_one("#chart-side", BenchChart)
        assert side.flagged_bars == {("A", "prose")}
        assert decode_results(run.events).lanes["A"].categories["prose"].unreliable


def test_tracker_counts_cells_and_ignores_other_benches():
    tr = BenchTracker("decode")
    tr.apply(Event(0, schema.MARK, None, None, {"bench": "decode", "label": "bench", "phase": "start",
                                                "config": {"lanes": ["A", "B"], "reps": 2, "levels": [1, 4],
                                                           "categories": ["coding"], "per_category": True}}))
    tr.apply(Event(1, schema.MARK, "A", None, {"bench": "decode", "phase": "start", "level": 4, "rep": 2}))
    assert tr.current == {"A": "C4 r2"}
    tr.apply(Event(2, schema.MARK, None, None, {"bench": "race", "phase": "end", "race": 1}))
    assert tr.cells_version == 0
    tr.apply(Event(5, schema.MARK, "A", None, {"bench": "decode", "phase": "end", "level": 4, "rep": 2}))
    assert tr.cells_version == 1 and tr.done_by_lane["A"] == 1 and tr.current == {}
    assert tr.elapsed_ns == 5
    assert tr.cells_total() == 12  # (2 levels + 1 category) x 2 reps x 2 lanes, from the recorded config
    assert tr.progress_rows() == [("A", 1, 6, None), ("B", 0, 6, None)]


def test_results_fold_matches_the_workload_and_costs_per_cell():
    """Fed event by event, the fold gives exactly the workload's results; each cell end recomputes
    only that cell's group (a level, a category, a length), never the history."""
    for kind, ref in (("decode", decode_results), ("prefill", prefill_results)):
        run = ScriptedBench(kind, tokens=50)
        fold = BenchResults(kind)
        ends = 0
        for ev, done in run.script():
            run.events.append(ev)
            fold.apply(ev)
            if done is not None:
                ends += 1
                assert fold.results(in_progress=True).lanes == ref(run.events, in_progress=True).lanes
        assert fold.computed == ends  # one group per ended cell
        assert fold.results(in_progress=False) == ref(run.events)
        # snapshot / restore (replay seeks) give the same results again
        saved = fold.snapshot()
        fold.restore(saved)
        assert fold.results(in_progress=False) == ref(run.events)


def test_unknown_theme_is_a_usage_error():
    from lanemon.cli.common import UsageError
    from lanemon.cli.launch import run_screen

    with pytest.raises(UsageError, match="unknown theme"):
        run_screen(ScriptedBench(), theme="no-such-theme")


def test_snapshot_bench_decode(snap_compare):
    async def before(pilot):
        await settle(pilot.app, pilot)

    app = make_app(ScriptedBench("decode"))
    assert snap_compare(app, terminal_size=(130, 40), run_before=before)


async def test_real_bench_run_against_the_simulated_lanes():
    bench = pytest.importorskip("lanemon.workloads.bench.run")
    from lanemon.cli.common import demo_lanes

    with demo_lanes(0.05) as lanes:
        run = bench.BenchRun("decode", lanes, bench.BenchOptions(levels=[1, 2], categories=["coding", "prose"],
                                                                 seed=1, max_tokens=32))
        app = make_app(run, refresh_hz=20)
        async with app.run_test(size=(140, 42)) as pilot:
            await settle(app, pilot)
            assert run.finished
            total = len(run.plan)
            info = plain(app.screen.query_one("#info"))
            assert f"{total}/{total} cells" in info and "finished" in info
            # the lanes are lanemon's simulator (their /models said so): the header says it
            assert plain(app.screen.query_one("#kind")) == "BENCH DECODE · SIM"
            for line in plain(app.screen.query_one("#progress")).splitlines():
                assert f"{total // 2}/{total // 2}" in line
            main = app.screen.query_one("#chart-main", BenchChart)
            results = run.results()
            assert set(main.series) == {"A", "B"}
            levels = results.lanes["A"].levels
            # the steady figure on the line; a level run while lanemon was starved (likely beside CPU hogs) is a
            # "?" mark instead, never a point of the line
            assert main.series["A"] == [(float(k), v.steady_tok_s) for k, v in levels.items() if not v.unreliable]
            assert main.flagged.get("A", []) == [(float(k), v.steady_tok_s or v.aggregate_tok_s)
                                                 for k, v in levels.items() if v.unreliable]
            cats = results.lanes["B"].categories
            assert dict(app.screen.query_one("#chart-side", BenchChart).series["B"]) == {
                c: cats[c].per_stream_tok_s for c in cats}
            assert app.screen.query_one(BenchTable).row_count == 4
            # one recompute per cell, plus the cells a starved window reported after their end re-opens
            starved = sum(1 for ev in run.events if ev.kind == schema.CLIENT_LOAD and ev.data.get("bound"))
            assert app.bench_results.computed <= total + 2 * starved


def test_categories_keep_the_plans_order_however_the_cell_ends_were_batched():
    """The bars panel showed decode.jsonl's categories in a different order from run to run (its replay
    snapshot was left out for it): the fold merged each category as its group was recomputed, so the order
    followed which redraw saw which cell end.  Now the plan's order, as decode_results gives it."""
    import random

    _, events, _ = __import__("lanemon.recording.reader", fromlist=["read_events"]).read_events(
        Path(__file__).resolve().parent.parent / "sample_sessions" / "decode.jsonl")
    want = decode_results(events, in_progress=False)
    orders = set()
    for seed in range(3):
        rng = random.Random(seed)
        fold = BenchResults("decode")
        for ev in events:
            fold.apply(ev)
            if ev.kind == schema.MARK and rng.random() < 0.5:  # a redraw after some cell ends, not others
                fold.results()
        got = fold.results(in_progress=False)
        for lane in want.lanes:
            assert list(got.lanes[lane].categories) == list(want.lanes[lane].categories)
        orders.add(tuple(got.lanes["A"].categories))
    assert len(orders) == 1
