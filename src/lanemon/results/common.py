"""Parts every typed result shares: the strict base (results/base.py), percentiles, SLO/goodput, a bench run's config and state,
energy and cost, a cell's spread over reps.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from lanemon.results.base import Result
from lanemon.results.counters import EngineCounters

Num = float | int | None
R = TypeVar("R", bound="Result")
S = TypeVar("S", bound=msgspec.Struct)
Obj = dict[str, Any] | None
Opt = UnsetType
"""``X | Opt = UNSET``: a key a result carries only sometimes but then may carry as ``null`` (absent: left out of
``--json``; ``None``: printed as ``null``).  ``UNSET`` is falsy; :func:`lanemon.reports.format.num` reads it as
None."""


class Percentiles(Result):
    p50: Num = None
    p90: Num = None
    p99: Num = None
    max: Num = None
    n: int | None = None


class SloTarget(Result):
    """One ``--slo`` target judged (:meth:`lanemon.measure.slo.TargetResult.to_result`: every key, always)."""

    limit_s: Num
    stat: str | None
    value_s: Num
    met: int | None
    total: int | None
    attainment: Num
    held: bool | None


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


class CellGoodput(Result):
    """A bench cell's goodput against ``--slo`` (workloads/bench/run.py ``goodput_of``): every key, always."""

    rate_rps: Num
    share: Num
    good: int
    total: int
    held: bool | None
    targets: dict[str, SloTarget]


class PromptSetInfo(Result):
    name: str | None | Opt = UNSET
    version: str | None | Opt = UNSET
    source: str | None | Opt = UNSET
    prompts: int | None | Opt = UNSET


class LoadConfig(Result):
    """``bench load``'s schedule options (workloads/bench/load.py ``LoadOptions.config``), echoed as recorded: a key
    the bench did not write is absent (an older recording), one it wrote as ``null`` stays ``null``."""

    arrival: str | None | Opt = UNSET
    rate: Num | Opt = UNSET
    requests: int | None | Opt = UNSET
    duration: Num | Opt = UNSET
    warmup: Num | Opt = UNSET
    cooldown: Num | Opt = UNSET
    input_len: str | None | Opt = UNSET
    output_len: str | None | Opt = UNSET
    shared_prefix: int | None | Opt = UNSET
    ignore_eos: bool | None | Opt = UNSET
    trace: str | None | Opt = UNSET
    turns: int | None | Opt = UNSET


class BenchConfig(Result):
    """The bench's start-mark config (workloads/bench/run.py ``BenchOptions.config``), echoed in its results as
    recorded: a key the bench did not write is absent, one it wrote as ``null`` stays ``null``."""

    lanes: list[str] | Opt = UNSET
    reps: int | None | Opt = UNSET
    parallel_lanes: bool | None | Opt = UNSET
    endpoint: str | None | Opt = UNSET
    temperature: Num | Opt = UNSET
    levels: list[int] | None | Opt = UNSET
    categories: list[str] | None | Opt = UNSET
    prompt_set: PromptSetInfo | None | Opt = UNSET
    max_tokens_cap: int | None | Opt = UNSET
    per_category: bool | None | Opt = UNSET
    max_level: int | None | Opt = UNSET
    knee_gain: Num | Opt = UNSET
    lengths: list[int] | None | Opt = UNSET
    cache_check: bool | None | Opt = UNSET
    max_context: int | None | Opt = UNSET
    load: LoadConfig | None | Opt = UNSET
    workers: int | None | Opt = UNSET
    workers_backend: str | None | Opt = UNSET
    worker_hosts: list[dict[str, Any]] | None | Opt = UNSET
    seed: int | None | Opt = UNSET
    seed_drawn: bool | None | Opt = UNSET
    time_scale: Num | Opt = UNSET
    thinking: bool | None | Opt = UNSET
    slo: dict[str, float] | None | Opt = UNSET


class Energy(Result):
    """Energy and cost of a cell or rep (docs/GPU.md): attached by measure/views.py (every key, ``null`` with a
    reason where unknown; ``engine_counters`` where a lane was scraped), absent before."""

    gpu_power_w_mean: Num | Opt = UNSET
    energy_j: Num | Opt = UNSET
    energy_source: str | None | Opt = UNSET
    energy_reason: str | None | Opt = UNSET
    energy_window_s: Num | Opt = UNSET
    tokens_per_joule: Num | Opt = UNSET
    tokens_per_joule_reason: str | None | Opt = UNSET
    usd_per_1m_output_tokens: Num | Opt = UNSET
    cost_reason: str | None | Opt = UNSET
    energy_uncertainty_j: Num | Opt = UNSET
    tokens_per_joule_uncertainty: Num | Opt = UNSET
    energy_note: str | None | Opt = UNSET
    energy_update_s: Num | Opt = UNSET
    energy_dropped: int | None | Opt = UNSET
    engine_counters: EngineCounters | None | Opt = UNSET
    """What the engine did between the cell's or rep's edges (results/counters.py): ``null`` when no scrape pair
    brackets it."""


class ClientLoadInfo(Result):
    """Whether lanemon watched its own loop lag during the run, how many windows it was starved, the worst lag
    (``null`` when not watched): every key, always."""

    watched: bool
    starved_windows: int
    max_lag_ms: Num


class NotRun(Result):
    """What an interrupted run did not run (workloads/bench/run.py ``not_run``): every key, always."""

    planned: int | None
    finished: int
    cut: list[str]
    cells: list[str]
    ranges: list[list[int]]
    lanes: list[str]


class RunState(Result, kw_only=True):
    """What a bench run's JSON says of the run itself (workloads/bench/run.py ``run_state``; docs/JSON.md):
    ``interrupted`` and ``cut`` always; ``running`` while it runs, ``not_run`` when interrupted."""

    interrupted: bool
    cut: list[dict[str, Any]]
    not_run: NotRun | None = None
    running: list[dict[str, Any]] | None = None
    client_load: ClientLoadInfo | None = None


class Spread(Energy):
    """Energy, the reps' spread of a cell's headline figure (workloads/bench/run.py ``spread``) and its starvation
    (``client_bound_figures``).  Each key is set by the results function (absent only in a cell that never ran:
    a length beyond the context)."""

    reps: list[Num] | None | Opt = UNSET
    min: Num | Opt = UNSET
    median: Num | Opt = UNSET
    max: Num | Opt = UNSET
    unstable: bool | None | Opt = UNSET
    client_bound: int | None | Opt = UNSET
    starved_s: Num | Opt = UNSET
    starved_share: Num | Opt = UNSET
    unreliable: bool | None | Opt = UNSET


def as_result(obj: Any, cls: type[R]) -> R:
    """``obj`` as the typed result ``cls``: itself when it already is one, else converted (a result read back from
    JSON: a recording's stored figures, ``history``, an old ``--json`` file).  A key ``cls`` does not name, or a value
    of the wrong type, raises :class:`msgspec.ValidationError` naming its path."""
    if isinstance(obj, cls):
        return obj
    return msgspec.convert(obj, cls, strict=False)


def lenient(raw: dict[str, Any], cls: type[S]) -> S:
    """``raw`` (JSON from a recording: untrusted) as ``cls``, every field of which has a default: a key ``cls`` does
    not know, or a value of the wrong type, is left out rather than failing."""
    try:
        return msgspec.convert(raw, cls, strict=False)
    except msgspec.ValidationError:
        good: dict[str, Any] = {}  # JSON from a recording, filtered key by key
        for key, value in raw.items():
            if key in cls.__struct_fields__:
                try:
                    msgspec.convert({**good, key: value}, cls, strict=False)
                except msgspec.ValidationError:
                    continue
                good[key] = value
        return msgspec.convert(good, cls, strict=False)


def to_json_obj(result: Result) -> dict[str, Any]:
    """A typed result as the JSON object ``--json`` prints (builtins only)."""
    return msgspec.to_builtins(result)
