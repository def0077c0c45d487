"""Parts every typed result shares: the strict base, percentiles, SLO/goodput, a bench run's config and state,
energy and cost, a cell's spread over reps.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec

Num = float | int | None
R = TypeVar("R", bound="Result")
Obj = dict[str, Any] | None


class Result(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    """The base of every typed result: a key the contract does not name is an error when read strictly.

    Encoded (``--json``: :func:`to_json_obj`), a field still at its default is left out.  A key ``--json`` always
    carries, even as ``null``, is a field with no default (required: the schema says so, and a result built
    without it fails at construction); a key carried only sometimes has a default.  Fields are keyword-only."""


class Percentiles(Result):
    p50: Num = None
    p90: Num = None
    p99: Num = None
    max: Num = None
    n: int | None = None


class SloTarget(Result):
    limit_s: Num = None
    stat: str | None = None
    value_s: Num = None
    met: int | None = None
    total: int | None = None
    attainment: Num = None
    held: bool | None = None


class Slo(Result):
    """Goodput against ``--slo`` (docs/JSON.md, "SLO and goodput")."""

    rate_rps: Num = None
    goodput_rps: Num = None
    share: Num = None
    good: int | None = None
    total: int | None = None
    duration_s: Num = None
    held: bool | None = None
    targets: dict[str, SloTarget] = {}


class PromptSetInfo(Result):
    name: str | None = None
    version: str | None = None
    source: str | None = None
    prompts: int | None = None


class LoadConfig(Result):
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


class BenchConfig(Result):
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


class Energy(Result):
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


class ClientLoadInfo(Result):
    watched: bool | None = None
    starved_windows: int | None = None
    max_lag_ms: Num = None


class RunState(Result, kw_only=True):
    """What a bench run's JSON says of the run itself (workloads/bench/run.py ``run_state``; docs/JSON.md)."""

    interrupted: bool = False
    cut: list[Any] = []
    not_run: Obj = None
    running: list[Any] | None = None
    client_load: ClientLoadInfo | None = None


class Spread(Energy):
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


def as_result(obj: Any, cls: type[R]) -> R:
    """``obj`` as the typed result ``cls``: itself when it already is one, else converted (a result read back from
    JSON: a recording's stored figures, ``history``, an old ``--json`` file).  A key ``cls`` does not name, or a value
    of the wrong type, raises :class:`msgspec.ValidationError` naming its path."""
    if isinstance(obj, cls):
        return obj
    return msgspec.convert(obj, cls, strict=False)


def to_json_obj(result: Result) -> dict[str, Any]:
    """A typed result as the JSON object ``--json`` prints (builtins only)."""
    return msgspec.to_builtins(result)
