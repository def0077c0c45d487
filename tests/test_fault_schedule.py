"""Scheduled faults (sim/fault_spec.py ``after=`` / ``for=``, the ``slow`` kind): the simulator misbehaves on a
schedule so alerts can fire and resolve.  Judged on the simulator's own trace (``GET /sim/trace``)."""

from __future__ import annotations

import time

import httpx
import pytest

from lanemon.sim.fault_spec import parse_fault
from lanemon.sim.server import SimThread


def test_schedule_and_slow_syntax():
    f = parse_fault("slow:after=5s,for=10s,factor=4,ramp=2s")
    assert (f.kind, f.args, f.after_s, f.for_s) == ("slow", (4.0, 2.0), 5.0, 10.0)
    assert [f.slow_factor(t) for t in (0, 4.99, 6, 7, 12, 14, 15, 20)] == [1.0, 1.0, 2.5, 4.0, 4.0, 2.5, 1.0, 1.0]
    g = parse_fault("http:503:after=500ms,for=1m@0.5")
    assert (g.args[0], g.after_s, g.for_s, g.prob) == (503, 0.5, 60.0, 0.5)
    assert (g.active(0.4), g.active(0.5), g.active(60.49), g.active(60.5)) == (False, True, True, False)
    assert parse_fault("drop:3").active(1e6)  # no schedule: always
    # a kind's own arguments are not its schedule: stall's AFTER_TOKENS once became after_s (active from 1 s)
    s = parse_fault("stall:1:4")
    assert (s.args, s.after_s, s.for_s, s.active(0)) == ((1.0, 4), 0.0, None, True)
    assert (parse_fault("stall:1").args, parse_fault("stall:1").after_s) == ((1.0, 1), 0.0)


@pytest.mark.parametrize("spec, words", [
    ("slow:after=1", "needs factor="),
    ("slow:factor=1", "factor= must be > 1"),
    ("slow:factor=nan", "factor= must be > 1"),
    ("slow:factor=2@0.5", "no @PROB"),
    ("slow:factor=2,speed=3", "unknown option 'speed'"),
    ("slow:for=2,factor=3,ramp=2", "ramp= must be at most half"),
    ("slow:after=inf,factor=2", "after="),
    ("drop:5:after=1,x=2", "unknown option 'x'"),
    ("drop:5:after=1,after=2", "given twice"),
    ("models-change:3:after=1", "takes no after="),
])
def test_bad_schedules_are_one_line_errors(spec, words):
    with pytest.raises(ValueError, match=words):
        parse_fault(spec)


def _request(sim, n=4):
    model = httpx.get(sim.base_url + "/models", timeout=10).json()["data"][0]["id"]
    r = httpx.post(sim.base_url + "/completions", timeout=30,
                   json={"model": model, "prompt": "Tell a short story about a harbour.", "max_tokens": n})
    r.raise_for_status()


def test_a_slow_window_slows_requests_inside_it_and_only_those():
    """Requests arriving before and after the window run at the profile's pace; inside it TTFT is ``factor`` x.
    Each request is placed by its own arrival time in the sim's trace, against the schedule's start."""
    with SimThread("tensorfold-exl3", time_scale=0.05, faults=["slow:after=0.6s,for=0.8s,factor=8"]) as sim:
        t_start = sim.app.t_start  # the fault middleware's clock (perf_counter, this process)
        while time.perf_counter() - t_start < 2.2:
            _request(sim)
        trace = httpx.get(sim.root_url + "/sim/trace", timeout=10).json()["requests"]
    at = [(r["t_arrival_mono"] - t_start, r) for r in trace]
    inside = [r for t, r in at if 0.62 <= t < 1.38]  # (arrival and admission are a few ms apart: not judged at the edges)
    outside = [r for t, r in at if t < 0.58 or t >= 1.42]
    assert inside and outside
    assert all("slow:after=0.6s,for=0.8s,factor=8" in r.get("faults", []) for r in inside)
    assert not any(r.get("faults") for r in outside)
    base = max(r["model_ttft_s"] for r in outside)
    assert min(r["model_ttft_s"] for r in inside) > 4 * base  # 8 x the scheduled TTFT (same prompt, one slot)
    assert all(r["ttft_s"] >= 0.99 * r["model_ttft_s"] for r in inside)  # the first token kept the slowed schedule
