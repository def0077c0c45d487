"""One offered schedule per run (issue 37 item 5): every lane of a multi-lane ``bench load`` gets the same arrival
times and request lengths, from --seed or from a seed drawn once, recorded in the recording and the --json; the
report says so."""

from __future__ import annotations

import json
import subprocess
import sys

from lanemon.workloads.bench.load import LoadOptions
from lanemon.workloads.bench.run import BenchOptions


def test_a_load_bench_without_a_seed_draws_one_and_records_it():
    opts = BenchOptions(load=LoadOptions(arrival="poisson", rate=4, requests=20))
    assert isinstance(opts.seed, int)
    cfg = opts.config("load", ["A", "B"])
    assert cfg.seed == opts.seed and cfg.seed_drawn is True
    given = BenchOptions(load=LoadOptions(arrival="poisson", rate=4, requests=20), seed=7)
    assert given.seed == 7 and given.config("load", ["A"]).seed_drawn is False
    # decode keeps fresh randomness (nonces): nothing drawn for it
    assert BenchOptions().seed is None


def test_every_lane_is_offered_the_same_schedule_without_seed(tmp_path):
    rec = tmp_path / "load.jsonl"
    cmd = [sys.executable, "-m", "lanemon", "bench", "load", "--demo", "--time-scale", "0.02", "--lanes", "A,B",
           "--arrival", "poisson", "--rate", "8", "--duration", "2", "--output-len", "uniform:4,24", "--workers", "1",
           "--json", "--record", str(rec)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    seed = result["config"]["seed"]
    assert isinstance(seed, int) and result["config"]["seed_drawn"] is True
    assert result["schedule"] == {"seed": seed, "seed_drawn": True, "same_for_every_lane": True}
    reqs = [e for e in map(json.loads, rec.read_text().splitlines()[1:])
            if e["kind"] == "request" and e["data"].get("bench") == "load"]
    by_lane: dict[str, list] = {}
    for e in reqs:
        by_lane.setdefault(e["lane"], []).append((e["data"]["scheduled_s"], e["data"]["max_tokens"]))
    assert set(by_lane) == {"A", "B"}
    # the recording is in the order requests reached the wire (a connection opening can swap two close ones)
    assert sorted(by_lane["A"]) == sorted(by_lane["B"]) and len(by_lane["A"]) > 3
    a, b = (result["lanes"][n]["reps"][0] for n in ("A", "B"))
    assert a["scheduled_rate_rps"] == b["scheduled_rate_rps"]
    md = subprocess.run([sys.executable, "-m", "lanemon", "report", str(rec), "--format", "md"], capture_output=True,
                        text=True, timeout=60)
    assert md.returncode == 0, md.stderr
    assert f"every lane was offered the same schedule (seed {seed}, drawn for this run)" in md.stdout
