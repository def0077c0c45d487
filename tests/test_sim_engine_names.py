"""The demo names the engines it simulates (issue 40 item 4): the simulator's /models says which profile it
runs, the client carries it on the probe, and history rows, the report's server table and the dashboard's
server row say `tensorfold-exl3` (with vLLM's /metrics names), not `vllm`."""

from __future__ import annotations

import httpx

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.server import engine_label
from lanemon.measure.summary import SummaryFold
from lanemon.sim.server import SimThread

MS = 1_000_000
S = 1_000_000_000


def test_the_simulator_says_which_engine_it_simulates():
    with SimThread("tensorfold-exl3", time_scale=0.05) as sim:
        raw = httpx.get(sim.base_url + "/models").json()
    assert raw["data"][0]["simulates"] == "tensorfold-exl3"


def test_engine_label():
    assert engine_label("vllm", "tensorfold-exl3") == "tensorfold-exl3 (simulated; vLLM /metrics names)"
    assert engine_label("sglang", "sglang-native") == "sglang-native (simulated; SGLang /metrics names)"
    assert engine_label("vllm", None) == "vllm"  # a real engine: as before
    assert engine_label(None, "tensorfold-exl3") == "tensorfold-exl3 (simulated)"
    assert engine_label(None, None) is None


def _events(simulates):
    probe = {"ok": True, "model": "m1", "latency_s": 0.01, "simulated": True}
    if simulates is not None:
        probe["simulates"] = simulates
    evs = [Event(0, schema.PROBE, "A", None, probe),
           Event(1, schema.SERVER_METRICS, "A", None, {"ok": True, "engine": "vllm", "running": 1})]
    sent = S
    evs += [Event(sent, schema.REQUEST, "A", "r1", {"endpoint": "completions", "purpose": "probe"}),
            Event(sent + 100 * MS, schema.TOKEN, "A", "r1", {"text": "x", "n": 1}),
            Event(sent + 200 * MS, schema.TOKEN, "A", "r1", {"text": "x", "n": 1}),
            Event(sent + 200 * MS, schema.DONE, "A", "r1", {"finish_reason": "length"})]
    return evs


def test_history_rows_name_the_simulated_engine():
    [row] = SummaryFold({"command": "demo"}, session="s.jsonl").feed(_events("tensorfold-exl3")).summaries()
    assert row.engine == "tensorfold-exl3 (simulated; vLLM /metrics names)" and row.simulated
    [row] = SummaryFold({"command": "demo"}, session="s.jsonl").feed(_events(None)).summaries()
    assert row.engine == "vllm"  # an older recording: what its /metrics said
