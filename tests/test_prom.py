"""Server metrics: the Prometheus parser, the vLLM/SGLang name mapping, rates, the scraper,
and the simulator's /metrics checked against the scheduler's own truth."""

from __future__ import annotations

import asyncio
import time
import math

import httpx
import pytest

from lanemon.config import LaneConfig, ProbeConfig
from lanemon.client import prom
from lanemon.client.prom import MetricsScraper, PromParseError, RateTracker, map_engine, metrics_url, parse, scrape_data
from lanemon.results.readings import EngineMetrics, Rates, engine_metrics, read
from lanemon import events as schema
from lanemon.events import Clock
from lanemon.sessions.sources import LiveSession
from lanemon.sim import metrics_endpoint
from lanemon.sim.server import SimThread
from lanemon.folds.dashboard import SessionState

# A vLLM V1 exposition as the server sends it (prometheus_client output), trimmed, with
# a histogram, _created samples, two data-parallel engines, a label value with escaped
# quotes/backslash/newline, NaN/+Inf and an explicit timestamp.
VLLM_TEXT = r"""# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 12345.0
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
vllm:num_requests_running{engine="1",model_name="Qwen/Qwen3-8B"} 2.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen3-8B"} 1.0
vllm:num_requests_waiting{engine="1",model_name="Qwen/Qwen3-8B"} 0.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen3-8B"} 0.4215
vllm:kv_cache_usage_perc{engine="1",model_name="Qwen/Qwen3-8B"} 0.12
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen3-8B"} 10000.0
vllm:prefix_cache_queries_total{engine="1",model_name="Qwen/Qwen3-8B"} 0.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 2500.0
vllm:prefix_cache_hits_total{engine="1",model_name="Qwen/Qwen3-8B"} 0.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"} 1.2e+04
vllm:prompt_tokens_total{engine="1",model_name="Qwen/Qwen3-8B"} 0.0
vllm:prompt_tokens_created{engine="0",model_name="Qwen/Qwen3-8B"} 1.7464e+09
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen3-8B"} 34567.0 1746400000000
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="Qwen/Qwen3-8B"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="Qwen/Qwen3-8B"} 40.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 42.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 42.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 9.87
# HELP vllm:request_params_n Summary of n.
# TYPE vllm:request_params_n summary
vllm:request_params_n{quantile="0.5"} NaN
vllm:request_params_n_sum 0.0
vllm:request_params_n_count 0.0
# HELP vllm:lora_requests_info Running stats on lora requests.
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="1",running_lora_adapters="a \"quoted\" \\ name\nline2",waiting_lora_adapters=""} 1.7e+09
"""

# SGLang's exposition (names from docs.sglang.io "Production Metrics"), two DP ranks.
SGLANG_TEXT = """# HELP sglang:prompt_tokens_total Number of prefill tokens processed.
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="0"} 8.128902e+06
sglang:prompt_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="1"} 1.0e+06
# HELP sglang:generation_tokens_total Number of generation tokens processed.
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="0"} 7.557572e+06
# HELP sglang:token_usage The token usage
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="0"} 0.28
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="1"} 0.61
# HELP sglang:cache_hit_rate The cache hit rate
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="0"} 0.007507552643049313
# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="0"} 7.0
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="1"} 5.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="0"} 3.0
# HELP sglang:gen_throughput The generation throughput (token/s).
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{model_name="meta-llama/Llama-3.1-8B-Instruct",dp_rank="0"} 355.2
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_sum{model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.3518979474117756e+06
sglang:time_to_first_token_seconds_bucket{le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 11008.0
sglang:time_to_first_token_seconds_count{model_name="meta-llama/Llama-3.1-8B-Instruct"} 11008.0
"""

# An older vLLM (V0 names).
VLLM_V0_TEXT = """# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 1.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 4.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.93
# TYPE vllm:gpu_prefix_cache_hit_rate gauge
vllm:gpu_prefix_cache_hit_rate{model_name="m"} 0.25
"""


# -- parser -----------------------------------------------------------------------


def test_parser_reads_vllm_exposition_with_edge_cases():
    s = parse(VLLM_TEXT)
    assert s["vllm:num_requests_running"] == [({"engine": "0", "model_name": "Qwen/Qwen3-8B"}, 3.0),
                                              ({"engine": "1", "model_name": "Qwen/Qwen3-8B"}, 2.0)]
    assert s["vllm:prompt_tokens_total"][0][1] == 12000.0  # 1.2e+04
    assert s["vllm:generation_tokens_total"] == [({"engine": "0", "model_name": "Qwen/Qwen3-8B"}, 34567.0)]
    buckets = {labels["le"]: v for labels, v in s["vllm:time_to_first_token_seconds_bucket"]}
    assert buckets == {"0.001": 0.0, "0.5": 40.0, "+Inf": 42.0}
    assert s["vllm:time_to_first_token_seconds_sum"][0][1] == pytest.approx(9.87)
    assert s["vllm:time_to_first_token_seconds_count"][0][1] == 42.0
    assert math.isnan(s["vllm:request_params_n"][0][1])
    labels, _ = s["vllm:lora_requests_info"][0]
    assert labels["running_lora_adapters"] == 'a "quoted" \\ name\nline2'
    assert labels["waiting_lora_adapters"] == ""
    types = prom.families(VLLM_TEXT)
    assert types["vllm:time_to_first_token_seconds"] == "histogram"
    assert types["vllm:request_params_n"] == "summary"
    assert types["vllm:prompt_tokens"] == "counter"


def test_parser_handles_inf_untyped_and_blank_lines():
    s = parse("\n# a free comment\nfoo -Inf\nbar{a=\"x\"} +Inf 123\n\nbaz 1e-3\n")
    assert s["foo"][0][1] == -math.inf and s["bar"][0][1] == math.inf and s["baz"][0][1] == 0.001


@pytest.mark.parametrize("text", [
    "<html><body>Not found</body></html>",
    'foo{a="unterminated} 1\n',
    "foo{a=1} 1\n",
    "foo 1 abc\n",
    "foo notanumber\n",
])
def test_parser_rejects_malformed(text):
    with pytest.raises(PromParseError):
        parse(text)


# -- mapping ----------------------------------------------------------------------


def test_vllm_mapping_sums_engines_and_takes_fullest_kv():
    m = map_engine(parse(VLLM_TEXT))
    assert m.engine == "vllm"
    assert m.running == 5 and m.waiting == 1
    assert m.kv_usage == pytest.approx(0.4215)
    assert m.prompt_tokens_total == 12000.0
    assert m.generation_tokens_total == 34567.0
    assert m.prefix_hits_total == 2500.0 and m.prefix_queries_total == 10000.0
    # first scrape: cumulative hit ratio; no rates yet
    assert RateTracker().update(1_000_000_000, m) == Rates(prefix_hit_rate=0.25)


def test_sglang_mapping():
    m = map_engine(parse(SGLANG_TEXT))
    assert m.engine == "sglang"
    assert m.running == 12 and m.waiting == 3
    assert m.kv_usage == pytest.approx(0.61)
    assert m.prompt_tokens_total == pytest.approx(9_128_902)
    assert m.generation_tokens_total == pytest.approx(7_557_572)
    assert m.gen_throughput == pytest.approx(355.2)
    assert RateTracker().update(1, m).prefix_hit_rate == pytest.approx(0.007507552643049313)


def test_old_vllm_names():
    m = map_engine(parse(VLLM_V0_TEXT))
    assert (m.engine, m.running, m.waiting, m.kv_usage) == ("vllm", 1, 4, 0.93)
    assert RateTracker().update(1, m).prefix_hit_rate == 0.25


def test_unknown_exposition_maps_to_nothing():
    assert map_engine(parse("process_cpu_seconds_total 12.5\nhttp_requests_total{code=\"200\"} 4\n")) is None


def test_rates_from_counters_and_reset():
    r = RateTracker()
    assert r.update(0, EngineMetrics(engine="vllm", prompt_tokens_total=100.0, generation_tokens_total=50.0)) == Rates()
    out = r.update(2_000_000_000, EngineMetrics(engine="vllm", prompt_tokens_total=900.0, generation_tokens_total=450.0,
                                                 prefix_hits_total=10.0, prefix_queries_total=20.0))
    assert out.prompt_tok_s == pytest.approx(400.0) and out.gen_tok_s == pytest.approx(200.0)
    assert out.prefix_hit_rate in (None, 0.5)  # first time the cache counters appear
    out = r.update(3_000_000_000, EngineMetrics(engine="vllm", prompt_tokens_total=1000.0, generation_tokens_total=30.0,
                                                 prefix_hits_total=40.0, prefix_queries_total=60.0))
    assert out.prompt_tok_s == pytest.approx(100.0)
    assert out.gen_tok_s == pytest.approx(30.0)  # reset: the increase is the new value (Prometheus rate())
    assert out.prefix_hit_rate == pytest.approx(30 / 40)


@pytest.mark.parametrize("url,expected", [
    ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/metrics"),
    ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/metrics"),
    ("https://gw.example/lanes/a/v1?x=1", "https://gw.example/lanes/a/metrics"),
    ("http://[::1]:30000/openai", "http://[::1]:30000/metrics"),
])
def test_metrics_url(url, expected):
    assert metrics_url(url) == expected


# -- scraper ----------------------------------------------------------------------


def _scraper(handler) -> tuple[MetricsScraper, list]:
    events: list = []
    http = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return MetricsScraper("X", "http://lane.test/v1", http, clock=Clock(), emit=events.append), events


async def test_scraper_404_is_final_and_quiet():
    scraper, events = _scraper(lambda req: httpx.Response(404, text="no route"))
    data = await scraper.scrape()
    assert scraper.available is False
    assert data.available is False and data.status == 404
    assert [e.kind for e in events] == [schema.SERVER_METRICS]
    st = SessionState()
    st.apply(events[0])
    assert st.lane("X").server.available is False and not st.lane("X").errors  # nothing in the lane's error log


async def test_scraper_non_prometheus_body_is_final_and_5xx_is_retried():
    scraper, _ = _scraper(lambda req: httpx.Response(200, text="<html>dashboard</html>"))
    assert (await scraper.scrape()).cls == schema.ERR_MALFORMED and scraper.available is False
    scraper, _ = _scraper(lambda req: httpx.Response(503, text="busy"))
    data = await scraper.scrape()
    assert data.ok is False and data.status == 503 and scraper.available is True


async def test_scraper_maps_and_rates():
    bodies = iter([VLLM_TEXT, VLLM_TEXT.replace("34567.0 1746400000000", "34667.0")])
    seen = []

    def handler(req):
        seen.append(str(req.url))
        return httpx.Response(200, text=next(bodies), headers={"content-type": "text/plain; version=0.0.4"})

    scraper, events = _scraper(handler)
    first = await scraper.scrape()
    await asyncio.sleep(0.05)
    second = await scraper.scrape()
    assert seen == ["http://lane.test/metrics"] * 2
    assert first.ok and first.metrics.engine == "vllm" and first.rates.gen_tok_s is None
    assert second.rates.gen_tok_s > 0 and second.rates.prompt_tok_s == 0.0
    assert [e.data for e in events] == [scrape_data(first), scrape_data(second)]
    assert "gen_tok_s" not in events[0].data and events[1].data["gen_tok_s"] == second.rates.gen_tok_s


async def test_live_session_stops_scraping_a_lane_without_metrics(monkeypatch):
    monkeypatch.setattr(metrics_endpoint, "ENGINE_NAMING", {})  # this sim serves no /metrics
    with SimThread("tensorfold-exl3", time_scale=0.05) as sim:
        session = LiveSession([LaneConfig("A", sim.base_url)], probe=ProbeConfig(interval=0.05, enabled=False),
                              metrics_interval=0.05)
        events = []
        session.bus.subscribe(lambda e: events.append(e) if e.kind == schema.SERVER_METRICS else None)
        task = asyncio.create_task(session.run())
        await asyncio.sleep(0.6)
        session.stop()
        await task
    assert len(events) == 1 and events[0].data["status"] == 404


# -- the simulator's /metrics against its scheduler -----------------------------------


def _truth(trace: list[dict]) -> dict:
    running = [r for r in trace if r["status"] == "running"]
    return {
        "running": sum(1 for r in running if r["queued_s"] is not None),
        "waiting": sum(1 for r in running if r["queued_s"] is None),
        "prompt": sum(r["prompt_tokens"] or 0 for r in trace),
        "cached": sum(r["cached_tokens"] or 0 for r in trace),
        "completion": sum(r["completion_tokens"] or 0 for r in trace),
    }


@pytest.mark.parametrize("profile,engine", [("tensorfold-exl3", "vllm"), ("sglang-native", "sglang")])
async def test_sim_metrics_match_scheduler_truth(profile, engine):
    n = 20  # more than max_parallel (16): four requests wait
    # time_scale 2: each request stays in the scheduler long enough that all 20 are in it at once even when a
    # busy machine slows the client opening them
    with SimThread(profile, time_scale=2.0) as sim:
        root = sim.root_url
        async with httpx.AsyncClient(timeout=30) as http:
            async def one(i: int) -> None:
                body = {"model": sim.state.profile.models[0], "max_tokens": 40, "stream": True,
                        "messages": [{"role": "user", "content": "Tell a short story about a lighthouse keeper."}]}
                async with http.stream("POST", f"{sim.base_url}/chat/completions", json=body) as resp:
                    async for _ in resp.aiter_bytes():
                        pass

            tasks = [asyncio.create_task(one(i)) for i in range(n)]
            # wait until every request reached the scheduler, then compare a stable scrape with the trace
            mid = None
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                before = _truth((await http.get(f"{root}/sim/trace")).json()["requests"])
                text = (await http.get(f"{root}/metrics")).text
                after = _truth((await http.get(f"{root}/sim/trace")).json()["requests"])
                if before == after and before["running"] + before["waiting"] == n:
                    mid = (before, map_engine(parse(text)))
                    break
                await asyncio.sleep(0.02)
            assert mid is not None, "never saw all requests in the scheduler"
            truth, m = mid
            assert m.engine == engine
            assert (m.running, m.waiting) == (16, 4) == (truth["running"], truth["waiting"])
            assert m.prompt_tokens_total == truth["prompt"]  # counted at admission
            assert 0 < m.kv_usage < 0.01
            await asyncio.gather(*tasks)
            trace = (await http.get(f"{root}/sim/trace")).json()["requests"]
            end = map_engine(parse((await http.get(f"{root}/metrics")).text))
    truth = _truth(trace)
    assert all(r["status"] == "ok" for r in trace)
    assert (end.running, end.waiting, end.kv_usage) == (0, 0, 0.0)
    assert end.prompt_tokens_total == truth["prompt"] == n * trace[0]["prompt_tokens"]
    assert end.generation_tokens_total == truth["completion"] == n * 40
    if engine == "sglang":  # B has a prefix cache: 19 repeats of one prompt hit it
        assert end.prefix_hits_total == truth["cached"] > 0
        assert end.prefix_hit_rate_gauge == pytest.approx(truth["cached"] / truth["prompt"])
    else:  # A has none, and says nothing about one
        assert end.prefix_hits_total is None and truth["cached"] == 0


SGLANG_FULL = """# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs 2.0
sglang:num_queue_reqs 0.0
sglang:token_usage 0.25
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total 400.0
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total 90.0
# TYPE sglang:cached_tokens_total counter
sglang:cached_tokens_total 100.0
sglang:cache_hit_rate 0.25
sglang:gen_throughput 55.5
# TYPE sglang:num_requests_total counter
sglang:num_requests_total 3.0
# TYPE sglang:num_retracted_reqs_total counter
sglang:num_retracted_reqs_total 1.0
sglang:max_total_num_tokens 65536.0
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{le="+Inf"} 3.0
sglang:time_to_first_token_seconds_sum 0.3
sglang:time_to_first_token_seconds_count 3.0
"""


def test_a_scrape_event_holds_the_figures_in_the_recordings_order_and_decodes_back():
    """A scrape is typed (ServerScrape, EngineMetrics, Rates) but its event is the JSON recordings always held:
    SGLang's figures in its table's order, the prefix queries it does not export (taken from the prompt tokens)
    after them, then the histograms and the rates.  A reader decoding the event at the edge gets the scrape back."""
    s = MetricsScraper("S", "http://x/v1", None, clock=Clock(), emit=lambda e: None)  # type: ignore[arg-type]
    scrape = s._read(SGLANG_FULL, 1_000_000_000, 0.01)
    data = scrape_data(scrape)
    assert list(data) == ["ok", "latency_s", "engine", "running", "waiting", "kv_usage", "prompt_tokens_total",
                          "generation_tokens_total", "prefix_hits_total", "prefix_hit_rate_gauge", "gen_throughput",
                          "requests_success_total", "preemptions_total", "kv_capacity_tokens", "prefix_queries_total",
                          "ttft_sum", "ttft_count", "prefix_hit_rate"]
    assert data["running"] == 2 and type(data["running"]) is int and data["prefix_queries_total"] == 400.0
    assert engine_metrics(data) == scrape.metrics and read(data, Rates) == scrape.rates
    assert engine_metrics({**data, "ok": False}) is None and engine_metrics({**data, "running": "2"}) is None
