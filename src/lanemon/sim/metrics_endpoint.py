"""``GET /metrics`` of a simulated lane, in its engine's Prometheus naming.

* ``tensorfold-exl3`` (lane A) speaks **vLLM's** names.  TensorFold advertises
  a vLLM-compatible ``/metrics``; exposing vLLM names for it is *our* choice
  (docs/SERVER_METRICS.md), and it also exercises lanemon's vLLM mapping.
* ``sglang-native`` (lane B) speaks **SGLang's** names.

Every value is the scheduler's truth (:class:`lanemon.sim.engine.Lane`) at the
moment of the scrape:

==========================  =============================================
running                     ``lane.active`` (admitted streams)
waiting                     ``lane.waiting`` (queued for a slot)
prompt tokens (counter)     every admitted request's prompt length
generation tokens (counter) every token the scheduler released
KV usage (0..1)             ``lane.kv_tokens / profile.context_len``: the
                            tokens admitted streams hold (prompt +
                            generated so far) over a KV pool sized to one
                            full context
prefix cache                B only (A has none): cached prompt tokens;
                            SGLang's ``cache_hit_rate`` is the cumulative
                            cached / prompt token ratio
==========================  =============================================

The text is produced by ``prometheus_client`` itself (what vLLM and SGLang
use), so it is the real exposition format.  Never imports ``textual``.
"""

from __future__ import annotations

from typing import Any, Iterator

from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily
from prometheus_client.exposition import generate_latest
from starlette.requests import Request
from starlette.responses import Response

from .engine import per_stream_rate

#: What vLLM and SGLang send (text format 0.0.4).
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

#: Which naming each profile speaks (a profile not listed has no /metrics: 404).
ENGINE_NAMING = {"tensorfold-exl3": "vllm", "sglang-native": "sglang"}


class _SimCollector:
    """A prometheus_client collector reading one SimState on every scrape."""

    def __init__(self, state: Any) -> None:
        self.state = state

    def describe(self) -> list:  # no auto-describe (it would call collect at registration)
        return []

    def collect(self) -> Iterator[Any]:
        st = self.state
        naming = ENGINE_NAMING.get(st.profile.name, "vllm")
        yield from (_vllm if naming == "vllm" else _sglang)(st)


def _snapshot(st: Any) -> dict[str, float]:
    lane, p = st.lane, st.profile
    return {
        "running": float(lane.active),
        "waiting": float(lane.waiting),
        "prompt": float(lane.prompt_tokens_total),
        "generation": float(lane.generation_tokens_total),
        "cached": float(lane.cached_tokens_total),
        "kv": min(1.0, lane.kv_tokens / p.context_len) if p.context_len else 0.0,
        "admitted": float(lane.requests_admitted),
    }


def _vllm(st: Any) -> Iterator[Any]:
    v = _snapshot(st)
    labels = ["engine", "model_name"]
    values = ["0", st.profile.models[0]]

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
    yield counter("vllm:prompt_tokens", "Number of prefill tokens processed.", v["prompt"])
    yield counter("vllm:generation_tokens", "Number of generation tokens processed.", v["generation"])
    if st.profile.prefix_cache:
        yield counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
                      v["prompt"])
        yield counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
                      v["cached"])


def _sglang(st: Any) -> Iterator[Any]:
    v = _snapshot(st)
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
    yield gauge("sglang:gen_throughput", "The generation throughput (token/s).", gen_tps)
    hit = v["cached"] / v["prompt"] if v["prompt"] else 0.0
    yield gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", hit)
    for name, doc, x in (
        ("sglang:prompt_tokens", "Number of prefill tokens processed.", v["prompt"]),
        ("sglang:generation_tokens", "Number of generation tokens processed.", v["generation"]),
        ("sglang:num_requests", "Number of requests processed.", v["admitted"]),
    ):
        c = CounterMetricFamily(name, doc, labels=labels)
        c.add_metric(values, x)
        yield c
    if p.prefix_cache:
        c = CounterMetricFamily("sglang:cached_tokens", "Number of cached prompt tokens.",
                                labels=["model_name", "cache_source"])
        c.add_metric([p.models[0], "device"], v["cached"])
        yield c


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
    return [Route("/metrics", handler(state), methods=["GET"])]


def handler(state: Any):
    """The Starlette endpoint serving :func:`render` for ``state`` (a SimState)."""

    async def metrics(request: Request) -> Response:
        return Response(render(state), media_type=CONTENT_TYPE)

    return metrics
