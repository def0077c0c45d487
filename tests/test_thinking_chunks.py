"""Thinking models, coalesced chunks, goodput and per-request export -- against the real simulator.

Simulated lanes run as subprocesses on loopback at time_scale 0.05 in the modes this exercises:
``--thinking`` (reasoning_content first), ``--tokens-per-chunk 4`` with continuous usage on / rejected
(``--usage final``) / no usage at all (``--usage none``), and ``--spec-accept 1-4 --thinking``
(variable chunk sizes, chunks carrying reasoning *and* content).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from conftest import SimProcess
from lanemon.measure import metrics
from lanemon.config import LaneConfig
from lanemon.client.http import LaneClient
from lanemon.client.loadwatch import LoadWatch
from lanemon.measure.load import client_load, has_flag, mark_client_bound
from lanemon.recording.reader import read_events
from lanemon.results.common import to_json_obj
from lanemon.events import Clock
from lanemon.measure.records import assemble
from lanemon.workloads.bench.run import goodput_of

TS = 0.05
PROMPTS = ["Write a short poem about the sea.", "Describe a harbour at dawn in one paragraph.",
           "Write a Python function that reverses a list.", "Describe a mountain village in winter."]


@pytest.fixture(scope="module")
def sims():
    modes = {
        "think": ("--thinking",),
        "k4": ("--tokens-per-chunk", "4"),
        "k4final": ("--tokens-per-chunk", "4", "--usage", "final"),
        "k4none": ("--tokens-per-chunk", "4", "--usage", "none"),
        "spec": ("--spec-accept", "1-4", "--thinking"),
    }
    started = {}
    try:
        for name, extra in modes.items():
            started[name] = SimProcess("tensorfold-exl3", TS, 0, extra)
        yield started
    finally:
        for sim in started.values():
            sim.stop()


async def _measure(url: str, *, max_tokens: int = 96, extra: dict | None = None, thinking: bool | None = None,
                   load: list | None = None):
    """Detect continuous usage (also the client's warm-up), then one chat request per prompt, watched by
    lanemon's own load watcher (client/loadwatch.py): a request read while this process was starved (CPU hogs
    beside the suite) is flagged ``client_bound`` as a bench flags it, and the timing checks leave it out."""
    clock = Clock()
    client = LaneClient(LaneConfig("X", url), clock=clock, emit=lambda ev: None)
    load = [] if load is None else load  # receives the watcher's client_load events
    watch = LoadWatch(clock, load.append)
    watch.start()
    out = []
    try:
        await client.probe_models()
        detected = await client.detect_continuous_usage()
        client.thinking = thinking
        for prompt in PROMPTS:
            body = client.build_body("chat", prompt=prompt, max_tokens=max_tokens,
                                     extra={"temperature": 0, **(extra or {})})
            out.append(await client.stream("chat", body))
    finally:
        await watch.stop()
        await client.aclose()
    mark_client_bound(out, load)
    return detected, out


def _clean(recs) -> list:
    """The requests lanemon would time: not client_bound; skips the check when the machine starved them all."""
    clean = [r for r in recs if not has_flag(r)]
    if not clean:
        pytest.skip(f"all {len(recs)} requests ran while this process was starved (lanemon's client_bound rule): "
                    "no clean sample to time")
    return clean


def _truth(sim: SimProcess, n: int) -> list[dict]:
    return [t for t in sim.trace() if t["endpoint"].startswith("chat")][-n:]


def test_thinking_ttft_and_ttfo_differ_by_the_simulated_reasoning_time(sims):
    sim = sims["think"]
    load_events: list = []
    detected, recs = asyncio.run(_measure(sim.url, load=load_events))
    truth = _truth(sim, len(recs))
    assert detected is True
    clean = _clean(recs)
    load = client_load(load_events)
    gaps = []
    for rec, tr in zip(recs, truth):
        m = metrics.request_metrics(rec)
        assert rec.ok and tr["status"] == "ok"
        # reasoning and output tokens are the simulator's truth
        assert m.reasoning_tokens == tr["reasoning_tokens"] == 64 and not m.reasoning_estimated
        assert m.output_tokens == tr["completion_tokens"] - 64 and not m.tokens_estimated
        assert m.generated_tokens == tr["completion_tokens"]
        assert rec.reasoning_text and rec.text and rec.text not in rec.reasoning_text
        # TTFO - TTFT: measured on the client vs written by the server
        measured = m.ttfo_s - m.ttft_s
        written = tr["ttfo_s"] - tr["ttft_s"]
        if rec in clean:  # less the longest this process was held up while it read (lanemon's own bound)
            gaps.append(max(0.0, abs(measured - written) - load.worst_stall_s(rec.sent_ns, rec.end_ns)))
        # and that is reasoning tokens / the lane's rate (prose 88 tok/s on A, scaled), within scheduling noise
        assert written > 0.5 * 64 / 148 * TS
    # within a few ms (the median is typically ~0.2 ms; one stalled read on a loaded machine may cost more)
    assert metrics.median([abs(g) for g in gaps]) <= 0.003 and max(abs(g) for g in gaps) <= 0.025, gaps


def test_thinking_switch_per_request(sims):
    sim = sims["think"]
    _, off = asyncio.run(_measure(sim.url, thinking=False))
    assert all(metrics.request_metrics(r).reasoning_tokens is None and r.reasoning_text == "" for r in off)
    assert all(r.meta.get("thinking") is False for r in off)
    _, high = asyncio.run(_measure(sim.url, max_tokens=200, extra={"reasoning_effort": "high"}))
    assert all(metrics.request_metrics(r).reasoning_tokens == 128 for r in high)
    # a lane without --thinking thinks when the request asks for it
    _, on = asyncio.run(_measure(sims["k4"].url, thinking=True))
    assert all((metrics.request_metrics(r).reasoning_tokens or 0) > 0 for r in on)


def _decode_truth(tr: dict) -> float:
    times = tr["token_times_s"]
    return (tr["completion_tokens"] - tr["chunk_tokens"][0]) / (times[-1] - times[0])


def _decode_ratio(recs, truth) -> float:
    """Median of measured / true decode tok/s over the requests lanemon would time (not client_bound; robust to
    one stalled request on a busy machine)."""
    clean = _clean(recs)
    ms = [metrics.request_metrics(r) for r in recs]
    # a request read in one burst (the sim fell behind on a busy machine and wrote it at once) has no rate
    assert all(m.decode_tok_s is not None or "burst" in m.flags for m in ms)
    ratios = [m.decode_tok_s / _decode_truth(t) for r, m, t in zip(recs, ms, truth)
              if m.decode_tok_s is not None and r in clean]
    assert len(ratios) >= len(clean) / 2, "most requests were bursts"
    return metrics.median(ratios)


def test_coalesced_chunks_with_continuous_usage_keep_decode_right(sims):
    sim = sims["k4"]
    detected, recs = asyncio.run(_measure(sim.url))
    truth = _truth(sim, len(recs))
    assert detected is True
    assert _decode_ratio(recs, truth) == pytest.approx(1.0, abs=0.10)  # not 4x too low
    for rec, tr in zip(recs, truth):
        m = metrics.request_metrics(rec)
        assert tr["chunk_tokens"][0] == 1 and set(tr["chunk_tokens"][1:-1]) == {4}
        assert rec.chunk_tokens == tr["chunk_tokens"]  # running usage gives every chunk its count
        assert m.output_tokens == tr["completion_tokens"] and not m.tokens_estimated
        assert not m.chunk_counts_estimated
        assert m.tokens_per_chunk == pytest.approx(tr["completion_tokens"] / len(tr["chunk_tokens"]))
        # each inter-chunk gap is divided by the tokens of the chunk it led to: a chunk of 4 is not one slow token
        assert len(m.itl_per_token_s) == len(m.itl_s) == len(tr["chunk_tokens"]) - 1
        for gap, per_token, n in zip(m.itl_s, m.itl_per_token_s, tr["chunk_tokens"][1:]):
            assert per_token == pytest.approx(gap / n, rel=1e-9)


def test_coalesced_chunks_without_continuous_usage(sims):
    # the lane rejects continuous_usage_stats (HTTP 400): off, final usage still right, chunk split estimated
    detected, recs = asyncio.run(_measure(sims["k4final"].url))
    truth = _truth(sims["k4final"], len(recs))
    assert detected is False
    assert _decode_ratio(recs, truth) == pytest.approx(1.0, abs=0.10)
    for rec, tr in zip(recs, truth):
        m = metrics.request_metrics(rec)
        assert all(n is None for n in rec.chunk_tokens)
        assert m.output_tokens == tr["completion_tokens"] and not m.tokens_estimated
        assert m.chunk_counts_estimated
    # no usage at all: tokens are counted by chunks -- about 4x too few -- and marked estimated
    detected, recs = asyncio.run(_measure(sims["k4none"].url))
    truth = _truth(sims["k4none"], len(recs))
    assert detected is False
    for rec, tr in zip(recs, truth):
        m = metrics.request_metrics(rec)
        assert m.tokens_estimated and m.chunk_counts_estimated and m.tokens_per_chunk is None
        assert m.output_tokens == len(tr["chunk_tokens"]) < tr["completion_tokens"] / 3


def test_speculative_chunks_mixing_reasoning_and_content(sims):
    sim = sims["spec"]
    _, recs = asyncio.run(_measure(sim.url))
    truth = _truth(sim, len(recs))
    assert _decode_ratio(recs, truth) == pytest.approx(1.0, abs=0.10)
    for rec, tr in zip(recs, truth):
        m = metrics.request_metrics(rec)
        assert set(tr["chunk_tokens"]) <= {1, 2, 3, 4} and len(set(tr["chunk_tokens"])) > 1
        assert rec.chunk_tokens == tr["chunk_tokens"]
        assert m.reasoning_tokens == 64 and m.output_tokens == tr["completion_tokens"] - 64
        assert m.ttfo_s is not None and m.ttfo_s >= m.ttft_s


def _lanemon(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def bench_recording(sims, tmp_path_factory):
    path = tmp_path_factory.mktemp("bench") / "decode.jsonl"
    out = _lanemon("bench", "decode", "--lane", f"A={sims['think'].url}", "--lane", f"B={sims['k4'].url}",
                   "--levels", "1,2", "--categories", "coding,prose", "--max-tokens", "96", "--no-categories",
                   "--thinking", "on", "--slo", "ttft=0.012", "tpot=0.002", "e2e=10", "--json", "--record", str(path))
    assert out.returncode == 0, out.stderr
    return path, json.loads(out.stdout)


def test_bench_goodput_matches_a_hand_count(bench_recording):
    path, result = bench_recording
    assert result["config"]["slo"] == {"ttft": 0.012, "tpot": 0.002, "e2e": 10.0}
    assert result["config"]["thinking"] is True and result["config"]["endpoint"] == "chat"
    _, events, _ = read_events(path)
    recs = [r for r in assemble(events) if r.meta.get("bench") == "decode"]
    slo = result["config"]["slo"]
    for lane in ("A", "B"):
        for level in ("1", "2"):
            cell = result["lanes"][lane]["levels"][level]
            mine = [r for r in recs if r.lane == lane and r.meta["level"] == int(level)]
            good = [r for r in mine if metrics.meets_slo(metrics.request_metrics(r), slo)]
            wall = (max(r.end_ns for r in mine) - min(r.sent_ns for r in mine)) / metrics.NS
            g = cell["goodput"]
            assert (g["good"], g["total"]) == (len(good), len(mine)) == (g["good"], int(level) * 2)
            assert g["share"] == pytest.approx(len(good) / len(mine), abs=1e-4)
            assert g["rate_rps"] == pytest.approx(len(good) / wall, rel=1e-3)
            assert g == to_json_obj(goodput_of([mine], slo))
            # thinking on every request: reasoning kept apart, TTFO after TTFT
            assert cell["reasoning_tokens"] == 64 * len(mine) and cell["ttfo_s"] > cell["ttft_p50_s"]
            assert cell["tokens_per_chunk"] == pytest.approx(1.0 if lane == "A" else 3.5, abs=0.6)
            assert cell["chunk_counts_estimated"] is False and cell["tokens_estimated"] is False


def test_export_requests_rows_carry_the_new_fields(bench_recording):
    path, _ = bench_recording
    out = _lanemon("export", str(path), "--requests")
    assert out.returncode == 0, out.stderr
    rows = {row["req"]: row for row in map(json.loads, out.stdout.splitlines())}
    _, events, _ = read_events(path)
    recs = assemble(events)
    probes = [r for r in recs if r.purpose == "detect"]  # the usage-detection probes: recorded and labelled
    assert len(probes) == 2 and all(rows[r.req]["meta"].get("probe") == "continuous_usage" for r in probes)
    recs = [r for r in recs if r.purpose != "detect"]
    assert len(rows) == len(recs) + 2 and len(recs) == 12
    for rec in recs:
        m = metrics.request_metrics(rec)
        row = rows[rec.req]
        assert row["ttfo_s"] == m.ttfo_s and row["reasoning_tokens"] == m.reasoning_tokens == 64
        assert row["tokens_per_chunk"] == m.tokens_per_chunk and row["itl_per_token_s"] == list(m.itl_per_token_s)
        assert row["generated_tokens"] == m.generated_tokens and row["chunk_counts_estimated"] is False
        assert row["meta"]["thinking"] is True
