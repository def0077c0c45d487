"""The simulator's /metrics histograms and counters equal its own ground-truth trace (GET /sim/trace).

Expected values are computed here, from the trace, independently of sim/metrics_endpoint.py: every
admitted request that ended is one observation; TTFT = ttft_s, queue = queued_s, prefill = ttft_s -
queued_s, decode = last - first token write, e2e = e2e_s, inter-token gaps between token writes.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from openai import AsyncOpenAI, OpenAI
from prometheus_client.parser import text_string_to_metric_families

from lanemon.sim.server import SimThread

MODEL = "deepseek-v4.1-flash"


def scrape(sim) -> dict[str, list[tuple[dict, float]]]:
    out: dict[str, list[tuple[dict, float]]] = {}
    for fam in text_string_to_metric_families(httpx.get(sim.root_url + "/metrics", timeout=10).text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def one(samples, name, **labels) -> float:
    hits = [v for lab, v in samples[name] if all(lab.get(k) == w for k, w in labels.items())]
    assert len(hits) == 1, (name, labels, samples.get(name))
    return hits[0]


def trace(sim) -> list[dict]:
    return httpx.get(sim.root_url + "/sim/trace", timeout=10).json()["requests"]


async def drive(sim, *, n_parallel: int, extra_cancel: bool = True) -> None:
    ac = AsyncOpenAI(base_url=sim.base_url, api_key="x", max_retries=0, timeout=30)
    try:
        async def stream(i):
            s = await ac.completions.create(model=MODEL, prompt=f"Tell a story number {i}", max_tokens=40 + i,
                                            stream=True)
            async for _ in s:
                pass

        async def chat(i):
            await ac.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": f"hi {i}"}],
                                             max_tokens=3000)

        await asyncio.gather(*(stream(i) for i in range(n_parallel)), chat(1), chat(2))
        if extra_cancel:  # a stream the client leaves early: the engine counts it as aborted
            s = await ac.completions.create(model=MODEL, prompt="a long essay please", max_tokens=400, stream=True)
            k = 0
            async for _ in s:
                k += 1
                if k == 5:
                    break
            await s.close()
    finally:
        await ac.close()
    # a request refused before admission: never the engine's
    with pytest.raises(Exception):
        OpenAI(base_url=sim.base_url, api_key="x", max_retries=0).completions.create(
            model=MODEL, prompt="x", max_tokens=0)


def expected(recs: list[dict], sglang: bool = False) -> dict[str, list]:
    """Per-quantity observations [(value, weight, sum part)] from the trace."""
    obs: dict[str, list] = {k: [] for k in ("ttft", "queue", "prefill", "decode", "e2e", "itl", "tpot")}
    for r in recs:
        if r["status"] in ("error", "running") or r["prompt_tokens"] is None:
            continue
        obs["e2e"].append((r["e2e_s"], 1, r["e2e_s"]))
        obs["queue"].append((r["queued_s"], 1, r["queued_s"]))
        if r["ttft_s"] is None:
            continue
        times = r["token_times_s"]
        obs["ttft"].append((r["ttft_s"], 1, r["ttft_s"]))
        prefill = r["ttft_s"] - r["queued_s"]
        obs["prefill"].append((prefill, 1, prefill))
        obs["decode"].append((times[-1] - times[0], 1, times[-1] - times[0]))
        if r["completion_tokens"] > 1:
            v = (times[-1] - times[0]) / (r["completion_tokens"] - 1)
            obs["tpot"].append((v, 1, v))
        sizes = r["chunk_tokens"] if len(r["chunk_tokens"]) == len(times) else [1] * len(times)
        for a, b, k in zip(times, times[1:], sizes[1:]):
            if sglang:
                obs["itl"].append(((b - a) / k, k, b - a))
            else:
                obs["itl"].append((b - a, 1, b - a))
    return obs


def check_histogram(samples, family: str, observations: list, labels: dict) -> None:
    count = sum(w for _, w, _ in observations)
    assert one(samples, family + "_count", **labels) == count, family
    assert one(samples, family + "_sum", **labels) == pytest.approx(sum(s for _, _, s in observations),
                                                                   rel=1e-9, abs=1e-12), family
    # every bucket: cumulative count of observations <= le
    for lab, v in samples[family + "_bucket"]:
        le = float(lab["le"])
        assert v == sum(w for x, w, _ in observations if x <= le), (family, le)


def test_vllm_histograms_equal_the_trace():
    with SimThread("tensorfold-exl3", time_scale=0.05) as sim:
        asyncio.run(drive(sim, n_parallel=20))  # 20 > max_parallel 16: some requests queue
        # the cancelled stream finishes on the server shortly after the client leaves
        for _ in range(200):
            recs = trace(sim)
            if all(r["status"] != "running" for r in recs):
                break
            asyncio.run(asyncio.sleep(0.02))
        samples = scrape(sim)
    done = [r for r in recs if r["status"] != "error"]
    assert len(done) == 23 and sum(r["status"] == "error" for r in recs) == 1
    assert any(r["queued_s"] > 0.001 for r in done), "nothing queued: the queue histogram would be trivial"
    obs = expected(recs)
    lab = {"model_name": MODEL, "engine": "0"}
    for family, q in (("vllm:time_to_first_token_seconds", "ttft"), ("vllm:request_queue_time_seconds", "queue"),
                      ("vllm:request_prefill_time_seconds", "prefill"),
                      ("vllm:request_decode_time_seconds", "decode"), ("vllm:e2e_request_latency_seconds", "e2e"),
                      ("vllm:inter_token_latency_seconds", "itl"),
                      ("vllm:request_time_per_output_token_seconds", "tpot")):
        check_histogram(samples, family, obs[q], lab)
    assert one(samples, "vllm:inter_token_latency_seconds_count", **lab) > 400
    # finish reasons: the 20 streams and 2 chats end by length or stop, the one left early is an abort
    reasons = {r: one(samples, "vllm:request_success_total", finished_reason=r) for r in ("stop", "length", "abort")}
    want = {"stop": sum(r["status"] == "ok" and r["finish_reason"] != "length" for r in done),
            "length": sum(r["status"] == "ok" and r["finish_reason"] == "length" for r in done),
            "abort": sum(r["status"] != "ok" for r in done)}
    assert reasons == want and want["abort"] == 1
    assert one(samples, "vllm:prompt_tokens_total", **lab) == sum(r["prompt_tokens"] for r in done)
    assert one(samples, "vllm:generation_tokens_total", **lab) >= sum(r["completion_tokens"] for r in done)
    assert one(samples, "vllm:request_generation_tokens_sum", **lab) == sum(r["completion_tokens"] for r in done)
    assert one(samples, "vllm:num_preemptions_total", **lab) == 0
    info = samples["vllm:cache_config_info"][0][0]
    assert int(info["block_size"]) == 256 and int(info["num_gpu_blocks"]) * 256 >= 1_048_576
    src = {lab_["source"]: v for lab_, v in samples["vllm:prompt_tokens_by_source_total"]}
    assert src["local_compute"] + src["local_cache_hit"] == one(samples, "vllm:prompt_tokens_total")


def test_sglang_histograms_equal_the_trace_with_coalesced_chunks():
    # lane B has a prefix cache; 3 tokens per chunk: SGLang spreads each gap over the chunk's tokens
    with SimThread("sglang-native", time_scale=0.05, tokens_per_chunk=3) as sim:
        asyncio.run(drive(sim, n_parallel=4, extra_cancel=False))
        with OpenAI(base_url=sim.base_url, api_key="x", max_retries=0) as c:
            prompt = "Summarize: " + "the lanes race along the shore. " * 200
            for _ in range(2):  # the repeat hits the prefix cache
                c.completions.create(model=MODEL, prompt=prompt, max_tokens=4)
        recs = trace(sim)
        samples = scrape(sim)
    obs = expected(recs, sglang=True)
    lab = {"model_name": MODEL}
    for family, q in (("sglang:time_to_first_token_seconds", "ttft"), ("sglang:queue_time_seconds", "queue"),
                      ("sglang:e2e_request_latency_seconds", "e2e"), ("sglang:inter_token_latency_seconds", "itl")):
        check_histogram(samples, family, obs[q], lab)
    assert any(w > 1 for _, w, _ in obs["itl"]), "no coalesced chunk: the weighting is untested"
    done = [r for r in recs if r["status"] == "ok"]
    assert one(samples, "sglang:cached_tokens_total", cache_source="device") == sum(r["cached_tokens"] for r in done)
    assert sum(r["cached_tokens"] for r in done) > 1000
    assert one(samples, "sglang:num_requests_total") == len(done)
