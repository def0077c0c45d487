"""`bench sweep`: the concurrency ladder that finds each lane's knee, pure rules and a real run against the
simulated lanes (its own file: the real run burns both cores, and tests/test_bench_load.py runs its 30 s
open-loop run in the background beside lighter tests)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def test_gain_per_doubling_scales_any_step_to_a_doubling():
    from lanemon.workloads.bench.sweep import gain_per_doubling

    assert gain_per_doubling(4, 100.0, 8, 150.0) == pytest.approx(0.5)
    assert gain_per_doubling(4, 100.0, 16, 225.0) == pytest.approx(0.5)  # two doublings of +50 %
    assert gain_per_doubling(3, 100.0, 4, 100.0) == 0.0
    assert gain_per_doubling(3, 0.0, 4, 100.0) == 0.0


def test_stop_reason_knee_slo_and_errors():
    from lanemon.workloads.bench.sweep import stop_reason

    assert stop_reason([1, 2], [100.0, 180.0], None, 0, 0.1) is None
    assert stop_reason([8, 12], [250.0, 255.0], None, 0, 0.1) == "knee"
    assert stop_reason([1, 2], [100.0, 180.0], "p90 TTFT 2 s > 1 s", 0, 0.1) == "slo"
    assert stop_reason([1], [None], None, 3, 0.1) == "errors"


@pytest.mark.slow
def test_sweep_finds_each_lanes_knee_and_the_crossover_on_the_simulated_lanes(tmp_path):
    """The simulated lanes' curves flatten (16 slots each) and B overtakes A between C3 and C4 (Figure 2).

    Replies are capped at 128 tokens (the prompts ask for 256-384) and the ladder at C24: B's curve rises to C16
    (its 16 slots) and is flat at C24, so its knee (C16) needs C24 and nothing above; A's flattens earlier.
    Measured with the same command at load 2.5-4.5: 65 s instead of 105 s (uncapped, --max-level 32), the same
    knees (C16, C16) and the same levels."""
    rec = tmp_path / "sweep.jsonl"
    cmd = [sys.executable, "-m", "lanemon", "bench", "sweep", "--demo", "--time-scale", "0.1", "--max-level", "24",
           "--max-tokens", "128", "--json", "--record", str(rec)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    for lane in ("A", "B"):
        d = result["lanes"][lane]
        if d["stopped"] != "knee":
            # beside four CPU hogs the simulators themselves are starved (a slower lane, not a client error) and a
            # curve may still grow at C24 (seen: +12 % per doubling at C16): then the sweep ends at its top level
            # and claims no knee -- consistent with its own rule, never a knee where the curve still rises
            gains = d["gain_per_doubling"]
            top = str(max(int(c) for c in gains))
            assert d["stopped"] == "max_level" and d["knee"] is None, d
            assert gains[top] is None or gains[top] >= result["knee_gain"], gains
            continue
        if d["knee_reliable"]:
            # the knee is where the curve flattens: beyond C6 on both simulated lanes, never at the first levels
            assert 6 <= d["knee"] <= 24, d
        else:
            # on a starved machine the flattening is lanemon's own: the result must say so, not claim a knee
            assert set(d["rests_on"]) & set(d["unreliable_levels"]), d
    from lanemon.workloads.bench.decode import level_leads

    x = result["crossover"]
    import msgspec

    from lanemon.results.decode import LaneLevels
    from lanemon.results.common import to_json_obj

    lanes = {n: msgspec.convert(d, LaneLevels, strict=False) for n, d in result["lanes"].items()}  # the JSON's levels
    leads = {d.level: to_json_obj(d) for d in level_leads(lanes, "A", "B")}
    from lanemon.recording.reader import read_events
    from lanemon.workloads.bench.sweep import sweep_results

    _, events, _ = read_events(rec)
    host_cpu = sorted(ev.data["cpu_pct"] for ev in events if ev.kind == "client_load" and "cpu_pct" in ev.data)
    host_busy = bool(host_cpu) and host_cpu[len(host_cpu) // 2] >= 95  # median: CPU hogs beside the run
    if not any(leads[c]["unreliable"] for c in range(1, 7) if c in leads):
        assert x and x["leader_before"] == "A" and x["leader_after"] == "B", x
        assert 1 <= x["between"][0] and x["between"][1] <= 6, x
        if not host_busy:
            # the simulators' curves cross between C3 and C4 with a clear lead on each side (about 12 % and 8 %
            # at 128 tokens): with a core to spare the sweep finds exactly that (issue 13)
            assert x["between"] == [3, 4], (x, host_cpu[len(host_cpu) // 2])
    else:  # lanemon was starved at some of C1-C6: no judgement there, and never the wrong way round
        assert x is None or (x["leader_before"], x["leader_after"]) == ("A", "B"), x
    if not host_busy:
        assert all(result["lanes"][n]["knee"] == 16 for n in ("A", "B")), result["lanes"]  # 16 slots per lane
    # the recording says the same
    assert sweep_results(events).lanes["A"].knee == result["lanes"]["A"]["knee"]
    md = subprocess.run([sys.executable, "-m", "lanemon", "report", str(rec), "--format", "md"], capture_output=True,
                        text=True, timeout=60)
    assert md.returncode == 0, md.stderr
    assert "Concurrency sweep" in md.stdout
    if result["lanes"]["A"]["knee"] is not None:
        assert f"A: knee at C{result['lanes']['A']['knee']}" in md.stdout


