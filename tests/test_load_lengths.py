"""Lengths in the lane's own tokens (issue 28, row 8): ``bench load --input-len`` is calibrated against the
lane's usage (one calibration request per lane, as prefill does) and the results show the measured lengths
beside the asked ones; a request whose input + max output would not fit the lane's context is refused before
sending, the limit named (before: vLLM counted 1,537-1,602 prompt tokens for ``fixed:1000``, and ``fixed:3000``
failed every request with HTTP 400)."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from lanemon.sim.server import SimThread

pytestmark = pytest.mark.slow


def run(url: str, *args: str) -> dict:
    cmd = [sys.executable, "-m", "lanemon", "bench", "load", "--lane", f"V={url}", "--arrival", "constant",
           "--rate", "10", "--output-len", "fixed:16", "--json", "--no-record", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_input_lengths_are_calibrated_and_shown_beside_the_asked_ones():
    with SimThread("tensorfold-exl3", time_scale=0.02, context_len=4096) as sim:
        r = run(sim.base_url, "--requests", "6", "--input-len", "fixed:1000")
        trace = httpx.get(sim.root_url + "/sim/trace", timeout=10).json()["requests"]
    rep = r["lanes"]["V"]["reps"][0]
    assert rep["ok"] == 6 and rep["refused"] == 0
    assert rep["input_tokens_asked_p50"] == 1000
    assert rep["input_tokens_p50"] == pytest.approx(1000, rel=0.05)  # the lane's own count, calibrated
    assert rep["output_tokens_asked_p50"] == 16 and rep["output_tokens_p50"] <= 16
    # one calibration request (1 token out) went first, recorded; then the six
    prompts = sorted(t["prompt_tokens"] for t in trace if t["completion_tokens"] > 1)
    assert len(prompts) == 6 and all(abs(p - 1000) <= 50 for p in prompts)


def test_requests_beyond_the_context_are_refused_before_sending_with_the_limit():
    with SimThread("tensorfold-exl3", time_scale=0.02, context_len=4096) as sim:
        r = run(sim.base_url, "--requests", "4", "--input-len", "fixed:5000")
        trace = httpx.get(sim.root_url + "/sim/trace", timeout=10).json()["requests"]
    rep = r["lanes"]["V"]["reps"][0]
    assert rep["requests"] == 0 and rep["refused"] == 4
    assert "4,096 tokens" in rep["refused_error"] and "/v1/models" in rep["refused_error"]
    assert not [t for t in trace if (t["prompt_tokens"] or 0) > 4096]  # nothing too long reached the lane
    assert not [t for t in trace if t.get("http_status") == 400]
