"""The server view compares like with like on a live simulated engine (issue 28, rows 4 and 5).

A shared engine: another client uses the lane during a bench, so the engine's /metrics count requests lanemon
did not send; the gaps are withheld with the reason instead of being explained as overhead.  A restarting
engine (fault ``restart#N``: the counters fall to zero): the restart is found between any two scrapes (one is
taken at every cell edge) and the interval it falls in is compared on neither side.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import httpx
import pytest

from lanemon.sim.server import SimThread

MODEL = "deepseek-v4.1-flash"
pytestmark = pytest.mark.slow


def bench(url: str) -> dict:
    cmd = [sys.executable, "-m", "lanemon", "bench", "decode", "--lane", f"A={url}", "--levels", "1,2",
           "--categories", "coding", "--no-categories", "--max-tokens", "24", "--reps", "3", "--json", "--no-record"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_another_client_on_the_same_engine_withholds_the_gaps():
    with SimThread("tensorfold-exl3", time_scale=0.05) as sim:
        stop = threading.Event()
        sent = [0]

        def other_client():
            with httpx.Client(timeout=30) as c:
                while not stop.is_set():
                    c.post(sim.base_url + "/completions", json={"model": MODEL, "prompt": "someone else " * 50,
                                                                "max_tokens": 8})
                    sent[0] += 1

        t = threading.Thread(target=other_client, daemon=True)
        t.start()
        try:
            r = bench(sim.base_url)
        finally:
            stop.set()
            t.join(30)
    s = r["lanes"]["A"]["server"]
    assert sent[0] > 5
    assert s["foreign_requests"] > 1 and s["requests"] > s["client_requests"]
    assert s["gap_ttft_s"] is None and s["gap_e2e_s"] is None
    assert "another client" in s["gap_reason"]


def test_a_restarting_engine_is_found_between_any_two_scrapes_and_left_out():
    with SimThread("tensorfold-exl3", time_scale=0.05, faults=["restart#5"]) as sim:
        r = bench(sim.base_url)
        trace = httpx.get(sim.root_url + "/sim/trace", timeout=10).json()["requests"]
    s = r["lanes"]["A"]["server"]
    assert s["restarts"] >= 1 and s["scrapes"] >= 4
    # the same requests on both sides, give or take one per edge
    assert abs(s["requests"] - s["client_requests"]) <= 1 + s["restarts"]
    assert s["gap_reason"] is None and s["gap_e2e_s"] is not None
    # the engine's mean E2E is its trace's (24-token replies), not a mix of before and after a restart
    e2e = [t["e2e_s"] for t in trace if t["status"] == "ok" and t["completion_tokens"] == 24]
    assert s["e2e_s"] == pytest.approx(sum(e2e) / len(e2e), rel=0.3)
    assert s["e2e_s"] <= s["client_e2e_s"] * 1.05 + 0.002
