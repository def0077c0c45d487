"""The metric catalogue: one entry per figure lanemon reports (issue 37, item 1).

Each :class:`Metric` says what one figure is -- its unit, its definition (which requests and which tokens count,
over which window, what leaves a request out), the key it has in ``--json``, its Prometheus name and HELP text
where the exporter has one, the label result tables give it, and the name a convention gives the same figure:
OpenTelemetry's GenAI semantic conventions on the client side and vLLM's ``/metrics`` for the server's twin,
with how lanemon's definition differs where it does.

Pure data, no IO: every surface reads it (``reports/tables.py`` takes its column labels from here: a figure
that is not in the catalogue cannot be a column; docs/METRICS.md is tested against it,
``tests/test_catalogue.py``).  The arithmetic stays where it is (``measure/metrics.py``, ``measure/slo.py``,
``measure/energy.py``, the workloads' ``results(events)``); this module names what it computes.
"""

from __future__ import annotations

from dataclasses import dataclass

#: the units a figure may have (docs/METRICS.md, "The catalogue")
UNITS = ("s", "tok/s", "req/s", "tok", "tok/chunk", "requests", "ratio", "x", "W", "J", "tok/J", "USD/1M tok", "bool",
         "count", "USD/h", "nats/token")

NOT_MEASURED = "—"
"""How every surface shows a figure that was not measured (None in the result): never a word in its place."""


@dataclass(frozen=True)
class Metric:
    """One figure.  ``label`` is the column header result tables use (it names the unit when the cells do not
    carry it: ``steady tok/s``; a time's cells carry theirs: ``171 ms``), ``short`` the narrower header
    ``ResultTable.fit`` falls back to.  ``json_keys`` lists the keys the figure has in ``--json`` outputs (a
    percentile figure: its base, ``ttft_s`` -> ``ttft_s.p50`` in load, ``ttft_p50_s`` in decode)."""

    name: str
    title: str
    unit: str
    definition: str
    json_keys: tuple[str, ...] = ()
    label: str = ""
    short: str | None = None
    prometheus: str | None = None
    prometheus_type: str | None = None   # histogram | counter | gauge
    prometheus_help: str | None = None
    otel: str | None = None              # OpenTelemetry GenAI semantic-convention name
    vllm: str | None = None              # vLLM's /metrics name of the server-side twin
    differs: str | None = None           # how lanemon's definition differs from otel's / vLLM's
    doc_row: str | None = None           # the row of docs/METRICS.md's definitions table that defines it


_COMPLETE = "complete requests only (truncated, empty, errored requests counted apart)"
_GEN = "generated tokens, reasoning included"
"""The tokens tok/J and $/1M count (measure/energy.energy_tokens), the "output tokens" of their labels."""
_OUT = "generated tokens (output + reasoning; the server's usage, else chunk counts marked estimated)"
_VIEW = (" over the intervals between successive /metrics scrapes (one at every cell edge) in which lanemon saw "
         "requests finish, restarts left out (measure/server.py)")
_ENGINE_MEAN = "vLLM's histogram, read as its mean (delta sum / delta count) over the compared intervals"

CATALOGUE: tuple[Metric, ...] = (
    # ------------------------------------------------------------ one request's latencies
    Metric("first_byte", "first byte", "s",
           "request sent -> response headers received; not TTFT", ("first_byte_s",), "first byte",
           doc_row="first byte"),
    Metric("ttft", "TTFT", "s",
           "request sent (first byte written on a ready connection) -> first token-carrying chunk, reasoning "
           f"included; the role-only chunk does not count; {_COMPLETE}; client-bound requests left out of "
           "live figures", ("ttft_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s"), "TTFT",
           prometheus="lanemon_ttft_seconds", prometheus_type="histogram",
           prometheus_help="Time to first token of complete requests, as lanemon measured it (client side; "
                           "starved samples left out)",
           otel="gen_ai.client.operation.time_to_first_chunk", vllm="vllm:time_to_first_token_seconds",
           differs="OTel starts at the operation's start (the call); lanemon at the first byte written on a "
                   "ready connection (connection wait is queued_ms) and ends at the first chunk carrying a "
                   "token, not the role-only chunk. vLLM's is measured in the engine from arrival to the first "
                   "token: it leaves out the network and the HTTP server",
           doc_row="TTFT"),
    Metric("ttfo", "TTFO", "s",
           f"request sent -> first non-reasoning output chunk (TTFT for a model that does not think); {_COMPLETE}",
           ("ttfo_s",), "TTFO", doc_row="TTFO"),
    Metric("itl", "ITL", "s",
           "gaps between successive token-carrying chunks of a complete, non-burst request",
           ("itl_p50_s",), "ITL", otel="gen_ai.client.operation.time_per_output_chunk",
           vllm="vllm:inter_token_latency_seconds",
           differs="the same gap as OTel's time per output chunk (chunks, not tokens). vLLM's is per token in "
                   "the engine (before a detokenizer or parser coalesces tokens into one chunk)",
           doc_row="ITL"),
    Metric("itl_per_token", "per-token latency", "s",
           "each inter-chunk gap divided by the tokens its chunk carried", ("itl_per_token_p50_s",),
           "ITL/token", doc_row="per-token latency"),
    Metric("tokens_per_chunk", "tokens per chunk", "tok/chunk",
           f"{_OUT} / token-carrying chunks of complete requests; null without usage", ("tokens_per_chunk",),
           "tok/chunk", doc_row="tokens per chunk"),
    Metric("e2e", "E2E", "s", f"request sent -> end of stream ([DONE]); {_COMPLETE}",
           ("e2e_s", "total_s"), "E2E", otel="gen_ai.client.operation.duration",
           vllm="vllm:e2e_request_latency_seconds",
           differs="OTel's duration is the whole client call, errors included (with error.type); lanemon's "
                   "E2E figures are over complete requests. vLLM's is arrival -> finish inside the server",
           doc_row="E2E"),
    Metric("decode_span", "decode span", "s",
           "first token-carrying chunk -> last token-carrying chunk (or the finish_reason chunk when later); "
           "never [DONE] or a trailing usage chunk", (), "decode span", vllm="vllm:request_decode_time_seconds",
           doc_row="decode span"),
    Metric("tpot", "TPOT", "s",
           f"decode span / (generated tokens - tokens of the first chunk); {_COMPLETE}, bursts and one-token "
           "replies left out", ("tpot_s", "tpot_p50_s"), "TPOT",
           prometheus="lanemon_tpot_seconds", prometheus_type="histogram",
           prometheus_help="Time per output token after the first of complete requests (client side; bursts "
                           "and starved samples left out)",
           vllm="vllm:request_time_per_output_token_seconds",
           differs="OTel has no per-token figure (time_per_output_chunk is per chunk: lanemon's ITL). vLLM "
                   "measures it in the engine per request",
           doc_row="TPOT"),
    Metric("queued", "queued", "s", "lanemon's own wait for a connection before the request was sent",
           ("queued_ms",), "queued"),
    Metric("send_lag", "send lag", "s",
           "bench load: actual send minus the schedule's time, over the measured window's requests",
           ("send_lag_s",), "send lag", short="lag"),
    # ------------------------------------------------------------ rates
    Metric("per_stream_tok_s", "decode tok/s (per stream)", "tok/s",
           f"(generated tokens - tokens of the first chunk) / decode span, per complete non-burst request; a "
           "cell's figure is the median", ("per_stream_tok_s_p50", "per_stream_tok_s", "decode_tok_s"),
           "per-stream tok/s", short="stream", doc_row="decode tok/s",
           prometheus="lanemon_window_decode_tokens_per_second", prometheus_type="gauge",
           prometheus_help="Median per-stream decode rate of the monitor window's complete requests"),
    Metric("steady_tok_s", "aggregate tok/s (steady state)", "tok/s",
           "tokens whose chunks arrived while all C streams of a decode level were in flight / that window "
           "(ramp-up and drain left out); the median over reps", ("steady_tok_s",), "steady tok/s",
           short="steady", doc_row="aggregate tok/s"),
    Metric("aggregate_tok_s", "aggregate tok/s (first send -> last end)", "tok/s",
           f"{_OUT} of the completed requests / wall time from first send to last end; the median over reps",
           ("aggregate_tok_s",), "span tok/s", short="span",
           doc_row="aggregate tok/s, first send → last end"),
    Metric("steady_min", "steady tok/s, lowest rep", "tok/s",
           "the lowest of a decode level's reps' steady tok/s (shown where a cell ran more than one rep)",
           ("steady_min",), "steady min"),
    Metric("steady_max", "steady tok/s, highest rep", "tok/s",
           "the highest of a decode level's reps' steady tok/s", ("steady_max",), "steady max"),
    Metric("span_min", "span tok/s, lowest rep", "tok/s",
           "the lowest of a decode level's reps' span tok/s (first send -> last end)", ("min",), "span min"),
    Metric("span_max", "span tok/s, highest rep", "tok/s",
           "the highest of a decode level's reps' span tok/s", ("max",), "span max"),
    Metric("gain_per_doubling", "gain per doubling", "ratio",
           "bench sweep: relative gain of span tok/s from one level to the next, per doubling of concurrency",
           ("gain_per_doubling",), "gain/doubling", short="gain"),
    Metric("prefill_tok_s", "prefill tok/s", "tok/s",
           "prompt tokens (usage) / TTFT, on a cold unique prompt with a 1-token reply; the median over reps",
           ("prefill_tok_s",), "prefill tok/s", short="tok/s", doc_row="prefill tok/s"),
    Metric("prefill_min", "prefill tok/s, lowest rep", "tok/s",
           "the lowest of a prompt length's reps' prefill tok/s (shown where a length ran more than one rep)",
           ("min",), "prefill min"),
    Metric("prefill_max", "prefill tok/s, highest rep", "tok/s",
           "the highest of a prompt length's reps' prefill tok/s", ("max",), "prefill max"),
    Metric("cache_hit_tok_s", "cache hit tok/s", "tok/s",
           "bench prefill: the same prompt sent again, answered from the prefix cache: prompt tokens / its TTFT",
           ("cache_hit_tok_s",), "cache hit tok/s", short="hit tok/s"),
    Metric("prefill_ratio", "prefill ratio", "x",
           "bench prefill with two lanes: the second lane's cold prefill tok/s / the first's, per length (shown "
           "as B/A ratio, beside the second lane's row, x)", ("ratios.by_length",), "ratio"),
    Metric("category_ratio", "per-category decode ratio", "x",
           "bench decode with two lanes: the first lane's per-stream decode tok/s / the second's, per prompt "
           "category at C1 (shown as A/B per-stream ratio)", ("category_ratios.by_category",), "per-stream ratio"),
    Metric("repeat_tok_s", "repeat tok/s", "tok/s",
           "bench prefill: the repeated prompt's prompt tokens / TTFT, hit or not", ("repeat_tok_s",),
           "repeat tok/s"),
    Metric("served_rps", "served req/s", "req/s",
           "bench load: requests that completed inside the measured window, per second from its first "
           "completion to its end ((n - 1) / span)", ("completed_rate_rps",), "served req/s", short="served/s",
           doc_row="served req/s and tok/s"),
    Metric("served_tok_s", "served tok/s", "tok/s",
           f"bench load: {_OUT} whose chunks arrived inside the measured window, whichever request, per second "
           "from its first token to its end", ("output_tok_s",), "out tok/s", short="tok/s", doc_row="served req/s and tok/s"),
    Metric("offered_rps", "offered req/s", "req/s", "bench load: the asked arrival rate (--rate)",
           ("offered_rate_rps",), "offered req/s"),
    Metric("scheduled_rps", "scheduled req/s", "req/s",
           "bench load: the schedule's own arrivals in the measured window / its length",
           ("scheduled_rate_rps",), "sched req/s", short="sched/s"),
    Metric("sent_rps", "sent req/s", "req/s", "bench load: requests actually sent in the measured window / its "
           "length", ("sent_rate_rps",), "sent req/s", short="sent/s"),
    Metric("goodput", "goodput", "req/s",
           "vLLM's: requests meeting every --slo target per second of the measured duration (load: the measured "
           "requests' first send -> last end, warm-up and cool-down left out; a cell: its reps' wall time; a "
           "race: the lane's summed request time; the monitor: its window); errors are misses",
           ("goodput_rps", "goodput.rate_rps", "slo.goodput_rps"), "goodput req/s", short="good/s",
           prometheus="lanemon_goodput_requests_per_second", prometheus_type="gauge",
           prometheus_help="Requests meeting every SLO target per second of the window",
           differs="vLLM computes it in `vllm bench serve` (client side), not on /metrics: the same rule",
           doc_row="goodput"),
    Metric("slo_share", "SLO share", "ratio",
           "requests meeting every --slo target / all requests (errors are misses)",
           ("goodput.share", "slo.share"), "goodput %", prometheus="lanemon_slo_attainment_ratio",
           prometheus_type="gauge",
           prometheus_help="Share of the window's requests meeting every SLO target (errors are misses)",
           doc_row="goodput"),
    Metric("slo_attainment", "SLO attainment", "ratio",
           "per target: share of all requests (errors are misses) within that one target",
           ("targets.KEY.attainment",), "met", doc_row="SLO attainment, held"),
    Metric("slo_held", "SLO held", "bool",
           "the target's percentile over the completed requests within its limit: p90 TTFT, median TPOT, p90 "
           "E2E", ("held", "slo_held"), "SLO", doc_row="SLO attainment, held"),
    # ------------------------------------------------------------ counts
    Metric("requests", "requests", "requests", "requests sent in the cell or rep, every outcome",
           ("requests",), "requests", short="reqs"),
    Metric("measured", "measured", "requests", "bench load: requests sent inside the measured window",
           ("measured",), "measured", short="meas."),
    Metric("ok", "ok", "requests", "requests that completed", ("ok",), "ok"),
    Metric("errors", "errors", "requests",
           "requests that did not complete (errors, truncated, empty)", ("errors",), "err"),
    Metric("client_bound", "client-bound", "requests",
           "requests whose span touched a window in which lanemon itself was starved", ("client_bound",),
           "client-bound"),
    Metric("output_tokens", "output tokens", "tok",
           "usage.completion_tokens of complete requests (else chunk counts, marked tokens_estimated)",
           ("output_tokens", "output_tokens_p50"), "output tok", otel="gen_ai.client.token.usage",
           vllm="vllm:generation_tokens_total",
           differs="OTel's histogram records input and output per call (gen_ai.token.type); lanemon keeps "
                   "reasoning apart and counts complete requests",),
    Metric("reasoning_tokens", "reasoning tokens", "tok",
           "usage.completion_tokens_details.reasoning_tokens, else per-chunk counts of reasoning chunks",
           ("reasoning_tokens",), "reasoning tok", short="reason."),
    Metric("prompt_tokens", "prompt tokens", "tok", "usage.prompt_tokens (else estimated from calibration)",
           ("prompt_tokens", "input_tokens_p50"), "prompt tokens", short="tokens",
           otel="gen_ai.client.token.usage", vllm="vllm:prompt_tokens_total", doc_row="lengths",
           differs="OTel records it as gen_ai.token.type=input of the same histogram"),
    # ------------------------------------------------------------ energy and cost (docs/GPU.md)
    Metric("gpu_power", "GPU power", "W", "the lane's GPUs' energy over the cell's window / that window",
           ("gpu_power_w_mean",), "GPU W", prometheus="lanemon_gpu_power_watts", prometheus_type="gauge",
           prometheus_help="The lane's GPUs' power draw (W), from its GPU telemetry"),
    Metric("energy", "energy", "J",
           "the lane's GPUs' energy counter at the cell's start and end marks, else power integrated over it",
           ("energy_j",), "energy J", prometheus="lanemon_gpu_energy_joules_total", prometheus_type="counter",
           prometheus_help="Energy the lane's GPUs used (J), from its GPU telemetry"),
    Metric("tokens_per_joule", "tok/J", "tok/J",
           f"{_GEN} of the completed requests (bench load: whose chunks arrived in the measured window) / energy "
           "over the window (a cell's reps, a load rep's measured window, a race)",
           ("tokens_per_joule",), "tok/J", prometheus="lanemon_tokens_per_joule", prometheus_type="gauge",
           prometheus_help="Generated tokens (reasoning included) per joule of the lane's GPUs over the window",
           doc_row="tok/J and $/1M output tokens",
           differs="counts reasoning, unlike lanemon's answer-only output_tokens figure: the GPUs spent the "
                   "energy on every generated token (vLLM's generation_tokens, usage.completion_tokens)"),
    Metric("usd_per_1m", "$/1M output tokens", "USD/1M tok",
           f"cost_per_hour x the window / 3600 / the tokens tok/J counts ({_GEN}) x 1e6",
           ("usd_per_1m_output_tokens",),
           "$/1M tok", short="$/1M", prometheus="lanemon_usd_per_million_output_tokens",
           prometheus_type="gauge",
           prometheus_help="The lane's cost_per_hour over the window per million generated tokens, reasoning "
                           "included (USD)", doc_row="tok/J and $/1M output tokens"),
    # ------------------------------------------------------------ the engine's own counters (measure/counters.py)
    Metric("prefix_hit_rate", "prefix hit", "ratio",
           "the engine's prefix-cache hits / queries between the cell's edges", ("prefix_hit_rate",),
           "prefix hit", short="hit", vllm="vllm:prefix_cache_hits_total"),
    Metric("preemptions", "preemptions", "requests", "the engine's preemptions between the cell's edges",
           ("preemptions",), "preempt", vllm="vllm:num_preemptions_total"),
    Metric("spec_acceptance_rate", "spec accept", "ratio",
           "accepted / drafted speculative tokens between the cell's edges", ("spec_acceptance_rate",),
           "spec accept", short="spec", vllm="vllm:spec_decode_num_accepted_tokens_total"),
    # ------------------------------------------------------------ the monitor's own families
    Metric("requests_total", "finished requests", "requests",
           "finished requests by outcome (complete, error, truncated, empty); lanemon's own cancellations not "
           "counted", (), "requests", prometheus="lanemon_requests_total", prometheus_type="counter",
           prometheus_help="Finished requests by outcome (complete, error, truncated, empty); lanemon's own "
                           "cancellations not counted",
           vllm="vllm:request_success_total"),
    Metric("lane_up", "lane up", "bool", "1 when the lane's latest health probe (GET /models) answered", (),
           "up", prometheus="lanemon_lane_up", prometheus_type="gauge",
           prometheus_help="1 when the lane's latest health probe (GET /models) answered"),
    Metric("oversaturated", "oversaturated", "bool",
           "1 when over the window the engine's queue grew and TTFT rose while its throughput stayed flat", (),
           "oversaturated", prometheus="lanemon_oversaturated", prometheus_type="gauge",
           prometheus_help="1 when over the window the engine's queue grew and TTFT rose while its throughput "
                           "stayed flat (needs the engine's /metrics)"),
    Metric("alerts_firing", "alerts firing", "requests", "alert rules firing now, by severity", (), "alerts",
           prometheus="lanemon_alerts_firing", prometheus_type="gauge",
           prometheus_help="Alert rules firing now"),
    Metric("window", "window", "s", "the sliding window the monitor's ratios are computed over", (), "window",
           prometheus="lanemon_window_seconds", prometheus_type="gauge",
           prometheus_help="The sliding window the ratios are computed over"),
    Metric("lane_info", "lane model", "bool",
           "1 for the lane's current model id (label model): its first 4 distinct ids, then '(other)'", (),
           "model", prometheus="lanemon_lane_info", prometheus_type="gauge",
           prometheus_help="1 for the lane's current model id (label model; at most 4 distinct ids per lane, "
                           "further ones read (other))"),
    Metric("model_changes", "model changes", "count", "times the lane's model id changed (GET /models)", (),
           "model changes", prometheus="lanemon_lane_model_changes_total", prometheus_type="counter",
           prometheus_help="Times the lane's model id changed (GET /models)"),
    Metric("lane_downs", "times down", "count",
           "times the lane went down: a health probe failed, at the start or after the lane answered", (),
           "downs", prometheus="lanemon_lane_down_total", prometheus_type="counter",
           prometheus_help="Times the lane went down (a health probe failed, at the start or after it answered)"),
    Metric("output_tokens_total", "output tokens", "tok",
           f"{_OUT} of the complete requests lanemon was not starved during, since the monitor started", (),
           "output tok", prometheus="lanemon_output_tokens_total", prometheus_type="counter",
           prometheus_help="Generated tokens of complete requests lanemon was not starved during"),
    Metric("window_energy", "window energy", "J",
           "the lane's GPUs' energy over the monitor's window: their counter, else power integrated "
           "(measure/energy.window_energy)", (), "energy J", prometheus="lanemon_window_gpu_energy_joules",
           prometheus_type="gauge", prometheus_help="Energy the lane's GPUs used over the window"),
    Metric("window_power", "window GPU power", "W", "the window's energy / the window", (), "GPU W",
           prometheus="lanemon_window_gpu_power_mean_watts", prometheus_type="gauge",
           prometheus_help="Mean power of the lane's GPUs over the window (window energy / window)"),
    Metric("cost_per_hour", "cost per hour", "USD/h", "the lane's cost_per_hour (lanes.toml, --cost)", (),
           "$/h", prometheus="lanemon_cost_usd_per_hour", prometheus_type="gauge",
           prometheus_help="The lane's cost_per_hour (lanes.toml / --cost)"),
    Metric("error_share", "error share", "ratio",
           "share of the window's finished requests that did not complete (error, truncated, empty)", (),
           "errors", prometheus="lanemon_window_error_ratio", prometheus_type="gauge",
           prometheus_help="Share of the window's finished requests that did not complete (error, truncated, "
                           "empty)"),
    Metric("engine_kv_usage", "KV cache", "ratio", "the engine's KV-cache use at its latest /metrics scrape", (),
           "KV", prometheus="lanemon_engine_kv_cache_usage_ratio", prometheus_type="gauge",
           prometheus_help="The engine's KV-cache use (0..1) at its latest /metrics scrape (vLLM, SGLang)",
           vllm="vllm:kv_cache_usage_perc", differs="the engine's own gauge, as scraped; no figure of lanemon's"),
    Metric("engine_waiting", "queued", "requests", "requests queued in the engine at its latest /metrics scrape",
           (), "waiting", prometheus="lanemon_engine_requests_waiting", prometheus_type="gauge",
           prometheus_help="Requests queued in the engine at its latest /metrics scrape",
           vllm="vllm:num_requests_waiting", differs="the engine's own gauge, as scraped"),
    Metric("engine_running", "running", "requests",
           "requests running in the engine at its latest /metrics scrape", (), "running",
           prometheus="lanemon_engine_requests_running", prometheus_type="gauge",
           prometheus_help="Requests running in the engine at its latest /metrics scrape",
           vllm="vllm:num_requests_running", differs="the engine's own gauge, as scraped"),
    # ------------------------------------------------------------ the engine's view beside lanemon's (measure/server.py,
    # measure/counters.py): a lane's ``server`` block of a bench, a cell's or rep's ``engine_counters``
    Metric("engine_requests", "engine requests", "requests",
           "requests the engine itself counted finishing (its /metrics success counter): over the intervals the "
           "server view compares (server.requests), between a cell's or rep's edges (engine_counters.requests); "
           "another client's requests count too", ("server.requests", "engine_counters.requests"),
           "engine requests", short="eng. reqs", vllm="vllm:request_success_total",
           differs="the engine's own counter's increase, as scraped"),
    Metric("view_requests", "lanemon requests (server view)", "requests",
           "requests lanemon saw finish in the intervals the server view compares (the same intervals as "
           "engine requests, restarts left out)", ("server.client_requests",), "lanemon requests",
           short="our reqs"),
    Metric("engine_restarts", "engine restarts", "count",
           "times the engine restarted during the run: one of its counters or histogram sums fell, or its "
           "process start time changed (measure/restarts.py); the intervals around each are compared on neither "
           "side", ("server.restarts", "engine_counters.restarts"), "restarts"),
    Metric("rank_imbalance", "rank imbalance", "x",
           "max / mean of the data-parallel ranks' generated tokens between the cell's or rep's edges (1.0 is "
           "even); each rank's tokens are in the JSON (engine_counters.ranks)", ("engine_counters.rank_imbalance",),
           "rank max/mean"),
    Metric("server_queue", "engine queue time", "s",
           f"mean per request of the engine's queue-time histogram{_VIEW}", ("server.queue_s",), "engine queue",
           vllm="vllm:request_queue_time_seconds", differs=_ENGINE_MEAN),
    Metric("server_prefill", "engine prefill time", "s",
           f"mean per request of the engine's prefill-time histogram{_VIEW}", ("server.prefill_s",),
           "engine prefill", vllm="vllm:request_prefill_time_seconds", differs=_ENGINE_MEAN),
    Metric("server_decode", "engine decode time", "s",
           f"mean per request of the engine's decode-time histogram{_VIEW}", ("server.decode_s",),
           "engine decode", vllm="vllm:request_decode_time_seconds", differs=_ENGINE_MEAN),
    Metric("server_ttft", "server TTFT", "s", f"mean per request of the engine's TTFT histogram{_VIEW}",
           ("server.ttft_s",), "server TTFT", vllm="vllm:time_to_first_token_seconds", differs=_ENGINE_MEAN),
    Metric("view_ttft", "lanemon TTFT (server view)", "s",
           "mean TTFT of the requests lanemon saw finish in the intervals the server view compares (a mean, "
           "beside the engine's mean; not the cell's median TTFT)", ("server.client_ttft_s",), "lanemon TTFT"),
    Metric("gap_ttft", "TTFT gap", "s",
           "lanemon TTFT - server TTFT over the same intervals: HTTP, the API server and the network; withheld "
           "(null, server.gap_reason says why) when the two did not count the same requests or the gap would be "
           "negative", ("server.gap_ttft_s",), "TTFT gap"),
    Metric("server_e2e", "server E2E", "s", f"mean per request of the engine's E2E histogram{_VIEW}",
           ("server.e2e_s",), "server E2E", vllm="vllm:e2e_request_latency_seconds", differs=_ENGINE_MEAN),
    Metric("view_e2e", "lanemon E2E (server view)", "s",
           "mean E2E of the requests lanemon saw finish in the intervals the server view compares",
           ("server.client_e2e_s",), "lanemon E2E"),
    Metric("gap_e2e", "E2E gap", "s",
           "lanemon E2E - server E2E over the same intervals (HTTP, detokenising, the network); withheld as the "
           "TTFT gap is", ("server.gap_e2e_s",), "E2E gap"),
    # ------------------------------------------------------------ races (workloads/race.py)
    Metric("race_wins", "races won", "count",
           "lanemon race: races the lane finished first (its request completed before every other lane's; a "
           "truncated, empty or errored reply never wins), out of the finished races", ("wins",), "wins"),
    Metric("race_behind", "E2E behind the winner", "s",
           "lanemon race: the lane's E2E minus the winner's (the lane whose request completed first) in the same "
           "race; none for the winner. Negative when the winner was sent sooner and took longer",
           ("behind_s",), "E2E vs winner"),
    Metric("race_behind_ratio", "E2E over the winner's", "x",
           "lanemon race: the lane's E2E / the winner's in the same race; none for the winner",
           ("behind_ratio",), "E2E × winner"),
    # ------------------------------------------------------------ kl (workloads/kl.py)
    Metric("kl", "KL divergence (mean)", "nats/token",
           "lanemon kl: teacher-forced KL(reference || lane) per token from top-k prompt logprobs with a tail "
           "bucket (a lower bound of the full-vocabulary KL), mean over every aligned position (both lanes scored "
           "the same token); the reference lane has none", ("kl",), "KL mean (nats/token)", short="KL mean"),
    Metric("kl_position", "per-position KL", "nats/token",
           "lanemon kl: the same per-token KL, its percentiles over the aligned positions (a p99 rests on 100)",
           ("kl_p50", "kl_p99"), "KL"),
    Metric("kl_positions", "aligned positions", "count",
           "lanemon kl: teacher positions both lanes scored with the same token, the KL figures' samples (0 for "
           "the reference)", ("positions",), "positions"),
    # ------------------------------------------------------------ agree (workloads/agree.py, docs/AGREE.md)
    Metric("agree_compared", "prompts compared", "count",
           "lanemon agree: prompts both lanes answered (a prompt that errored on either lane is left out, counted "
           "in errors); the denominator of every agree share", ("total",), "compared"),
    Metric("agree_exact", "exact matches", "count",
           "lanemon agree: compared prompts whose two greedy continuations agree on every whitespace-separated "
           "word", ("exact",), "exact"),
    Metric("agree_median_first", "median first differing word", "count",
           "lanemon agree: the median over the compared prompts of first_divergence_word (0-based; an exact "
           "match counts its number of words)", ("median_first_divergence_word",), "median first differing word",
           short="median word"),
    Metric("agree_ge_10", "agree for ten words or more", "count",
           "lanemon agree: compared prompts whose continuations agree on the first ten words (exact matches "
           "included)", ("agree_ge_10_words",), "agree ≥10 words"),
    Metric("agree_at_0", "diverge at word 0", "count",
           "lanemon agree: compared prompts whose continuations differ from the first word", ("diverge_at_0",),
           "differ at word 0"),
    Metric("agree_bucket", "prompts per bucket", "count",
           "lanemon agree: compared prompts whose first differing word falls in the bucket (0, 1, 2, 3-4, 5-9, "
           "10-19, 20+, exact)", ("histogram",), "prompts"),
    Metric("agree_bucket_share", "share per bucket", "ratio",
           "lanemon agree: a bucket's prompts / the prompts compared", ("histogram_share",), "share"),
    Metric("agree_first", "first differing word", "count",
           "lanemon agree: one prompt's first whitespace-separated word (0-based) where the two continuations "
           "differ (an exact match: its number of words, they agree on all); null for a prompt that errored", ("first_divergence_word",), "first differing word"),
    Metric("agree_words", "continuation words", "count",
           "lanemon agree: one prompt's continuation on a lane, in whitespace-separated words",
           ("a_words", "b_words"), "words"),
    # ------------------------------------------------------------ gauntlet (workloads/gauntlet/results.py)
    Metric("gauntlet_correct", "correct reps", "count",
           "lanemon gauntlet: finished reps whose final answer holds the secret", ("correct",), "correct"),
    Metric("gauntlet_reps", "reps", "count",
           "lanemon gauntlet: reps that finished (correct or not: answer, budget or error)", ("reps",), "reps"),
    Metric("gauntlet_median_wall", "median wall time", "s",
           "lanemon gauntlet: the median over a lane's finished reps of the rep's wall time", ("median_wall_s",),
           "median wall"),
    Metric("gauntlet_wall", "wall time", "s",
           "lanemon gauntlet: one rep, rep start -> final answer, budget spent or error (measured seconds)",
           ("wall_s",), "wall"),
    Metric("gauntlet_tool_calls", "tool calls", "count",
           "lanemon gauntlet: one rep's tool calls, refused and malformed included", ("tool_calls",), "tool calls",
           short="calls"),
    Metric("gauntlet_malformed", "malformed calls", "count",
           "lanemon gauntlet: one rep's tool calls whose arguments were not {\"path\": \"<string>\"} JSON",
           ("malformed_calls",), "malformed calls", short="bad"),
    Metric("gauntlet_turns", "turns", "count", "lanemon gauntlet: one rep's requests (turns)", ("turn_count",),
           "turns"),
    Metric("gauntlet_ttft_sum", "ΣTTFT", "s",
           "lanemon gauntlet: one rep's TTFT summed over its turns (a turn without a TTFT adds nothing): the "
           "prefill of the growing transcript, turn after turn", ("ttft_sum_s", "median_ttft_sum_s"), "ΣTTFT"),
    Metric("gauntlet_decode_sum", "Σdecode", "s",
           "lanemon gauntlet: one rep's decode seconds (TTFT -> end of stream) summed over its turns",
           ("decode_sum_s", "median_decode_sum_s"), "Σdecode"),
    Metric("gauntlet_ttft_share", "TTFT share of request time", "ratio",
           "lanemon gauntlet: a lane's median ΣTTFT / (median ΣTTFT + median Σdecode) over its reps: how much of "
           "the agent's request time is prefill of the transcript", ("ttft_share",), "TTFT share"),
    Metric("gauntlet_decode", "decode", "s",
           "lanemon gauntlet: one turn's request after its first token: end of stream minus TTFT (E2E - TTFT; "
           "unlike decode span it runs to [DONE]); a turn's figure in the report is the median over reps",
           ("decode_s",), "decode"),
    Metric("gauntlet_first_prompt", "first prompt tokens", "tok",
           "lanemon gauntlet: one rep's prompt tokens at its first turn that has usage (the system prompt and the "
           "task)", ("first_prompt_tokens",), "first prompt tok"),
    Metric("gauntlet_last_prompt", "last prompt tokens", "tok",
           "lanemon gauntlet: one rep's prompt tokens at its last turn that has usage (the whole transcript)",
           ("last_prompt_tokens",), "last prompt tok"),
    # ------------------------------------------------------------ qeval (workloads/qeval/run.py, docs/QEVAL.md)
    Metric("qeval_passed", "tasks passed", "count",
           "lanemon qeval: scored tasks whose reply passed its check (of a kind, or of the run)", ("passed",),
           "passed"),
    Metric("qeval_tasks", "tasks scored", "count",
           "lanemon qeval: tasks scored (skipped tasks are in neither passed nor this)", ("total",), "tasks"),
    Metric("qeval_median_s", "median seconds per task", "s",
           "lanemon qeval: the median over the scored tasks (of a kind, or of the run) of request sent -> end of "
           "stream, scoring time left out", ("median_s",), "median s/task", short="med s/task"),
    Metric("qeval_tok_s", "median reply rate (E2E)", "tok/s",
           "lanemon qeval: the median over the scored tasks with usage and a time of completion tokens / "
           "(request sent -> end of stream): single-stream, TTFT included", ("median_tok_s",),
           "median tok/s (E2E)", short="med tok/s E2E"),
    Metric("qeval_kept", "kept", "count", "qeval compare: tasks both runs hold that pass on both", ("kept",), "kept"),
    Metric("qeval_broke", "broke", "count", "qeval compare: tasks that pass on the first run and fail on the second",
           ("broke",), "broke"),
    Metric("qeval_fixed", "fixed", "count", "qeval compare: tasks that fail on the first run and pass on the second",
           ("fixed",), "fixed"),
    Metric("qeval_both_failed", "both failed", "count", "qeval compare: tasks that fail on both runs",
           ("both_failed",), "both failed"),
    Metric("qeval_p", "McNemar p", "ratio",
           "qeval compare: the exact two-sided McNemar test on broke vs fixed, min(1, 2 P(X <= min(broke, fixed))) "
           "with X ~ Bin(broke + fixed, 1/2); 1.0 with no discordant pair", ("p_value",), "p (exact McNemar)",
           short="p McNemar"),
    Metric("qeval_left_out", "left out", "count", "qeval compare: task ids only one of the two runs holds",
           ("left_out",), "left out"),
)

BY_NAME: dict[str, Metric] = {m.name: m for m in CATALOGUE}
BY_PROMETHEUS: dict[str, Metric] = {m.prometheus: m for m in CATALOGUE if m.prometheus}

#: rows of docs/METRICS.md's definitions table that state a rule, not a figure of their own
RULE_ROWS = ("percentiles", "server view")

METRIC_FIELDS = ("ttft_p50", "ttft_p90", "ttft_p99", "tpot_p50", "tpot_p90", "tpot_p99", "e2e_p50", "e2e_p90",
                 "e2e_p99", "decode_tok_s_p50", "tok_s", "steady_tok_s", "goodput_rps", "slo_attainment", "requests")
"""The figures ``lanemon history --metric`` may trend (here, not in measure/summary.py, so the
command line's parser is built without importing the measuring side)."""


#: the catalogue's figure each trendable field holds
FIELD_METRIC = {"ttft_p50": "ttft", "ttft_p90": "ttft", "ttft_p99": "ttft", "tpot_p50": "tpot",
                "tpot_p90": "tpot", "tpot_p99": "tpot", "e2e_p50": "e2e", "e2e_p90": "e2e", "e2e_p99": "e2e",
                "decode_tok_s_p50": "per_stream_tok_s", "tok_s": "aggregate_tok_s", "steady_tok_s": "steady_tok_s",
                "goodput_rps": "goodput", "slo_attainment": "slo_share", "requests": "requests"}


def metric(name: str) -> Metric:
    """The catalogue's entry ``name`` (KeyError for a figure the catalogue does not hold)."""
    return BY_NAME[name]


def label(name: str, stat: str | None = None, short: bool = False) -> str:
    """The table label of ``name`` (``TTFT p50`` with ``stat``; the short form where there is one)."""
    m = BY_NAME[name]
    text = (m.short or m.label) if short else m.label
    return f"{text} {stat}" if stat else text


def catalogue_markdown() -> list[str]:
    """docs/METRICS.md's catalogue table, one row per entry (``tests/test_catalogue.py`` holds the doc to it)."""
    out = ["| figure | unit | JSON | table | Prometheus | OpenTelemetry | vLLM |", "|---|---|---|---|---|---|---|"]
    for m in CATALOGUE:
        keys = ", ".join(f"`{k}`" for k in m.json_keys) or "—"
        out.append(f"| `{m.name}` {m.title} | {m.unit} | {keys} | {m.label} | "
                   f"{f'`{m.prometheus}`' if m.prometheus else '—'} | {f'`{m.otel}`' if m.otel else '—'} | "
                   f"{f'`{m.vllm}`' if m.vllm else '—'} |")
    return out
