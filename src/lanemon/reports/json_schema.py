"""The published contract of ``--json`` outputs (issue 37, item 3): msgspec Structs describing them, and the
JSON Schema each one has (``lanemon schema NAME``; ``lanemon schema --list`` names them).

Every Struct forbids unknown fields: an output that gains a key the contract does not name fails
``tests/test_json_schema.py``, which decodes every ``--json`` output the suite makes into its Struct (strict).
A key whose *meaning* changes bumps :data:`SCHEMA_VERSION` (and docs/JSON.md says how).  Blocks whose keys are
the engine's own (``server``, ``engine_counters``) or a run's bookkeeping (``cut``, ``not_run``) are objects
described in docs/JSON.md, not listed key by key here.

Units follow the metric catalogue (measure/catalogue.py): keys ending ``_s`` are seconds, ``_tok_s`` tokens per
second, ``_rps`` requests per second.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from lanemon.measure.summary import LaneSummary
from lanemon.recording.schema import DATA_SCHEMAS, EventRow, Header

SCHEMA_VERSION = "1"
"""Bumped when a key's meaning changes (a key added with a new meaning is a new key: the version stays)."""

Num = float | int | None
Obj = dict[str, Any] | None


class _Strict(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


class Percentiles(_Strict):
    p50: Num = None
    p90: Num = None
    p99: Num = None
    max: Num = None
    n: int | None = None


class SloTarget(_Strict):
    limit_s: Num = None
    stat: str | None = None
    value_s: Num = None
    met: int | None = None
    total: int | None = None
    attainment: Num = None
    held: bool | None = None


class Slo(_Strict):
    """Goodput against ``--slo`` (docs/JSON.md, "SLO and goodput")."""

    rate_rps: Num = None
    goodput_rps: Num = None
    share: Num = None
    good: int | None = None
    total: int | None = None
    duration_s: Num = None
    held: bool | None = None
    targets: dict[str, SloTarget] = {}


class PromptSetInfo(_Strict):
    name: str | None = None
    version: str | None = None
    source: str | None = None
    prompts: int | None = None


class LoadConfig(_Strict):
    arrival: str | None = None
    rate: Num = None
    requests: int | None = None
    duration: Num = None
    warmup: Num = None
    cooldown: Num = None
    input_len: str | None = None
    output_len: str | None = None
    shared_prefix: int | None = None
    ignore_eos: bool | None = None
    trace: str | None = None
    turns: int | None = None


class BenchConfig(_Strict):
    """The bench's start-mark config (workloads/bench/run.py ``BenchOptions.config``)."""

    lanes: list[str] = []
    reps: int | None = None
    parallel_lanes: bool | None = None
    endpoint: str | None = None
    temperature: Num = None
    levels: list[int] | None = None
    categories: list[str] | None = None
    prompt_set: PromptSetInfo | None = None
    max_tokens_cap: int | None = None
    per_category: bool | None = None
    max_level: int | None = None
    knee_gain: Num = None
    lengths: list[int] | None = None
    cache_check: bool | None = None
    max_context: int | None = None
    load: LoadConfig | None = None
    workers: int | None = None
    workers_backend: str | None = None
    worker_hosts: list[dict[str, Any]] | None = None
    seed: int | None = None
    seed_drawn: bool | None = None
    time_scale: Num = None
    thinking: bool | None = None
    slo: dict[str, float] | None = None


class _Energy(_Strict):
    """Energy and cost of a cell or rep (docs/GPU.md)."""

    gpu_power_w_mean: Num = None
    energy_j: Num = None
    energy_source: str | None = None
    energy_reason: str | None = None
    energy_window_s: Num = None
    tokens_per_joule: Num = None
    tokens_per_joule_reason: str | None = None
    usd_per_1m_output_tokens: Num = None
    cost_reason: str | None = None
    energy_uncertainty_j: Num = None
    tokens_per_joule_uncertainty: Num = None
    energy_note: str | None = None
    energy_update_s: Num = None
    energy_dropped: int | None = None
    engine_counters: Obj = None


class DecodeCell(_Energy):
    """A decode level (``levels.C``) or category (``categories.CAT``) cell."""

    aggregate_tok_s: Num = None
    steady_tok_s: Num = None
    steady_window_s: Num = None
    steady_reps: list[Num] | None = None
    steady_unstable: bool | None = None
    per_stream_tok_s: Num = None
    per_stream_tok_s_p50: Num = None
    ttft_p50_s: Num = None
    ttft_p90_s: Num = None
    ttft_p99_s: Num = None
    ttft_n: int | None = None
    ttft_max_s: Num = None
    ttft_p50_reps: list[Num] | None = None
    tpot_p50_s: Num = None
    ttfo_s: Num = None
    itl_p50_s: Num = None
    itl_per_token_p50_s: Num = None
    tokens_per_chunk: Num = None
    chunk_counts_estimated: bool | None = None
    reasoning_tokens: int | None = None
    reasoning_estimated: bool | None = None
    reasoning_split_estimated: int | None = None
    output_tokens: int | None = None
    tokens_estimated: bool | None = None
    requests: int | None = None
    errors: int | None = None
    truncated: int | None = None
    empty: int | None = None
    bursts: int | None = None
    client_bound: int | None = None
    starved_s: Num = None
    starved_share: Num = None
    unreliable: bool | None = None
    reps: list[Num] | None = None
    min: Num = None
    median: Num = None
    max: Num = None
    unstable: bool | None = None
    error: Any = None
    goodput: Slo | None = None


class DecodeLane(_Strict):
    levels: dict[str, DecodeCell] = {}
    categories: dict[str, DecodeCell] = {}
    server: Obj = None


class ClientLoadInfo(_Strict):
    watched: bool | None = None
    starved_windows: int | None = None
    max_lag_ms: Num = None


class _RunState(_Strict, kw_only=True):
    """What a bench run's JSON says of the run itself (workloads/bench/run.py ``run_state``; docs/JSON.md)."""

    interrupted: bool = False
    cut: list[Any] = []
    not_run: Obj = None
    running: list[Any] | None = None
    client_load: ClientLoadInfo | None = None


class DecodeResult(_RunState):
    """``bench decode --json`` (docs/JSON.md, "bench decode")."""

    bench: Literal["decode"]
    lanes: dict[str, DecodeLane]
    config: BenchConfig
    crossover: Obj = None


class LoadRep(_Energy):
    """One rep of one lane over its measured window (docs/JSON.md, "bench load")."""

    cell: str | None = None
    requests: int | None = None
    measured: int | None = None
    ok: int | None = None
    errors: int | None = None
    truncated: int | None = None
    empty: int | None = None
    bursts: int | None = None
    error: Any = None
    refused: int | None = None
    refused_error: str | None = None
    workers_lost: list[dict[str, Any]] = []
    not_sent: int | None = None
    offered_rate_rps: Num = None
    scheduled_rate_rps: Num = None
    sent_rate_rps: Num = None
    completed_rate_rps: Num = None
    completed_in_window: int | None = None
    completed_rate_reason: str | None = None
    served_tokens: Num = None
    measured_window_ns: list[int] | None = None
    output_tok_s: Num = None
    visible_tok_s: Num = None
    reasoning_tok_s: Num = None
    lane_behind: bool | None = None
    backlog_at_end: int | None = None
    client_behind: bool | None = None
    ttft_early_s: Num = None
    ttft_late_s: Num = None
    ttft_s: Percentiles | None = None
    tpot_s: Percentiles | None = None
    e2e_s: Percentiles | None = None
    send_lag_s: Percentiles | None = None
    input_tokens_asked_p50: Num = None
    input_tokens_p50: Num = None
    output_tokens_asked_p50: Num = None
    output_tokens_p50: Num = None
    tokens_estimated: bool | None = None
    slo: Slo | None = None


class LoadLane(_Strict):
    reps: list[LoadRep] = []
    offered_rate_rps: Num = None
    client_behind: bool | None = None
    lane_behind: bool | None = None
    slo_held: bool | None = None
    server: Obj = None


class Schedule(_Strict):
    """The offered schedule every lane was given (workloads/bench/schedule.py)."""

    seed: int | None = None
    seed_drawn: bool = False
    same_for_every_lane: bool = False


class LoadResult(_RunState):
    """``bench load --json`` (docs/JSON.md, "bench load")."""

    bench: Literal["load"]
    lanes: dict[str, LoadLane]
    config: BenchConfig
    schedule: Schedule | None = None


class SweepLane(_Strict):
    """One lane of a sweep: its levels (decode cells), the gain per doubling and where it stopped."""

    levels: dict[str, DecodeCell] = {}
    gain_per_doubling: dict[str, Num] = {}
    knee: int | None = None
    knee_reliable: bool | None = None
    rests_on: list[int | None] | None = None
    max_aggregate_tok_s: Num = None
    stopped: str | None = None
    slo_held: dict[str, bool] | None = None
    slo_holds_to: int | None = None
    unreliable_levels: list[int] = []
    server: Obj = None


class SweepResult(_RunState):
    """``bench sweep --json`` (docs/JSON.md)."""

    bench: Literal["sweep"]
    lanes: dict[str, SweepLane]
    config: BenchConfig
    knee_gain: Num = None
    slo: dict[str, float] | None = None
    crossover: Obj = None


class RaceLane(_Energy):
    """One lane in one race (docs/JSON.md, "race")."""

    outcome: str | None = None
    flags: list[str] = []
    ttft_s: Num = None
    ttfo_s: Num = None
    decode_tok_s: Num = None
    generated_tokens: int | None = None
    output_tokens: int | None = None
    tokens_estimated: bool | None = None
    reasoning_tokens: int | None = None
    reasoning_estimated: bool | None = None
    reasoning_split_estimated: int | None = None
    reasoning_text: str | None = None
    tokens_per_chunk: Num = None
    chunk_counts_estimated: bool | None = None
    total_s: Num = None
    finish_rank: int | None = None
    error: Any = None
    text: str | None = None
    meets_slo: bool | None = None


class Race(_Strict):
    race: int
    lanes: dict[str, RaceLane]
    prompt: str | None = None
    prompt_id: str | None = None
    category: str | None = None
    endpoint: str | None = None
    max_tokens: int | None = None
    winner: str | None = None
    margin: Obj = None
    winners: Obj = None
    verdict: str | None = None


class RaceSummary(_Energy):
    """A lane over every race: medians of the finished races (docs/JSON.md, "race")."""

    ttft_s: Num = None
    ttfo_s: Num = None
    decode_tok_s: Num = None
    output_tokens: Num = None
    reasoning_tokens: Num = None
    tokens_per_chunk: Num = None
    total_s: Num = None
    wins: int | None = None
    races_ok: int | None = None
    bursts: int | None = None
    outcomes: dict[str, int] = {}
    goodput: Slo | None = None


class RaceResult(_Strict):
    """``lanemon race --json`` (docs/JSON.md, "race")."""

    bench: Literal["race"]
    races: list[Race]
    lanes: dict[str, RaceSummary]
    lanes_stat: str | None = None
    slo: dict[str, float] | None = None


class _Spread(_Energy):
    """Energy, the reps' spread of a cell's headline figure (workloads/bench/run.py ``spread``) and its starvation
    (``client_bound_figures``)."""

    reps: list[Num] | None = None
    min: Num = None
    median: Num = None
    max: Num = None
    unstable: bool | None = None
    client_bound: int | None = None
    starved_s: Num = None
    starved_share: Num = None
    unreliable: bool | None = None


class PrefillCell(_Spread):
    """A prompt length (``lengths.N``; docs/JSON.md, "bench prefill")."""

    prompt_tokens: int | None = None
    prefill_tok_s: Num = None
    ttft_s: Num = None
    cache_hit_tok_s: Num = None
    repeat_tok_s: Num = None
    repeat_cached_tokens: int | None = None
    cache_hit_source: str | None = None
    tokens_estimated: bool | None = None
    requests: int | None = None
    errors: int | None = None
    truncated: int | None = None
    empty: int | None = None
    bursts: int | None = None
    error: Any = None
    skipped: bool | None = None
    goodput: Slo | None = None


class PrefillLane(_Strict):
    lengths: dict[str, PrefillCell] = {}
    tokens_per_char: Num = None
    tokens_counted_from: str | None = None
    calibration_prompt_tokens: int | None = None
    max_context: int | None = None
    max_context_source: str | None = None
    error: Any = None
    server: Obj = None


class PrefillRatios(_Strict):
    compared: list[str] = []
    by_length: dict[str, Num] = {}


class PrefillResult(_RunState):
    """``bench prefill --json`` (docs/JSON.md, "bench prefill")."""

    bench: Literal["prefill"]
    lanes: dict[str, PrefillLane]
    config: BenchConfig
    ratios: PrefillRatios | None = None


class NeedleRun(_Strict):
    rep: int | None = None
    found: bool | None = None
    key: str | None = None
    answer: str | None = None
    depth: Num = None
    prompt_tokens: int | None = None
    ttft_s: Num = None
    prefill_tok_s: Num = None
    error: str | None = None


class NeedleCell(_Spread):
    """A prompt length of ``bench needles`` (docs/JSON.md): the headline run, the count found, every run."""

    found: bool | None = None
    key: str | None = None
    answer: str | None = None
    depth: Num = None
    prompt_tokens: int | None = None
    ttft_s: Num = None
    prefill_tok_s: Num = None
    error: str | None = None
    found_count: int | None = None
    runs_count: int | None = None
    runs: list[NeedleRun] = []


class NeedleLane(_Strict):
    lengths: dict[str, NeedleCell] = {}
    server: Obj = None


class NeedleResult(_RunState):
    """``bench needles --json`` (docs/JSON.md)."""

    bench: Literal["needles"]
    lanes: dict[str, NeedleLane]
    config: BenchConfig


class CheckItem(_Strict):
    name: str
    passed: bool
    required: bool
    detail: str
    ttft_s: Num = None
    tok_s: Num = None


class CheckResult(_Strict):
    """``lanemon check --json`` (workloads/check.py ``CheckReport``): passed when every required check did."""

    lane: str
    url: str
    model: str | None
    passed: bool
    checks: list[CheckItem]


class AgreePrompt(_Strict):
    id: int
    first_divergence_word: int | None = None
    exact: bool | None = None
    a_words: int | None = None
    b_words: int | None = None
    a_text: str | None = None
    b_text: str | None = None
    error: str | None = None


class AgreeResult(_Strict):
    """``lanemon agree --json`` (workloads/agree.py): where two lanes' greedy replies first differ, by word."""

    bench: Literal["agree"]
    lanes: list[str]
    total: int
    exact: int
    median_first_divergence_word: Num = None
    agree_ge_10_words: int | None = None
    diverge_at_0: int | None = None
    histogram: dict[str, int] = {}
    errors: int | None = None
    prompts: list[AgreePrompt] = []
    interrupted: bool = False
    config: Obj = None


#: every published output: name -> (its type, what prints it)
OUTPUTS: dict[str, tuple[Any, str]] = {
    "bench-decode": (DecodeResult, "lanemon bench decode --json"),
    "bench-prefill": (PrefillResult, "lanemon bench prefill --json"),
    "bench-needles": (NeedleResult, "lanemon bench needles --json"),
    "bench-load": (LoadResult, "lanemon bench load --json"),
    "bench-sweep": (SweepResult, "lanemon bench sweep --json"),
    "race": (RaceResult, "lanemon race --json"),
    "check": (CheckResult, "lanemon check --json"),
    "agree": (AgreeResult, "lanemon agree --json"),
    "history": (list[LaneSummary], "lanemon history --json"),
    "recording": (EventRow, "a recording (--record): a header line, then one event per line"),
}


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of output ``name`` (KeyError for one not published), with its version."""
    typ, command = OUTPUTS[name]
    if name == "recording":  # the header, the event envelope and each event kind's data (recording/schema.py)
        kinds = sorted(DATA_SCHEMAS)
        (header, event, *data), defs = msgspec.json.schema_components([Header, EventRow,
                                                                      *(DATA_SCHEMAS[k] for k in kinds)])
        out = {"$defs": defs, "header": header, "event": event, "data": dict(zip(kinds, data)),
               "description": "each line is JSON: the first the header, every other an event whose data has the "
                              "schema of its kind (unknown keys are read past: a newer writer may add some)"}
    else:
        out = msgspec.json.schema(typ)
    return {"$id": f"lanemon:{name}:{SCHEMA_VERSION}", "title": f"{command} (lanemon {name} schema)",
            "version": SCHEMA_VERSION, **out}


def validate(name: str, obj: Any) -> Any:
    """``obj`` (decoded JSON) as output ``name``'s type, strictly (msgspec.ValidationError names the path);
    ``recording``: one line of a recording."""
    if name == "recording":  # one line: the header, or an event of a kind the schema names
        if isinstance(obj, dict) and "schema" in obj:
            return msgspec.convert(obj, Header, strict=True)
        row = msgspec.convert(obj, EventRow, strict=True)
        if row.kind not in DATA_SCHEMAS:
            raise msgspec.ValidationError(f"event kind {row.kind[:40]!r} is not in the recording schema")
        msgspec.convert(row.data or {}, DATA_SCHEMAS[row.kind], strict=True)
        return row
    return msgspec.convert(obj, OUTPUTS[name][0], strict=True)
