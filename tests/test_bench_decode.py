"""Decode ladder against the simulated lanes: lanemon recovers the write-up's Figure 2 and 3.

Rates are measured at --time-scale X and scaled back to real time (x X);
TTFTs divided by X.  Tolerances: +-12 % on aggregates (the drain and client
overhead at 20x speed on two shared cores), +-10 % on per-stream rates,
+-0.02 s on scaled TTFT.
"""

from __future__ import annotations

import asyncio

import pytest
from conftest import sim_pair

from lanemon.config import LaneConfig
from lanemon.recording.reader import Recording
from lanemon.recording.writer import Recorder, make_header
from lanemon.workloads.bench.run import BenchOptions, BenchRun
from lanemon.workloads.bench.decode import crossover_sentence, decode_results

FAST = 0.05


def lanes_of(sims):
    return [LaneConfig("A", sims[0].url), LaneConfig("B", sims[1].url)]


def run_bench(lanes, **kw):
    run = BenchRun("decode", lanes, BenchOptions(**kw))
    asyncio.run(run.run())
    assert run.finished and not run.interrupted
    return run


@pytest.mark.slow
def test_ladder_shape_crossover_and_c6(fast_sims, tmp_path):
    rec = Recorder(tmp_path / "decode.jsonl", make_header("bench-decode", []))
    run = BenchRun("decode", lanes_of(fast_sims), BenchOptions(levels=[1, 2, 3, 4, 5, 6], per_category=False),
                   recorder=rec)
    asyncio.run(run.run())
    rec.close()
    res = run.results()
    a, b = res["lanes"]["A"]["levels"], res["lanes"]["B"]["levels"]
    real = {lane: {c: v["aggregate_tok_s"] * FAST for c, v in lv.items()} for lane, lv in (("A", a), ("B", b))}
    for c in ("1", "2", "3"):
        assert real["A"][c] > real["B"][c], (c, real)
    for c in ("4", "5", "6"):
        assert real["B"][c] > real["A"][c], (c, real)
    assert res["crossover"]["between"] == [3, 4]
    assert (res["crossover"]["leader_before"], res["crossover"]["leader_after"]) == ("A", "B")
    assert crossover_sentence(res) == "B overtakes A between C3 and C4"
    assert real["A"]["6"] == pytest.approx(223, rel=0.12)
    assert real["B"]["6"] == pytest.approx(263, rel=0.12)
    for lane in ("A", "B"):
        for c, cell in res["lanes"][lane]["levels"].items():
            assert cell["errors"] == 0 and cell["requests"] == int(c) * 8 and cell["tokens_estimated"] is False
            assert cell["unstable"] is False and cell["reps"] == [cell["aggregate_tok_s"]]
    # the --json output IS the results function over the recording
    events = list(Recording(rec.path).events())
    assert decode_results(events) == res


def test_per_category_c1_rates(fast_sims):
    run = run_bench(lanes_of(fast_sims), levels=[1], categories=["coding", "prose", "reasoning"],
                    parallel_lanes=True)
    res = run.results()
    got = {lane: {c: v["per_stream_tok_s"] * FAST for c, v in d["categories"].items()}
           for lane, d in res["lanes"].items()}
    want = {"A": {"coding": 148, "prose": 88}, "B": {"coding": 134, "prose": 74}}
    for lane, cats in want.items():
        for cat, value in cats.items():
            assert got[lane][cat] == pytest.approx(value, rel=0.10), (lane, cat, got)
    for cat in got["A"]:  # A faster in every category
        assert got["A"][cat] > got["B"][cat], cat
    assert all(v["requests"] == 5 and v["errors"] == 0 for d in res["lanes"].values()
               for v in d["categories"].values())
    assert res["config"]["categories"] == ["coding", "prose", "reasoning"]
    assert res["config"]["prompt_set"]["version"] == "1"


def test_c1_ttft_near_the_write_up():
    scale = 0.5
    with sim_pair(scale) as sims:
        run = run_bench(lanes_of(sims), levels=[1], categories=["translation"], reps=5, max_tokens=4,
                        per_category=False, parallel_lanes=True)
    res = run.results()
    ttft = {lane: d["levels"]["1"]["ttft_p50_s"] / scale for lane, d in res["lanes"].items()}
    assert ttft["A"] == pytest.approx(0.17, abs=0.02), ttft
    assert ttft["B"] == pytest.approx(0.22, abs=0.02), ttft
    cell = res["lanes"]["A"]["levels"]["1"]
    assert cell["requests"] == 5 and len(cell["reps"]) == 5


def test_request_meta_and_marks_follow_the_recording_conventions(fast_sims):
    run = run_bench(lanes_of(fast_sims)[:1], levels=[2], categories=["math"], per_category=True, max_tokens=8)
    marks = [e.data for e in run.events if e.kind == "mark"]
    assert marks[0]["label"] == "bench" and marks[0]["phase"] == "start"
    assert marks[0]["config"]["levels"] == [2] and marks[0]["config"]["parallel_lanes"] is False
    assert marks[-1] == {"label": "bench", "bench": "decode", "phase": "end", "interrupted": False, "cut": []}
    cells = [m for m in marks if m["label"] == "cell"]
    assert [(m["phase"], m["cell"]) for m in cells] == [("start", "A/C2/r0"), ("end", "A/C2/r0"),
                                                       ("start", "A/cat:math/r0"), ("end", "A/cat:math/r0")]
    reqs = [e.data for e in run.events if e.kind == "request"]
    assert len(reqs) == 2 + 5
    assert all(r["bench"] == "decode" and r["temperature"] == 0 and r["endpoint"] == "completions" for r in reqs)
    assert {(r["part"], r["level"], r["rep"]) for r in reqs[:2]} == {("level", 2, 0)}
    assert all(r["prompt_id"].startswith("math-") for r in reqs)
    assert run.cells_done == len(run.plan) == 2


def test_stop_ends_the_run_cleanly_and_keeps_finished_cells(fast_sims):
    run = BenchRun("decode", lanes_of(fast_sims)[:1], BenchOptions(levels=[1, 2, 3], categories=["coding"]))

    async def main():
        def on_event(ev):
            if ev.kind == "mark" and ev.data.get("phase") == "end" and ev.data.get("label") == "cell":
                run.stop()

        run.bus.subscribe(on_event)
        await run.run()  # stop() is not an error: run() returns

    asyncio.run(main())
    res = run.results()
    assert run.finished and run.interrupted and res["interrupted"] is True
    assert list(res["lanes"]["A"]["levels"]) == ["1"]
    assert [c["cell"] for c in res["cut"]] == ["A/C2/r0"]
    assert run.toggle_pause() is False and run.faster() is None and run.slower() is None
    assert run.mode == "bench" and run.paused is False and run.speed is None
