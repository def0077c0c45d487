"""What the clients read about a lane and about lanemon itself, typed: a ``/models`` probe, a ``/metrics`` scrape
(the engine's figures in lanemon's vocabulary and the rates between scrapes), a GPU telemetry reading, a host
sample, a window of lanemon's own event loop, a stream's usage block and its end (msgspec Structs).

A producer (client/http.py, client/prom.py, client/telemetry.py, client/host.py, client/loadwatch.py,
client/sse.py) builds one of these; the event it emits carries :func:`event_data` of it, the JSON object recordings
have always held (same keys, same values, same order: a field at its default is left out).  A reader of a recorded
event decodes what it needs at the edge (:func:`read`, :func:`engine_metrics`: a recording's bytes are untrusted, so
one that does not fit is skipped).  Here, below the clients, so the pure readers (measure/, folds/) decode them too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, TypeVar

import msgspec

Num = int | float
"""A figure as the engine exported it: a float from a Prometheus sample, an int where lanemon counted."""


class Reading(msgspec.Struct, omit_defaults=True, kw_only=True):
    """The base: keyword-only, a field at its default left out of the event."""


class ProbeResult(Reading):
    """One ``GET /models`` (a ``probe`` event): which models the lane serves and the one lanemon uses.

    ``ok`` False: ``cls`` and ``message`` say why (``status`` for an HTTP error; ``models`` when the pinned model
    is not among them)."""

    ok: bool
    cls: str | None = None
    status: int | None = None
    latency_s: float | None = None
    models: list[str] | None = None
    model: str | None = None
    max_model_len: int | None = None
    """How long a sequence the model may be (vLLM and SGLang list it)."""
    simulated: bool = False
    """The lane is lanemon's own simulator (reports made from it say so: reports/simulated.py)."""
    simulates: str | None = None
    """The engine the simulator simulates (``tensorfold-exl3``)."""
    model_changed_from: str | None = None
    """The model the lane served before it swapped it under an unpinned lane."""
    message: str | None = None


class EngineMetrics(Reading):
    """One ``/metrics`` scrape in lanemon's vocabulary (client/prom.map_engine; docs/SERVER_METRICS.md): each figure
    only where the engine exports it (None: not exported).  Counters are totals since the engine started."""

    engine: str
    """``vllm`` or ``sglang``: whose names the body spoke."""
    running: Num | None = None
    waiting: Num | None = None
    kv_usage: float | None = None
    """KV cache in use, 0..1."""
    prompt_tokens_total: float | None = None
    generation_tokens_total: float | None = None
    prefix_hits_total: float | None = None
    prefix_queries_total: float | None = None
    prefix_hit_rate_gauge: float | None = None
    gen_throughput: float | None = None
    prompt_tokens_cached_total: float | None = None
    preemptions_total: float | None = None
    requests_success_total: float | None = None
    spec_drafts_total: float | None = None
    spec_draft_tokens_total: float | None = None
    spec_accepted_tokens_total: float | None = None
    spec_accept_length: float | None = None
    # the latency histograms' sums and counts (measure/server.server_timings turns two scrapes into means)
    ttft_sum: float | None = None
    ttft_count: float | None = None
    itl_sum: float | None = None
    itl_count: float | None = None
    tpot_sum: float | None = None
    tpot_count: float | None = None
    e2e_sum: float | None = None
    e2e_count: float | None = None
    queue_sum: float | None = None
    queue_count: float | None = None
    prefill_sum: float | None = None
    prefill_count: float | None = None
    decode_sum: float | None = None
    decode_count: float | None = None
    inference_sum: float | None = None
    inference_count: float | None = None
    prompt_tokens_computed_total: float | None = None
    prompt_tokens_hit_total: float | None = None
    requests_by_finish: dict[str, float] | None = None
    """Finished requests by reason (stop, length, abort ...), at most 16."""
    block_size: int | None = None
    kv_blocks: int | None = None
    kv_capacity_tokens: Num | None = None
    prefix_caching: bool | None = None
    by_engine: dict[str, dict[str, float]] | None = None
    """The rank counters per data-parallel rank (vLLM's ``engine`` label), when there are two or more."""
    lora_running: list[str] | None = None
    lora_waiting: list[str] | None = None
    lora_max: int | None = None
    process_start_s: float | None = None
    """The engine process's start (Unix seconds): a changed value is a restart (measure/restarts.py)."""


class Rates(Reading):
    """Figures derived from two consecutive scrapes of one lane (client/prom.RateTracker)."""

    prompt_tok_s: float | None = None
    gen_tok_s: float | None = None
    prompt_compute_tok_s: float | None = None
    """Prefill actually computed (prefix cache hits apart)."""
    prefix_hit_rate: float | None = None


class ServerScrape(Reading):
    """One ``/metrics`` scrape of a lane (a ``server_metrics`` event): the engine's figures and the rates since the
    last scrape beside ``ok`` in the event, or why there are none (``available`` False: scraping stops)."""

    SPLICED: ClassVar[tuple[str, ...]] = ("metrics", "rates")

    ok: bool
    available: bool = True
    status: int | None = None
    cls: str | None = None
    message: str | None = None
    latency_s: float | None = None
    metrics: EngineMetrics | None = None
    rates: Rates | None = None
    dropped: int = 0
    """Numbers left out: not finite, or past what a float holds exactly (measure/bounds.clean_numbers)."""
    parse_s: float | None = None
    """From the answer to the event: the figures are as of the event time less this."""


class GpuReading(Reading):
    """One GPU of a telemetry reading (docs/GPU.md): what it reported (None: not reported)."""

    gpu: str
    uuid: str | None = None
    model: str | None = None
    host: str | None = None
    util_pct: float | None = None
    power_w: float | None = None
    energy_mj: float | None = None
    """The device's energy counter since boot, millijoules."""
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    temp_c: float | None = None
    fb_used_mib: float | None = None
    fb_free_mib: float | None = None
    reasons: int | None = None
    """The clock-event bitmask."""
    xid: int | None = None
    dropped: int = 0
    """Values not physically possible (counted in the reading's ``dropped``, never in the event's GPU)."""
    unified: bool | None = None
    """No framebuffer figure reported: unified memory (the GB10's), shown as "unified", never as 0."""
    throttle: list[str] | None = None


class Telemetry(Reading):
    """One GPU telemetry reading of a lane (a ``gpu`` event): host-level sums and each GPU, or why there are none."""

    ok: bool
    available: bool = True
    cls: str | None = None
    status: int | None = None
    gpu_count: int | None = None
    power_w: float | None = None
    """Summed over the GPUs that reported one."""
    energy_mj: float | None = None
    """Summed only when every GPU has a counter."""
    dropped: int = 0
    gpus: list[GpuReading] | None = None
    message: str | None = None
    source: str | None = None
    """``dcgm`` or ``nvml``."""
    latency_s: float | None = None
    parse_s: float | None = None


class HostSample(Reading):
    """One sample of the machine lanemon runs on (a ``host`` event; client/host.py): rates are absent on the first."""

    cpu_pct: float
    cpus: int
    load1: float | None = None
    mem_total: int | None = None
    mem_used: int | None = None
    mem_pct: float | None = None
    net_rx_Bps: float | None = None
    net_tx_Bps: float | None = None
    proc_cpu_pct: float | None = None
    proc_rss: int | None = None
    gpus: list[GpuReading] | None = None


class LoopWindow(Reading):
    """One window of lanemon's own event loop (a ``client_load`` event; client/loadwatch.py): how late its sleeps
    woke, the run-queue wait where the kernel says it, and the machine's CPU."""

    t0: int
    """Where the window (or its starved stretch) began, ns on the session clock."""
    lag_ms: float
    lag_mean_ms: float
    samples: int
    bound: bool
    """lanemon was starved in this window: its figures are client-bound."""
    threshold_ms: float
    runq_ms: float | None = None
    runq_slices: int | None = None
    cpu_pct: float | None = None
    proc_cpu_pct: float | None = None
    steal_pct: float | None = None
    worker: int | None = None
    """The worker process whose loop this is (``bench load --workers``: it timed the sends it made); absent: the
    main process's."""


class Usage(Reading):
    """A stream's usage block (a ``usage`` event): its integer counts; ``malformed`` names the first count that was
    not an integer (dropped)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    total_tokens: int | None = None
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    malformed: str | None = None


class StreamEnd(Reading):
    """How a stream ended (a ``done`` event)."""

    finish_reason: str | None
    chunks: int
    finish_t: int | None = None
    """When the chunk carrying the finish reason arrived (ns on the session clock)."""
    note: str | None = None


R = TypeVar("R", bound="Reading")


def read(data: dict[str, Any], cls: type[R]) -> R | None:
    """A recorded event's *data* as *cls* (keys it does not name ignored), or None when it does not fit (a required
    key missing, a figure that is not a number where one must be: a recording's bytes are untrusted)."""
    try:
        return msgspec.convert(data, cls)
    except msgspec.ValidationError:
        return None


def engine_metrics(data: dict[str, Any]) -> EngineMetrics | None:
    """The engine's figures of a ``server_metrics`` event's data, or None when the scrape failed or does not fit."""
    return read(data, EngineMetrics) if data.get("ok") else None


def event_data(reading: Reading, order: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON object an event carries for *reading*: its fields in their order, a field at its default left out,
    the fields of a nested reading named in its ``SPLICED`` in its place (a scrape's figures sit beside ``ok``), the
    keys in *order* first among them (an engine's figures in the order its /metrics table names them)."""
    raw = msgspec.to_builtins(reading)
    spliced = getattr(reading, "SPLICED", ())
    if not spliced:
        return raw
    out = {}
    for key, value in raw.items():
        if key in spliced:
            out.update({**{k: value[k] for k in order if k in value}, **value} if order else value)
        else:
            out[key] = value
    return out
