"""Bench TUI: pilot tests and a snapshot, driven by a scripted bench run (fixed events, fixed results)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from lanemon.bus import EventBus
from lanemon import events as schema
from lanemon.events import Event
from lanemon.ui.bench import BenchApp, BenchTracker, make_bench_app
from lanemon.ui.screens.bench import BenchScreen
from lanemon.ui.widgets.bench_chart import BenchChart
from lanemon.ui.widgets.bench_table import BenchTable

MS = 1_000_000
SNAP_PATH = Path("recordings/20261018-090000-bench-decode.jsonl")
AGG = {"A": {1: 118.0, 2: 190.0, 3: 212.0}, "B": {1: 104.0, 2: 175.0, 3: 205.0}}
CATS = {"A": {"coding": 148.0, "prose": 88.0}, "B": {"coding": 134.0, "prose": 74.0}}
PREFILL = {"A": {2000: 2420.0, 12000: 2600.0}, "B": {2000: 3654.0, 12000: 4160.0}}


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def plain(widget: Static) -> str:
    return widget.visual.plain  # type: ignore[union-attr]


class ScriptedBench:
    """A bench run that publishes a fixed script of events; ``results()`` covers the cells ended so far."""

    def __init__(self, kind: str = "decode", *, levels=(1, 2, 3), lengths=(2000, 12000), tokens: int = 40,
                 delay: float = 0.0, hold: bool = False, error_on: tuple[str, Any] | None = ("B", 2)) -> None:
        self.mode = "bench"
        self.kind = kind
        self.bus = EventBus()
        self.lanes = [{"name": "A", "url": "http://127.0.0.1:8001/v1", "model": "tensorfold-exl3"},
                      {"name": "B", "url": "http://127.0.0.1:8888/v1", "model": "sglang-native"}]
        self.recording_path = SNAP_PATH
        self.paused = False
        self.speed = None
        self.finished = False
        self.interrupted = False
        self.stopped = False
        key = "level" if kind == "decode" else "length"
        cells = levels if kind == "decode" else lengths
        self.plan = [{"lane": lane, key: c, "rep": 1} for c in cells for lane in ("A", "B")]
        self.cells_done: list[dict[str, Any]] = []
        self.events: list[Event] = []
        self.results_calls = 0
        self.tokens = tokens
        self.delay = delay
        self.hold = hold
        self.error_on = error_on
        self._stop: asyncio.Event | None = None

    def script(self) -> list[tuple[Event, dict | None]]:
        """(event, cell finished by this event or None)."""
        out: list[tuple[Event, dict | None]] = []
        t = 0
        out.append((Event(t, schema.MARK, None, None, {"label": f"{self.kind} start", "bench": self.kind,
                                                       "phase": "start", "config": {"reps": 1}}), None))
        for i, cell in enumerate(self.plan):
            lane = cell["lane"]
            key = "level" if "level" in cell else "length"
            t += 10 * MS
            out.append((Event(t, schema.MARK, lane, None, {"label": "cell", "bench": self.kind, "phase": "start",
                                                           key: cell[key], "rep": 1}), None))
            req = f"{lane}-{i}"
            t += 1 * MS
            out.append((Event(t, schema.REQUEST, lane, req, {"endpoint": "completions", "bench": self.kind}), None))
            if self.error_on == (lane, cell[key]):
                t += 50 * MS
                out.append((Event(t, schema.ERROR, lane, req, {"cls": "http", "status": 503,
                                                               "message": "503 Service Unavailable"}), None))
            else:
                t += 170 * MS
                for _ in range(self.tokens):
                    t += 5 * MS
                    out.append((Event(t, schema.TOKEN, lane, req, {"text": "x"}), None))
                out.append((Event(t, schema.USAGE, lane, req, {"prompt_tokens": 20, "completion_tokens": self.tokens}),
                            None))
                out.append((Event(t, schema.DONE, lane, req, {"finish_reason": "length"}), None))
            t += 1 * MS
            out.append((Event(t, schema.MARK, lane, None, {"label": "cell", "bench": self.kind, "phase": "end",
                                                           key: cell[key], "rep": 1}), cell))
        out.append((Event(t + MS, schema.MARK, None, None, {"label": "end", "bench": self.kind, "phase": "end"}), None))
        return out

    async def run(self) -> None:
        self._stop = asyncio.Event()
        try:
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
            self.finished = True
            if self.hold and not self.stopped:
                await self._stop.wait()
        finally:
            pass

    def results(self) -> dict[str, Any]:
        self.results_calls += 1
        lanes: dict[str, Any] = {}
        for cell in self.cells_done:
            lane = cell["lane"]
            if self.kind == "decode":
                lvl = cell["level"]
                entry = lanes.setdefault(lane, {"levels": {}, "categories": {}})
                err = int(self.error_on == (lane, lvl))
                entry["levels"][str(lvl)] = {
                    "aggregate_tok_s": None if err else AGG[lane][lvl], "ttft_p50_s": None if err else 0.17,
                    "per_stream_tok_s_p50": None if err else AGG[lane][lvl] / lvl, "errors": err, "requests": 1,
                    "unstable": False}
                if lvl == 1:
                    entry["categories"] = {c: {"per_stream_tok_s": v, "requests": 1, "errors": 0}
                                           for c, v in CATS[lane].items()}
            else:
                length = cell["length"]
                entry = lanes.setdefault(lane, {"lengths": {}})
                v = PREFILL[lane][length]
                entry["lengths"][str(length)] = {"prompt_tokens": length, "prefill_tok_s": v, "ttft_s": length / v,
                                                 "cache_hit_tok_s": 12542.0 if (lane, length) == ("B", 2000) else None,
                                                 "found": True, "unstable": False, "error": None}
        return {"bench": self.kind, "lanes": lanes, "interrupted": self.interrupted}

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


async def settle(app: BenchApp, pilot) -> None:
    await app.workers.wait_for_complete()
    await pilot.pause()
    app.redraw()
    await pilot.pause()


async def test_decode_progress_charts_table_and_errors():
    run = ScriptedBench("decode", tokens=300)
    app = make_bench_app(run)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, BenchScreen)
        info = plain(screen.query_one("#info"))
        assert "6/6 cells" in info and "finished" in info
        progress = plain(screen.query_one("#progress")).splitlines()
        assert progress[0].startswith("A ") and "3/3" in progress[0]
        assert progress[1].startswith("B ") and "3/3" in progress[1]
        main = screen.query_one("#chart-main", BenchChart)
        assert main.kind == "lines"
        assert main.series == {"A": [(1.0, 118.0), (2.0, 190.0), (3.0, 212.0)], "B": [(1.0, 104.0), (3.0, 205.0)]}
        side = screen.query_one("#chart-side", BenchChart)
        assert side.series == {"A": [("coding", 148.0), ("prose", 88.0)], "B": [("coding", 134.0), ("prose", 74.0)]}
        table = screen.query_one(BenchTable)
        assert table.row_count == 6
        assert [str(c) for c in table.get_row_at(0)][:3] == ["A", "C1", "118"]
        log = plain(screen.query_one("#log")).splitlines()
        assert len(log) == 1 and "B C2 r1 http 503 Service Unavailable" in log[0]
        # 1,500 token events, 6 cell ends: results are recomputed per cell end at most, never per token
        assert run.results_calls <= 6 + 3
        assert app.results_computed == run.results_calls


async def test_progress_while_running_and_q_stops_the_bench():
    run = ScriptedBench("decode", delay=0.25)
    app = make_bench_app(run, refresh_hz=20)
    async with app.run_test(size=(140, 42)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if run.cells_done:
                break
        app.redraw()
        await pilot.pause()
        info = plain(app.screen.query_one("#info"))
        done = int(info.split("/6 cells")[0].split()[-1])
        assert 1 <= done < 6 and "finished" not in info
        assert app.screen.query_one("#chart-main", BenchChart).series  # the first cell reached the chart
        await pilot.press("q")
        await pilot.pause()
    assert run.stopped and run.interrupted
    assert not run.finished
    assert app.return_code == 0


async def test_prefill_bars_mark_cache_hits():
    run = ScriptedBench("prefill", error_on=None)
    app = make_bench_app(run)
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(app, pilot)
        main = app.screen.query_one("#chart-main", BenchChart)
        assert main.kind == "bars"
        assert main.series["B"] == [("2,000", 3654.0), ("12K", 4160.0)]
        assert main.marks == [("B cache hit 12,542", "2,000", 3654.0)]
        assert not app.screen.query_one("#chart-side", BenchChart).display
        rows = [[str(c) for c in app.screen.query_one(BenchTable).get_row_at(i)] for i in range(4)]
        assert ["B", "2,000", "3,654", "547 ms", "hit 12,542", "0"] in rows


def test_tracker_counts_cells_and_ignores_other_benches():
    tr = BenchTracker("decode")
    tr.apply(Event(0, schema.MARK, None, None, {"bench": "decode", "phase": "start", "config": {}}))
    tr.apply(Event(1, schema.MARK, "A", None, {"bench": "decode", "phase": "start", "level": 4, "rep": 2}))
    assert tr.current == {"A": "C4 r2"}
    tr.apply(Event(2, schema.MARK, None, None, {"bench": "race", "phase": "end", "race": 1}))
    assert tr.cells_version == 0
    tr.apply(Event(5, schema.MARK, "A", None, {"bench": "decode", "phase": "end", "level": 4, "rep": 2}))
    assert tr.cells_version == 1 and tr.done_by_lane["A"] == 1 and tr.current == {}
    assert tr.elapsed_ns == 5


def test_unknown_theme_is_a_usage_error():
    from lanemon.cli.common import UsageError
    from lanemon.ui.bench import run_bench_app

    with pytest.raises(UsageError, match="unknown theme"):
        run_bench_app(ScriptedBench(), theme="no-such-theme")


def test_snapshot_bench_decode(snap_compare):
    async def before(pilot):
        await settle(pilot.app, pilot)

    app = make_bench_app(ScriptedBench("decode"))
    assert snap_compare(app, terminal_size=(130, 40), run_before=before)


async def test_real_bench_run_against_the_simulated_lanes():
    bench = pytest.importorskip("lanemon.workloads.bench.run")
    from lanemon.cli.common import demo_lanes

    with demo_lanes(0.05) as lanes:
        run = bench.BenchRun("decode", lanes, bench.BenchOptions(levels=[1, 2], categories=["coding", "prose"],
                                                                 seed=1, max_tokens=32))
        app = make_bench_app(run, refresh_hz=20)
        async with app.run_test(size=(140, 42)) as pilot:
            await settle(app, pilot)
            assert run.finished
            total = len(run.plan)
            info = plain(app.screen.query_one("#info"))
            assert f"{total}/{total} cells" in info and "finished" in info
            for line in plain(app.screen.query_one("#progress")).splitlines():
                assert f"{total // 2}/{total // 2}" in line
            main = app.screen.query_one("#chart-main", BenchChart)
            results = run.results()
            assert set(main.series) == {"A", "B"}
            assert main.series["A"] == [(float(k), v["aggregate_tok_s"])
                                        for k, v in results["lanes"]["A"]["levels"].items()]
            cats = results["lanes"]["B"]["categories"]
            assert dict(app.screen.query_one("#chart-side", BenchChart).series["B"]) == {
                c: cats[c]["per_stream_tok_s"] for c in cats}
            assert app.screen.query_one(BenchTable).row_count == 4
            assert app.results_computed <= total + 3
