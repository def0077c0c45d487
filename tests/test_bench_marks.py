"""A bench's marks, typed (workloads/bench/marks.py): the plan and config a run writes, and what a recording's marks
read back as -- untrusted, so a value of the wrong type is left out, never a crash (issue 37)."""

from __future__ import annotations

import msgspec
from msgspec import UNSET

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.bench import BenchTracker, planned_cells
from lanemon.results.common import BenchConfig, LoadConfig
from lanemon.workloads.bench import decode, load, prefill, sweep
from lanemon.workloads.bench.load import LoadOptions
from lanemon.workloads.bench.marks import CellEnd, CellStart, PlannedCell, read_marks
from lanemon.workloads.bench.run import BenchOptions, not_run

LANES = ["A", "B"]


def _mark(t, lane=None, **data):
    return Event(t, schema.MARK, lane, None, {"bench": "prefill", **data})


def test_the_start_mark_config_keeps_the_keys_the_recordings_have_always_had():
    """The config is a BenchConfig now; encoded, it is the JSON object the start mark always carried: the same keys,
    in the same order, nothing left at UNSET printed (docs/JSON.md)."""
    opts = BenchOptions(reps=2, seed=7, time_scale=0.05, slo={"ttft": 1.5})
    keys = {kind: list(msgspec.to_builtins(opts.config(kind, LANES))) for kind in ("decode", "prefill", "needles")}
    head = ["lanes", "reps", "parallel_lanes", "endpoint", "temperature"]
    tail = ["seed", "time_scale", "slo"]
    assert keys["decode"] == head + ["levels", "categories", "prompt_set", "max_tokens_cap", "per_category"] + tail
    assert keys["prefill"] == head + ["lengths", "cache_check"] + tail
    assert keys["needles"] == head + ["lengths"] + tail
    cfg = msgspec.to_builtins(BenchOptions(load=LoadOptions(rate=2.0, requests=4), seed=3).config("load", LANES))
    assert list(cfg) == head + ["prompt_set", "max_tokens_cap", "load", "workers", "workers_backend", "seed",
                                "seed_drawn"]
    assert cfg["lanes"] == LANES and cfg["reps"] == 1 and cfg["seed"] == 3 and cfg["seed_drawn"] is False
    assert cfg["load"] == {"arrival": "poisson", "rate": 2.0, "requests": 4, "duration": None, "warmup": 0.0,
                           "cooldown": 0.0, "input_len": None, "output_len": None, "shared_prefix": 0,
                           "ignore_eos": False, "trace": None, "turns": 1}
    assert cfg["prompt_set"]["prompts"] > 0 and set(cfg["prompt_set"]) == {"name", "version", "source", "prompts"}


def test_every_bench_plans_typed_cells_whose_weights_the_start_mark_records():
    opts = BenchOptions(levels=[1, 2], reps=2, lengths=[1000, 4000], load=LoadOptions(rate=1.0, requests=3), seed=1)
    for module in (decode, prefill, load, sweep):
        plan = module.plan(LANES, opts)
        assert plan and all(isinstance(c, PlannedCell) for c in plan)
        assert [c.lane for c in plan] == sorted(c.lane for c in plan)  # lane-major
        assert all(isinstance(c.weight, float) and c.weight > 0 for c in plan)
    cells = prefill.plan(["A"], opts)
    assert [(c.cell, c.part, c.length, c.rep) for c in cells] == [
        ("A/calibrate", "calibrate", None, 0), ("A/1000/r0", "length", 1000, 0), ("A/1000/r1", "length", 1000, 1),
        ("A/4000/r0", "length", 4000, 0), ("A/4000/r1", "length", 4000, 1)]
    assert cells[1].weight == 2.0 and cells[2].weight == 1.0  # the first rep's cache check sends the prompt twice


def _hostile_run() -> list[Event]:
    return [
        Event(1, schema.LANE, "A", None, {"name": "A"}),
        _mark(2, label="bench", phase="start",
              config={"lanes": ["A", "B"], "reps": "two", "lengths": [2000], "slo": {"ttft": "fast"}, "extra": 1},
              plan=[{"lane": "A", "cell": "A/2000/r0"}, {"lane": "A"}, "junk", {"cell": 5},
                    {"lane": "B", "cell": "B/2000/r0", "weight": "heavy"}]),
        _mark(3, "A", label="cell", phase="start", cell="A/calibrate", part="calibrate", rep=0),
        _mark(4, "A", label="cell", phase="end", cell="A/calibrate", part="calibrate", rep=0, tokens_per_char=0.25,
              max_context="lots", error=None),
        _mark(5, "A", label="cell", phase="start", cell="A/2000/r0", part="length", length="2k", rep=0, extra=[1]),
        _mark(6, label="cell", phase="start", cell=None),  # no cell id: not a cell
    ]


def test_a_recordings_marks_read_back_typed_and_a_wrong_value_is_left_out():
    marks = read_marks(_hostile_run(), "prefill")
    assert isinstance(marks.config, BenchConfig)
    assert marks.config.lanes == ["A", "B"] and marks.config.lengths == [2000]
    assert marks.config.reps is UNSET and marks.config.slo is UNSET  # wrong types: left out, not a crash
    assert marks.lanes == ["A", "B"] and marks.started and not marks.ended
    assert [p.cell for p in marks.plan] == ["A/2000/r0", "B/2000/r0"]  # entries without a string cell dropped
    cal = marks.cells["A/calibrate"]
    assert cal.start == CellStart(cell="A/calibrate", lane="A", part="calibrate", rep=0)
    assert cal.end == CellEnd(tokens_per_char=0.25)  # max_context "lots": left out
    cell = marks.cells["A/2000/r0"]
    assert cell.start.length is None and cell.start.part == "length" and cell.end is None
    assert marks.finished("A/calibrate") and not marks.finished("A/2000/r0") and list(marks.cells) == [
        "A/calibrate", "A/2000/r0"]
    # ``cut`` publishes the open cell's keys as recorded (free-form: its own keys, then the lane)
    assert marks.open_cells() == [{"cell": "A/2000/r0", "part": "length", "length": "2k", "rep": 0, "extra": [1],
                                   "lane": "A"}]
    nr = not_run(marks)
    assert (nr.planned, nr.finished, nr.cut, nr.cells, nr.ranges, nr.lanes) == (
        2, 1, ["A/2000/r0"], ["B/2000/r0"], [[2, 2]], ["B"])


def test_the_bench_screen_plans_its_cells_from_the_typed_config():
    assert planned_cells("decode", BenchConfig(reps=2, levels=[1, 2, 4], categories=["a", "b"])) == 10
    assert planned_cells("decode", BenchConfig(reps=2, levels=[1, 2, 4], categories=["a", "b"],
                                               per_category=False)) == 6
    assert planned_cells("prefill", BenchConfig(reps=3, lengths=[1000, 2000])) == 7
    assert planned_cells("prefill", BenchConfig(lengths=[1000])) is None  # reps unsaid
    tracker = BenchTracker("prefill")
    for ev in _hostile_run():
        tracker.apply(ev)
    assert tracker.config.lanes == ["A", "B"] and tracker.lanes == ["A", "B"]
    assert tracker.cells_total() == 0  # reps was not a number: the plan size is not known, not guessed
    assert tracker.current == {"A": "2k tok r0"}  # the label of a length it could not read: as recorded


def test_load_config_is_typed_and_says_every_key():
    cfg = LoadOptions(rate=1.0, requests=2).config()
    assert isinstance(cfg, LoadConfig) and cfg.trace is None and cfg.turns == 1
