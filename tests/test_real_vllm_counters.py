"""Run-scoped engine counters against a real vLLM (CPU build, tests/realserver_fixtures.py): a bench cell's
counters equal the differences of /metrics taken by hand before and after the run (docs/GPU.md)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lanemon.results.common import to_json_obj

from lanemon.client.prom import map_engine, parse
from lanemon.measure.counters import run_counters
from lanemon.results.readings import event_data

pytestmark = [pytest.mark.realserver, pytest.mark.timeout(600)]


def test_cell_counters_match_metrics_taken_by_hand(vllm_server, vllm_url):
    before = map_engine(parse(vllm_server.metrics()))
    out = subprocess.run([sys.executable, "-m", "lanemon", "bench", "decode", "--lane", f"V={vllm_url}",
                          "--levels", "2", "--categories", "coding", "--max-tokens", "16", "--no-categories",
                          "--json", "--no-record"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    after = map_engine(parse(vllm_server.metrics()))
    assert before is not None and after is not None
    cell = json.loads(out.stdout)["lanes"]["V"]["levels"]["2"]
    got, by_hand = cell["engine_counters"], to_json_obj(run_counters(event_data(before), event_data(after)))  # the scrapes as their events hold them
    assert got is not None and got["engine"] == "vllm"
    # by hand, the run also holds lanemon's one continuous-usage check before the first cell (1 request)
    extra = by_hand["requests"] - got["requests"]
    assert extra in (0, 1) and got["requests"] == cell["requests"] == 2
    for key in ("generation_tokens", "prompt_tokens", "prefix_queries", "prefix_hits"):
        if extra == 0:
            assert got[key] == by_hand[key], key
        else:
            assert 0 <= by_hand[key] - got[key] <= 64, (key, got[key], by_hand[key])  # the check: a few tokens
    assert got["generation_tokens"] == cell["output_tokens"]
    assert got["preemptions"] == by_hand["preemptions"] == 0
    assert sum(got["requests_by_finish"].values()) == got["requests"]
