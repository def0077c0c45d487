"""``GET /metrics`` of a simulated lane, in its engine's Prometheus naming, latency histograms included.

* ``tensorfold-exl3`` (lane A) speaks **vLLM's** names.  TensorFold advertises
  a vLLM-compatible ``/metrics``; exposing vLLM names for it is *our* choice
  (docs/SERVER_METRICS.md), and it also exercises lanemon's vLLM mapping.
* ``sglang-native`` (lane B) speaks **SGLang's** names.

Gauges and token counters are the scheduler's truth (:class:`lanemon.sim.engine.Lane`)
at the moment of the scrape:

==========================  =============================================
running                     ``lane.active`` (admitted streams)
waiting                     ``lane.waiting`` (queued for a slot)
prompt tokens (counter)     every admitted request's prompt length
generation tokens (counter) every token the scheduler released
KV usage (0..1)             ``lane.kv_tokens / profile.context_len``: the
                            tokens admitted streams hold (prompt +
                            generated so far) over a KV pool sized to one
                            full context
prefix cache                cached prompt tokens (only lane B has a cache)
==========================  =============================================

The histograms are filled from the ground-truth trace record of every request
the scheduler admitted, when it finishes (``Lane.on_finish``), with the times the
simulator itself wrote (:data:`HISTOGRAMS` says which quantity each family holds):

* TTFT = ``ttft_s`` (arrival to the first token-carrying chunk written);
* queue = ``queued_s`` (waiting for one of ``max_parallel`` slots);
* prefill = ``ttft_s - queued_s``; decode = last token write - first token write;
  inference = prefill + decode; e2e = ``e2e_s``;
* inter-token latency: one observation per gap between token-carrying chunks
  (vLLM observes once per engine step; SGLang spreads a gap over the chunk's tokens,
  as its collector does);
* per-request time per output token = decode / (completion tokens - 1).

Requests refused before admission (HTTP 400, injected HTTP errors) never reach
the engine and are not counted.  A request that ended without finishing (client
went away, server shut down) counts as ``finished_reason="abort"``.  The simulator
never preempts: ``num_preemptions`` stays 0.

The text is produced by ``prometheus_client`` itself (what vLLM and SGLang use),
so it is the real exposition format.  Never imports ``textual``.
"""

from __future__ import annotations

import bisect
import math
import time
from typing import Any, Iterator, NamedTuple

from prometheus_client.core import (CollectorRegistry, CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily)
from prometheus_client.exposition import generate_latest
from starlette.requests import Request
from starlette.responses import Response

from .engine import per_stream_rate

#: What vLLM and SGLang send (text format 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: Which naming each profile speaks (a profile not listed has no /metrics: 404).
ENGINE_NAMING = {"tensorfold-exl3": "vllm", "sglang-native": "sglang"}

# Bucket bounds as the engines define them (vLLM v1 metrics/loggers.py, SGLang metrics/collector.py).
_VLLM_TTFT = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
              40.0, 80.0, 160.0, 640.0, 2560.0)
_VLLM_TOKEN = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
               80.0)
_VLLM_REQUEST = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
                 480.0, 960.0, 1920.0, 7680.0)
_SGL_TTFT = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
_SGL_E2E = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600, 1200, 1800, 2400)
_SGL_ITL = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080, 0.100,
            0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000)
_SGL_QUEUE = (0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500)


def _buckets_1_2_5(max_value: int) -> tuple[float, ...]:
    """1, 2, 5, 10, 20, 50, ... up to *max_value* (vLLM's token-count buckets)."""
    out, exp = [], 0
    while True:
        for m in (1, 2, 5):
            v = m * 10 ** exp
            if v > max_value:
                return tuple(out)
            out.append(v)
        exp += 1


#: (naming, key) -> (family name, help, quantity).  Quantity names are the fields of :class:`RequestTimes`.
HISTOGRAMS: dict[str, list[tuple[str, str, str, tuple[float, ...] | None]]] = {
    "vllm": [
        ("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", "ttft", _VLLM_TTFT),
        ("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", "itl", _VLLM_TOKEN),
        ("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.",
         "tpot", _VLLM_TOKEN),
        ("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", "e2e", _VLLM_REQUEST),
        ("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", "queue",
         _VLLM_REQUEST),
        ("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.",
         "inference", _VLLM_REQUEST),
        ("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", "prefill",
         _VLLM_REQUEST),
        ("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", "decode",
         _VLLM_REQUEST),
        ("vllm:request_prompt_tokens", "Number of prefill tokens processed.", "prompt_tokens", None),
        ("vllm:request_generation_tokens", "Number of generation tokens processed.", "generation_tokens", None),
    ],
    "sglang": [
        ("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", "ttft", _SGL_TTFT),
        ("sglang:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", "itl", _SGL_ITL),
        ("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", "e2e",
         _SGL_E2E),
        ("sglang:queue_time_seconds", "Histogram of queueing time in seconds.", "queue", _SGL_QUEUE),
    ],
}


class Histogram:
    """A cumulative Prometheus histogram: per-bucket counts, sum, count."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = tuple(float(b) for b in bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float, weight: int = 1, sum_part: float | None = None) -> None:
        """*weight* observations of *value*; the sum grows by ``sum_part`` (default ``value * weight``)."""
        self.counts[bisect.bisect_left(self.bounds, value)] += weight
        self.count += weight
        self.sum += value * weight if sum_part is None else sum_part

    def cumulative(self) -> list[tuple[str, float]]:
        out, acc = [], 0
        for b, c in zip(self.bounds + (math.inf,), self.counts):
            acc += c
            out.append(("+Inf" if b == math.inf else repr(b), float(acc)))
        return out


class RequestTimes(NamedTuple):
    """The server-side durations of one finished request (seconds; None where it does not apply) and its token
    counts: the quantities the histograms of :data:`HISTOGRAMS` observe (read by name)."""

    e2e: float | None
    queue: float | None
    ttft: float | None
    prefill: float | None
    decode: float | None
    inference: float | None
    tpot: float | None
    itl: list[tuple[float, int]]
    """``(gap, tokens in the chunk that ended it)`` per chunk after the first."""
    prompt_tokens: int | None
    generation_tokens: int


def request_times(rec: dict) -> RequestTimes:
    """The server-side durations of one finished trace record."""
    ttft, queued = rec.get("ttft_s"), rec.get("queued_s")
    times = list(rec.get("token_times_s") or ())
    n = rec.get("completion_tokens") or 0
    if ttft is None or queued is None:
        return RequestTimes(rec.get("e2e_s"), queued, ttft, None, None, None, None, [], rec.get("prompt_tokens"), n)
    prefill = max(0.0, ttft - queued)
    decode = max(0.0, times[-1] - times[0]) if times else 0.0
    chunks = list(rec.get("chunk_tokens") or ())
    if len(chunks) != len(times):
        chunks = [1] * len(times)
    return RequestTimes(e2e=rec.get("e2e_s"), queue=queued, ttft=ttft, prefill=prefill, decode=decode,
                        inference=prefill + decode, tpot=decode / (n - 1) if n > 1 else None,
                        itl=[(b - a, max(1, k)) for a, b, k in zip(times, times[1:], chunks[1:])],
                        prompt_tokens=rec.get("prompt_tokens"), generation_tokens=n)


def finished_reason(rec: dict) -> str:
    """vLLM's ``finished_reason`` label: stop, length or abort (tool calls stop)."""
    if rec.get("status") != "ok":
        return "abort"
    return "length" if rec.get("finish_reason") == "length" else "stop"


class LaneMetrics:
    """The histograms and per-request counters of one lane, fed by ``Lane.on_finish``."""

    def __init__(self, naming: str, context_len: int) -> None:
        self.naming = naming
        self.hists: dict[str, Histogram] = {}
        for name, _doc, _q, bounds in HISTOGRAMS[naming]:
            self.hists[name] = Histogram(bounds if bounds is not None else _buckets_1_2_5(context_len))
        self.success: dict[str, int] = {"stop": 0, "length": 0, "abort": 0}
        self.finished = 0
        self.base: dict[str, float] = {}
        """The scheduler's token and request totals at the last restart (counters read from zero after)."""
        self.restarts: list[float] = []
        """``time.perf_counter()`` of every restart (fault ``restart``): the trace's clock."""
        self.start_time = time.time()
        """The engine process's ``process_start_time_seconds`` (Unix seconds, as prometheus_client's process
        collector exports it for vLLM and SGLang): set again at every restart."""

    def observe(self, rec: dict) -> None:
        """Count one finished trace record (once; requests never admitted are not the engine's)."""
        if rec.get("_observed") or rec.get("prompt_tokens") is None or rec.get("status") in ("error", "running"):
            return
        rec["_observed"] = True
        self.finished += 1
        self.success[finished_reason(rec)] += 1
        q = request_times(rec)
        for name, _doc, quantity, _b in HISTOGRAMS[self.naming]:
            h = self.hists[name]
            if quantity == "itl":
                for gap, k in q.itl:
                    if self.naming == "sglang":  # SGLang: the gap spread over the chunk's tokens
                        h.observe(gap / k, k, gap)
                    else:
                        h.observe(gap)
            elif getattr(q, quantity) is not None:
                h.observe(getattr(q, quantity))


def restart(state: Any) -> None:
    """The engine restarts (fault ``restart``): every counter and histogram of ``/metrics`` starts from zero
    again, as a restarted vLLM's or SGLang's do; requests already running still finish and count after."""
    m = metrics_of(state)
    m.base = {k: v + m.base.get(k, 0.0) for k, v in _snapshot(state, m).items() if k in _COUNTERS}
    m.hists = {name: Histogram(h.bounds) for name, h in m.hists.items()}
    m.success = dict.fromkeys(m.success, 0)
    m.finished = 0
    m.restarts.append(time.perf_counter())
    # a new process, started later than the old one (by a second at least: restarts here take no time at all)
    m.start_time = max(time.time(), m.start_time + 1.0)


_COUNTERS = ("prompt", "generation", "cached", "admitted")


def metrics_of(state: Any) -> LaneMetrics:
    """The lane's :class:`LaneMetrics`, created (and hooked to the scheduler) on first use."""
    m = getattr(state, "server_metrics", None)
    if m is None:
        m = LaneMetrics(ENGINE_NAMING.get(state.profile.name, "vllm"), state.profile.context_len)
        state.server_metrics = m
        state.lane.on_finish = m.observe
    return m


class _SimCollector:
    """A prometheus_client collector reading one SimState on every scrape."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def describe(self) -> list:  # no auto-describe (it would call collect at registration)
        return []

    def collect(self) -> Iterator[Any]:
        st = self.state
        m = metrics_of(st)
        yield from (_vllm if m.naming == "vllm" else _sglang)(st, m)


def _snapshot(st: Any, m: LaneMetrics | None = None) -> dict[str, float]:
    lane, p = st.lane, st.profile
    base = m.base if m is not None else {}
    v = {
        "running": float(lane.active),
        "waiting": float(lane.waiting),
        "prompt": float(lane.prompt_tokens_total),
        "generation": float(lane.generation_tokens_total),
        "cached": float(lane.cached_tokens_total),
        "kv": min(1.0, lane.kv_tokens / p.context_len) if p.context_len else 0.0,
        "admitted": float(lane.requests_admitted),
    }
    for k, b in base.items():
        v[k] -= b
    return v


def _histograms(m: LaneMetrics, labels: list[str], values: list[str]) -> Iterator[Any]:
    for name, doc, _q, _b in HISTOGRAMS[m.naming]:
        h = m.hists[name]
        fam = HistogramMetricFamily(name, doc, labels=labels)
        fam.add_metric(values, h.cumulative(), h.sum)
        yield fam


def _vllm(st: Any, m: LaneMetrics) -> Iterator[Any]:
    v = _snapshot(st, m)
    p = st.profile
    labels = ["engine", "model_name"]
    values = ["0", p.models[0]]

    def gauge(name: str, doc: str, x: float) -> GaugeMetricFamily:
        g = GaugeMetricFamily(name, doc, labels=labels)
        g.add_metric(values, x)
        return g

    def counter(name: str, doc: str, x: float) -> CounterMetricFamily:
        c = CounterMetricFamily(name, doc, labels=labels)
        c.add_metric(values, x)
        return c

    yield gauge("vllm:num_requests_running", "Number of requests in model execution batches.", v["running"])
    yield gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", v["waiting"])
    yield gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", v["kv"])
    info = GaugeMetricFamily("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                             labels=["block_size", "num_gpu_blocks", "enable_prefix_caching", "engine"])
    info.add_metric([str(p.cache_block_tokens), str(-(-p.context_len // p.cache_block_tokens)),
                     str(bool(p.prefix_cache)), "0"], 1.0)
    yield info
    yield counter("vllm:prompt_tokens", "Number of prefill tokens processed.", v["prompt"])
    yield counter("vllm:generation_tokens", "Number of generation tokens processed.", v["generation"])
    src = CounterMetricFamily("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.",
                              labels=labels + ["source"])
    for source, x in (("local_compute", v["prompt"] - v["cached"]), ("local_cache_hit", v["cached"]),
                      ("external_kv_transfer", 0.0)):
        src.add_metric(values + [source], x)
    yield src
    yield counter("vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external).", v["cached"])
    yield counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", 0.0)
    ok = CounterMetricFamily("vllm:request_success", "Count of successfully processed requests.",
                             labels=labels + ["finished_reason"])
    for reason, n in m.success.items():
        ok.add_metric(values + [reason], float(n))
    yield ok
    if p.prefix_cache:
        yield counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
                      v["prompt"])
        yield counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
                      v["cached"])
    yield from _histograms(m, labels, values)
    yield _process_start(m)


def _process_start(m: LaneMetrics) -> GaugeMetricFamily:
    g = GaugeMetricFamily("process_start_time_seconds", "Start time of the process since unix epoch in seconds.")
    g.add_metric([], m.start_time)
    return g


def _sglang(st: Any, m: LaneMetrics) -> Iterator[Any]:
    v = _snapshot(st, m)
    lane, p = st.lane, st.profile
    labels = ["model_name"]
    values = [p.models[0]]

    def gauge(name: str, doc: str, x: float) -> GaugeMetricFamily:
        g = GaugeMetricFamily(name, doc, labels=labels)
        g.add_metric(values, x)
        return g

    # SGLang's gen_throughput is the decode rate its scheduler measured last;
    # ours is the rate the scheduler is running at now: every decoding stream's
    # per-stream rate at the current concurrency, in wall-clock tok/s.
    gen_tps = 0.0
    if lane.decoding:
        gen_tps = lane.decoding * per_stream_rate(p, "default", lane.decoding) / st.time_scale
    yield gauge("sglang:num_running_reqs", "The number of running requests.", v["running"])
    yield gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", v["waiting"])
    yield gauge("sglang:num_used_tokens", "The number of used tokens.", float(lane.kv_tokens))
    yield gauge("sglang:token_usage", "The token usage.", v["kv"])
    yield gauge("sglang:max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.",
                float(p.context_len))
    yield gauge("sglang:gen_throughput", "The generation throughput (token/s).", gen_tps)
    hit = v["cached"] / v["prompt"] if v["prompt"] else 0.0
    yield gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", hit)
    for name, doc, x in (
        ("sglang:prompt_tokens", "Number of prefill tokens processed.", v["prompt"]),
        ("sglang:generation_tokens", "Number of generation tokens processed.", v["generation"]),
        ("sglang:num_requests", "Number of requests processed.", v["admitted"]),
        ("sglang:num_aborted_requests", "Number of requests aborted.", float(m.success["abort"])),
    ):
        c = CounterMetricFamily(name, doc, labels=labels)
        c.add_metric(values, x)
        yield c
    if p.prefix_cache:
        c = CounterMetricFamily("sglang:cached_tokens", "Number of cached prompt tokens.",
                                labels=["model_name", "cache_source"])
        c.add_metric([p.models[0], "device"], v["cached"])
        yield c
    yield from _histograms(m, labels, values)
    yield _process_start(m)


def render(state: Any) -> bytes:
    """The exposition text of one lane (``prometheus_client`` text format 0.0.4)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_SimCollector(state))
    return generate_latest(registry)


def routes(state: Any) -> list:
    """``[Route("/metrics")]`` for a profile that has an engine naming, else ``[]`` (so /metrics is a 404)."""
    from starlette.routing import Route

    if state.profile.name not in ENGINE_NAMING:
        return []
    metrics_of(state)  # observe every request from the start
    return [Route("/metrics", handler(state), methods=["GET"])]


def handler(state: Any):
    """The Starlette endpoint serving :func:`render` for ``state`` (a SimState)."""

    async def metrics(request: Request) -> Response:
        return Response(render(state), media_type=CONTENT_TYPE)

    return metrics
