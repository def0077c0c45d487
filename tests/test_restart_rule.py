"""One restart rule for the server view, the run-scoped counters and the live session row (issue 38, item 3).

A restart after which the engine counted more than it had before leaves every counter above its baseline: the
counters alone read the run as 3 requests and 127 tokens with ``restarts: 0`` while the server view, which reads the
histogram sums too, said ``restarts: 1``.  Now all three ask measure/restarts.py: a fall in any counter or histogram
sum, or a changed ``process_start_time_seconds``, ends the interval; its counters are not used, and the cell says so.
"""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import pytest

from lanemon import events as schema
from lanemon.client.prom import map_engine, parse
from lanemon.events import Event
from lanemon.folds.dashboard import ServerMetricsState
from lanemon.measure.counters import counters_text, scrapes, session_counters, sum_counters, window_counters
from lanemon.measure.server import server_view
from lanemon.results.common import to_json_obj
from lanemon.results.server import ServerTimings

NS = 1_000_000_000

# the engine before the cell, and after it: it restarted after serving 3 of the cell's requests and then counted
# 8 requests and 256 tokens, more than its 5 and 129 before, so every counter rose past its baseline
BEFORE = {"engine": "vllm", "requests_success_total": 5.0, "generation_tokens_total": 129.0,
          "prompt_tokens_total": 200.0, "e2e_sum": 9.5, "e2e_count": 5.0, "ttft_sum": 0.4, "ttft_count": 5.0}
AFTER_FALL = {"engine": "vllm", "requests_success_total": 8.0, "generation_tokens_total": 256.0,
              "prompt_tokens_total": 320.0, "e2e_sum": 3.1, "e2e_count": 8.0, "ttft_sum": 0.3, "ttft_count": 8.0}
# ... and a restart no sum shows (a quicker engine after it): only the process's start time says so
BEFORE_START = {**BEFORE, "process_start_s": 1_765_000_000.25}
AFTER_START = {**BEFORE, "requests_success_total": 8.0, "generation_tokens_total": 256.0,
               "prompt_tokens_total": 320.0, "e2e_sum": 12.0, "e2e_count": 8.0, "ttft_sum": 0.6, "ttft_count": 8.0,
               "process_start_s": 1_765_000_061.5}


def sm(t_s: float, data: dict) -> Event:
    return Event(int(t_s * NS), schema.SERVER_METRICS, "A", None, {"ok": True, **data})


@pytest.mark.parametrize("before, after, why", [(BEFORE, AFTER_FALL, "e2e_sum fell"),
                                                (BEFORE_START, AFTER_START, "process_start_time_seconds changed")])
def test_the_counters_the_server_view_and_the_live_row_see_the_same_restart(before, after, why):
    events = [sm(1, before), sm(5, after)]
    # the run-scoped counters of a cell between those scrapes: the restart named, the counters not the cell's
    block = window_counters(scrapes(events, "A"), int(1.5 * NS), int(4.5 * NS))
    c = to_json_obj(block)  # as a cell's JSON carries it
    assert c["restarts"] == 1 and c["restart_reason"] == why and c["excluded_s"] == 4.0
    assert "requests" not in c and "generation_tokens" not in c  # not 3 requests and 127 tokens
    assert "restarted" in c["withheld"] and why in c["withheld"]
    assert counters_text(block) == block.withheld
    # the server view: the same restart
    v = server_view(events, "A")
    assert v.restarts == 1 and v.reset_at[0].reason == why
    # the live session row: the same restart, the interval not counted
    live = ServerMetricsState()
    for ev in events:
        live.apply(ev.t, ev.data)
    s = live.session_counters()
    assert s.restarts == 1 and s.restart_reason == why and to_json_obj(s).get("requests") in (None, 0)
    assert "engine restarted" in counters_text(s) and "not counted" in counters_text(s)
    assert live.timings == ServerTimings()  # the engine's means over a restart are not shown either
    # the report's session line: the same
    assert session_counters(events)["A"].restarts == 1


def test_a_session_adds_up_the_intervals_around_a_restart_and_a_rep_with_one_withholds_the_cell():
    evs = [sm(0, {**BEFORE, "process_start_s": 100.0}),
           sm(2, {**BEFORE, "requests_success_total": 7.0, "process_start_s": 100.0}),  # +2
           sm(4, {**BEFORE, "requests_success_total": 9.0, "process_start_s": 160.0}),  # restarted: not counted
           sm(6, {**BEFORE, "requests_success_total": 12.0, "process_start_s": 160.0})]  # +3
    s = session_counters(evs)["A"]
    assert s.requests == 5 and s.restarts == 1 and s.excluded_s == 2.0 and s.between_s == 6.0
    assert "(the 2 s around it not counted)" in counters_text(s)
    scr = scrapes(evs, "A")
    clean, restarted = window_counters(scr, 0, 2 * NS), window_counters(scr, 2 * NS, 4 * NS)
    assert clean.requests == 2 and to_json_obj(restarted).get("requests") is None
    cell = to_json_obj(sum_counters([clean, restarted]))  # a cell of two reps, one with a restart, as its JSON
    assert cell["withheld"] and cell["restarts"] == 1 and "requests" not in cell
    from lanemon.reports.sections.efficiency import counter_notes, counter_rows  # the report's counters table says so
    typed = sum_counters([clean, restarted])  # the typed block a cell holds
    row = counter_rows([("A", "C4", typed)])[0]
    assert row[2] == "—" and row[-1] == "1"  # one figure per column: no requests, one restart
    assert any("A C4: counters withheld" in n and "not this run's" in n for n in counter_notes([("A", "C4", typed)]))


def test_process_start_time_is_mapped_and_a_steady_one_is_no_restart():
    text = ("# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds 1.76500000025e+09\n"
            "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 1.0\n")
    m = map_engine(parse(text))
    assert m.process_start_s == pytest.approx(1_765_000_000.25)
    evs = [sm(0, {**BEFORE, "process_start_s": 100.0}), sm(2, {**BEFORE, "requests_success_total": 7.0,
                                                               "process_start_s": 100.0})]
    assert window_counters(scrapes(evs, "A"), 0, 2 * NS).restarts == 0


def test_the_simulated_engine_exports_its_start_time_and_a_restart_changes_it():
    from lanemon.sim.server import SimThread

    def start(url: str) -> float:
        return map_engine(parse(httpx.get(url, timeout=10).text)).process_start_s

    with SimThread("tensorfold-exl3", time_scale=0.02, faults=["restart#2"]) as sim:
        metrics = sim.root_url + "/metrics"
        s0 = start(metrics)
        body = {"model": "deepseek-v4.1-flash", "prompt": "hello", "max_tokens": 4}
        httpx.post(sim.base_url + "/completions", json=body, timeout=30)
        assert start(metrics) == s0  # one request: no restart yet
        httpx.post(sim.base_url + "/completions", json=body, timeout=30)  # the 2nd: the engine restarts first
        assert start(metrics) > s0 + 0.5


@pytest.mark.slow
def test_issue_38_reproduction_a_restarting_lane_names_the_restart_on_the_cell():
    """``--fault restart#3``, then ``bench decode --levels 4 --reps 2``: the cell's counters are not the interval
    of the restart's; the cell names the restart as the server block does."""
    from lanemon.sim.server import SimThread

    with SimThread("tensorfold-exl3", time_scale=0.05, faults=["restart#3"]) as sim:
        cmd = [sys.executable, "-m", "lanemon", "bench", "decode", "--lane", f"A={sim.base_url}", "--levels", "4",
               "--reps", "2", "--categories", "coding", "--no-categories", "--max-tokens", "32", "--json",
               "--no-record"]
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    lane = json.loads(out.stdout)["lanes"]["A"]
    c = lane["levels"]["4"]["engine_counters"]
    assert lane["server"]["restarts"] >= 1
    assert c["restarts"] >= 1 and c["withheld"] and "requests" not in c and "generation_tokens" not in c
