"""One typed summary of a lane's requests: what the history catalogue stores, what ``lanemon history`` prints
(pure, no IO).

:class:`LaneSummary` is a msgspec Struct (frozen): the row of the catalogue (monitor/history.py), the
objects of ``lanemon history --json``.  :class:`SummaryFold` builds them from a session's events --
the same fold whether the events come from a live bus or from a recording read back, so
``lanemon history --rebuild`` gives the rows the sessions gave.

The rules are the project's (docs/METRICS.md): only complete requests that lanemon was not starved
during (``client_bound``, measure/load.py) feed latency and rate figures; TPOT and decode leave bursts
out; every other outcome is counted apart.  Requests lanemon cancelled itself (quit, Ctrl-C) are not
the lane's and are not counted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.catalogue import FIELD_METRIC, METRIC_FIELDS, metric  # noqa: F401 (re-exported)
from lanemon.measure.load import ClientLoad
from lanemon.measure import slo as slo_rules
from lanemon.measure.metrics import NS, percentile, request_metrics, tail_ok
from lanemon.measure.records import BURST, COMPLETE, OUTCOMES, Assembler, RequestRecord
from lanemon.measure.server import engine_label, sim_name

SUMMARY_VERSION = 4
"""2: rows say what makes them comparable (api, url, prompt set, max tokens, time scale); bench rows carry the
bench's own figures (``basis``); the usage probe and calibration are no rows.  3: prefill, needles and race rows
carry their bench's own figures too (``prefill_tok_s``).  4: a load row's ``requests`` is the rep's own
``requests`` (warm-up included, as ``bench load --json`` says it); the measured window's count is ``measured``."""

NOT_WORKLOADS = ("detect", "calibrate")
"""Requests that are lanemon's own (the 1-token usage probe, a bench's length calibration): no history row."""


class LaneSummary(msgspec.Struct, frozen=True, forbid_unknown_fields=False):
    """One lane's figures over one workload and level of one session (seconds; None when nothing to say)."""

    session: str
    """The recording's file name (the catalogue's key with lane, workload and level)."""
    lane: str
    workload: str
    """``probe`` (live / demo dashboards), the bench name (``decode``, ``load``, ...), ``race``, ``gauntlet``..."""
    level: str = ""
    """The level within the workload (concurrency ``C4``, a rate, a length), ``""`` when it has none."""
    started: str | None = None
    """When the session started (ISO 8601 UTC, from the recording header)."""
    started_s: float | None = None
    """The same as epoch seconds (what ``--since`` compares)."""
    command: str | None = None
    model: str | None = None
    engine: str | None = None
    """The engine its /metrics named (vllm, sglang), when it had them."""
    lanemon_version: str | None = None
    simulated: bool = False
    """The lane was lanemon's simulator (demo, ``--demo``, or a lane whose /models said so)."""
    requests: int = 0
    """Requests sent in the row's cell or rep, every outcome (the catalogue's ``requests``; a load row: the rep's
    own ``requests``, warm-up included)."""
    measured: int | None = None
    """bench load: requests sent inside the measured window (the rep's ``measured``; ``complete``, ``error`` and
    the figures are over these); None for every other row."""
    complete: int = 0
    error: int = 0
    truncated: int = 0
    empty: int = 0
    client_bound: int = 0
    """Complete requests left out of the figures because lanemon itself was starved."""
    latency_n: int = 0
    """Requests the TTFT / E2E figures rest on (the counted complete ones).  A p90 needs 10, a p99 100
    (measure/metrics.py TAIL_MIN_SAMPLES): with fewer it is None and ``*_max`` says the largest sample."""
    ttft_max: float | None = None
    tpot_max: float | None = None
    e2e_max: float | None = None
    ttft_p50: float | None = None
    ttft_p90: float | None = None
    ttft_p99: float | None = None
    tpot_p50: float | None = None
    tpot_p90: float | None = None
    tpot_p99: float | None = None
    e2e_p50: float | None = None
    e2e_p90: float | None = None
    e2e_p99: float | None = None
    decode_tok_s_p50: float | None = None
    """Median per-stream decode rate."""
    tok_s: float | None = None
    """Aggregate: generated tokens of the counted requests / their first send to last end (tok/s; pauses
    between requests count, so sequential probes read far below a stream's rate: see decode_tok_s_p50)."""
    duration_s: float | None = None
    slo: dict[str, float] = {}
    goodput_rps: float | None = None
    """Requests meeting every SLO target per second of ``duration_s`` (None without an SLO)."""
    slo_attainment: float | None = None
    """Share of the requests meeting every SLO target (errors are misses; None without an SLO)."""
    steady_tok_s: float | None = None
    """decode: the level's steady-state aggregate (the bench's ``steady_tok_s``)."""
    prefill_tok_s: float | None = None
    """prefill, needles: the length's prefill rate (the bench's ``prefill_tok_s``)."""
    basis: str = "requests"
    """Where the figures come from: ``decode results``, ``prefill results``, ``needles results``, ``race results``
    or ``load results`` (the workload's own typed result for the cell: what it printed; monitor/history.py), else
    ``requests`` (this module's fold over the row's requests: live sessions, the gauntlet, ...)."""
    api: str = ""
    """``completions`` or ``chat`` (``mixed`` when the row's requests used both)."""
    url: str | None = None
    """The lane's URL from the recording header (a simulated lane's port changes every run: not compared)."""
    prompt_set: str | None = None
    """``name@version`` of a bench's prompt set."""
    max_tokens: int | None = None
    """A bench's ``--max-tokens`` cap, else the one max_tokens every request of the row asked (None: mixed)."""
    time_scale: float | None = None
    """A bench's ``--time-scale`` (simulated lanes), from its start mark."""


@dataclass(slots=True)
class _Row:
    lane: str
    workload: str
    level: str
    outcome: str
    sent_ns: int
    end_ns: int
    ttft_s: float | None
    tpot_s: float | None
    e2e_s: float | None
    decode_tok_s: float | None
    generated: int
    burst: bool
    ok: bool
    api: str = ""
    max_tokens: int | None = None

    @property
    def generated_tokens(self) -> int:
        return self.generated


def _r(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(float(x), digits)


def _tail(values: list[float], q: int) -> float | None:
    """A tail percentile, or None when too few samples carry it (the project's rule, measure/metrics.py)."""
    return _r(percentile(values, q)) if tail_ok(q, len(values)) else None


def _workload(rec: RequestRecord) -> tuple[str, str]:
    meta = rec.meta or {}
    bench = meta.get("bench")
    workload = str(bench) if bench not in (None, "") else (str(rec.purpose) if rec.purpose else "probe")
    level = meta.get("level")
    if level in (None, "") and isinstance(meta.get("cell"), str):
        parts = meta["cell"].split("/")  # A/C3/r0 -> C3
        level = parts[1] if len(parts) >= 2 else ""
    return workload[:64], ("" if level is None else str(level))[:64]


class SummaryFold:
    """Fold a session's events into :class:`LaneSummary` rows (call :meth:`summaries` at the end)."""

    def __init__(self, header: Mapping[str, Any] | None = None, *, session: str = "",
                 slo: Mapping[str, float] | None = None, simulated: bool | None = None) -> None:
        self.header = dict(header or {})
        self.session = session
        self.slo = dict(slo or {}) or _slo(self.header.get("slo"))
        self.config: dict[str, Any] = {}
        """The bench start mark's config (what makes its rows comparable)."""
        """The SLO goodput and attainment are judged on: given, else the header's (live sessions), else the one
        a bench run's start mark carries in its config."""
        self.simulated = simulated
        self.load = ClientLoad()
        self._asm = Assembler(keep_text=False)
        self._rows: list[_Row] = []
        self.models: dict[str, str] = {}
        self.engines: dict[str, str] = {}
        self.simulates: dict[str, str] = {}
        """The simulator profile each simulated lane said it runs (measure/server.engine_label)."""
        self.sim_lanes: set[str] = set()
        self.urls: dict[str, str] = {}
        for lane in self.header.get("lanes") or []:
            if isinstance(lane, dict) and isinstance(lane.get("name"), str) and isinstance(lane.get("model"), str):
                self.models[lane["name"]] = lane["model"]
            if isinstance(lane, dict) and isinstance(lane.get("name"), str) and isinstance(lane.get("url"), str):
                self.urls[lane["name"]] = lane["url"][:300]

    def apply(self, ev: Event) -> None:
        kind = ev.kind
        if kind == schema.TOKEN:
            self._asm.apply(ev)
            return
        if self.load.apply(ev):
            return
        if kind == schema.MARK and ev.data.get("label") == "bench" and ev.data.get("phase") == "start":
            config = ev.data.get("config")
            if isinstance(config, dict):
                self.config = config
                if not self.slo:
                    self.slo = _slo(config.get("slo"))
            return
        if ev.lane is not None:
            d = ev.data
            if kind in (schema.PROBE, schema.LANE) and isinstance(d.get("model"), str) and d["model"]:
                self.models[ev.lane] = d["model"]
                if kind == schema.PROBE and d.get("simulated") is True:  # /models said owned_by lanemon-sim
                    self.sim_lanes.add(ev.lane)
                    if sim_name(d.get("simulates")):
                        self.simulates[ev.lane] = d["simulates"]
                return
            if kind == schema.SERVER_METRICS:
                if d.get("ok") and isinstance(d.get("engine"), str):
                    self.engines[ev.lane] = d["engine"][:32]
                return
        rec = self._asm.apply(ev)
        if rec is None or rec.outcome is None:
            return
        if rec.error is not None and rec.error.cls == schema.ERR_CANCELLED:
            return
        workload, level = _workload(rec)
        if rec.purpose in NOT_WORKLOADS or (rec.meta or {}).get("part") == "calibrate" or level == "calibrate":
            return
        m = request_metrics(rec)
        if rec.model and rec.lane not in self.models:
            self.models[rec.lane] = rec.model
        self._rows.append(_Row(rec.lane, workload, level, rec.outcome, rec.sent_ns or 0, rec.end_ns or 0, m.ttft_s,
                               m.tpot_s, m.e2e_s, m.decode_tok_s, m.generated_tokens, BURST in m.flags, m.ok,
                               str(rec.endpoint or "")[:16], _int((rec.meta or {}).get("max_tokens"))))

    def feed(self, events: Iterable[Event]) -> "SummaryFold":
        for ev in events:
            self.apply(ev)
        return self

    def summaries(self) -> list[LaneSummary]:
        """One row per (lane, workload, level), in the order they first finished a request."""
        groups: dict[tuple[str, str, str], list[_Row]] = {}
        for row in self._rows:
            groups.setdefault((row.lane, row.workload, row.level), []).append(row)
        h = self.header
        started = h.get("created") if isinstance(h.get("created"), str) else None
        wall = h.get("wall_t0_s")
        started_s = float(wall) if isinstance(wall, (int, float)) and not isinstance(wall, bool) else None
        command = h.get("command") if isinstance(h.get("command"), str) else None
        version = h.get("lanemon") if isinstance(h.get("lanemon"), str) else None
        out = []
        for (lane, workload, level), rows in groups.items():
            counts = {o: 0 for o in OUTCOMES}
            for r in rows:
                counts[r.outcome] = counts.get(r.outcome, 0) + 1
            clean = [r for r in rows if r.outcome == COMPLETE and not self.load.overlaps(r.sent_ns, r.end_ns)]
            judged = [r for r in rows if r.outcome != COMPLETE or not self.load.overlaps(r.sent_ns, r.end_ns)]
            ttft = [r.ttft_s for r in clean if r.ttft_s is not None]
            tpot = [r.tpot_s for r in clean if r.tpot_s is not None and not r.burst]
            e2e = [r.e2e_s for r in clean if r.e2e_s is not None]
            dec = [r.decode_tok_s for r in clean if r.decode_tok_s is not None and not r.burst]
            start = min(r.sent_ns for r in rows)
            end = max(r.end_ns for r in rows)
            duration = (end - start) / NS if end > start else None
            c_start = min((r.sent_ns for r in clean), default=0)
            c_end = max((r.end_ns for r in clean), default=0)
            tok_s = (sum(r.generated for r in clean) / ((c_end - c_start) / NS)) if clean and c_end > c_start else None
            good = attain = None
            if self.slo and judged:
                result = slo_rules.evaluate(judged, self.slo, duration)
                attain, good = result.share, result.goodput_rps
            simulated = self.simulated if self.simulated is not None else (command == "demo" or lane in self.sim_lanes)
            apis = {r.api for r in rows}
            asked = {r.max_tokens for r in rows}
            cfg = self.config
            pset = cfg.get("prompt_set") if isinstance(cfg.get("prompt_set"), dict) else {}
            cap = _int(cfg.get("max_tokens_cap"))
            out.append(LaneSummary(
                session=self.session, lane=lane, workload=workload, level=level, started=started, started_s=started_s,
                command=command, model=self.models.get(lane), engine=engine_label(self.engines.get(lane), self.simulates.get(lane)),
                lanemon_version=version,
                simulated=bool(simulated), requests=len(rows), complete=counts[COMPLETE], error=counts["error"],
                truncated=counts["truncated"], empty=counts["empty"],
                client_bound=sum(1 for r in rows if r.outcome == COMPLETE) - len(clean),
                latency_n=len(ttft), ttft_max=_r(max(ttft, default=None)), tpot_max=_r(max(tpot, default=None)),
                e2e_max=_r(max(e2e, default=None)),
                ttft_p50=_r(percentile(ttft, 50)), ttft_p90=_tail(ttft, 90), ttft_p99=_tail(ttft, 99),
                tpot_p50=_r(percentile(tpot, 50)), tpot_p90=_tail(tpot, 90), tpot_p99=_tail(tpot, 99),
                e2e_p50=_r(percentile(e2e, 50)), e2e_p90=_tail(e2e, 90), e2e_p99=_tail(e2e, 99),
                decode_tok_s_p50=_r(percentile(dec, 50), 3), tok_s=_r(tok_s, 3), duration_s=_r(duration, 3),
                slo=dict(self.slo), goodput_rps=_r(good), slo_attainment=_r(attain),
                api=apis.pop() if len(apis) == 1 else "mixed", url=self.urls.get(lane),
                prompt_set=f"{str(pset.get('name'))[:64]}@{str(pset.get('version'))[:16]}" if pset.get("name") else None,
                max_tokens=cap if cap is not None else (asked.pop() if len(asked) == 1 else None),
                time_scale=_num(cfg.get("time_scale"))))
        return out


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def comparable_key(s: LaneSummary) -> tuple:
    """What must be equal for two rows' figures to be compared (a trend, a shift): the lane, the workload and
    its level, the API, where the lane was (its URL; a simulated lane: its model and time scale, its port
    changes every run), the prompt set, the max tokens and simulated or real."""
    where = (s.model, s.time_scale) if s.simulated else (s.url, s.time_scale)
    return (s.lane, s.workload, s.level, s.api, where, s.prompt_set, s.max_tokens, s.simulated)


def level_order(level: str) -> tuple:
    """Levels sort as numbers (``C4`` < ``C16``, ``8000`` < ``32000``); a level without a number after them."""
    m = re.search(r"\d+(?:\.\d+)?", level or "")
    return (0, float(m.group()), level) if m else (1, 0.0, level or "")


def trend_groups(rows: Iterable[LaneSummary]) -> dict[tuple, list[LaneSummary]]:
    """Rows (oldest first) grouped into comparable series (:func:`comparable_key`), ordered by lane, workload
    and level as a number; each series keeps its rows' order."""
    groups: dict[tuple, list[LaneSummary]] = {}
    for r in rows:
        groups.setdefault(comparable_key(r), []).append(r)
    return dict(sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1], level_order(kv[0][2]))))


def format_figure(field: str, v: float | None) -> str:
    """A history figure with its unit (the catalogue's): ``171 ms``, ``1,922 tok/s``, ``4.24 req/s``, ``50 %``."""
    if v is None:
        return "-"
    unit = metric(FIELD_METRIC[field]).unit
    if unit == "s":
        return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"
    if unit == "tok/s":
        return f"{v:,.0f} tok/s" if v >= 100 else f"{v:,.1f} tok/s"
    if unit == "req/s":
        return f"{v:.2f} req/s"
    if unit == "ratio":
        return f"{v * 100:.0f} %"
    return f"{v:,.0f} {unit}"


def _slo(value: Any) -> dict[str, float]:
    """An SLO as read from a recording (untrusted): only ttft/tpot/e2e with finite positive seconds."""
    if not isinstance(value, dict):
        return {}
    out = {}
    for key in ("ttft", "tpot", "e2e"):
        v = value.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1e6:
            out[key] = float(v)
    return out


def summary_to_dict(s: LaneSummary) -> dict[str, Any]:
    return msgspec.to_builtins(s)


SHIFT_MIN_SESSIONS = 3
"""Earlier sessions (same lane, workload and level) a shift is judged against: fewer say nothing."""
SHIFT_MADS = 3.0
"""A figure shifted when it is further than this many median absolute deviations from the earlier sessions'
median (and beyond :data:`SHIFT_FLOOR` of it: identical earlier figures have no spread to speak of)."""
SHIFT_FLOOR = 0.05


@dataclass(frozen=True, slots=True)
class Shift:
    """The latest session's figure against the lane's own earlier sessions."""

    value: float
    median: float
    spread: float
    """The band half-width: max(SHIFT_MADS x MAD, SHIFT_FLOOR x |median|)."""
    n: int
    """Earlier sessions judged against."""

    @property
    def shifted(self) -> bool:
        return abs(self.value - self.median) > self.spread

    @property
    def change(self) -> float | None:
        """Relative change from the median (+0.25: 25 % higher)."""
        return (self.value - self.median) / self.median if self.median else None


def shift(values: Iterable[float | None]) -> Shift | None:
    """Judge the last value of a same-workload series against the ones before it; None when the last has no
    figure or fewer than :data:`SHIFT_MIN_SESSIONS` earlier ones do."""
    xs = list(values)
    if not xs or xs[-1] is None:
        return None
    earlier = [float(v) for v in xs[:-1] if v is not None]
    if len(earlier) < SHIFT_MIN_SESSIONS:
        return None
    med = percentile(earlier, 50)
    assert med is not None
    mad = percentile([abs(v - med) for v in earlier], 50) or 0.0
    return Shift(float(xs[-1]), med, max(SHIFT_MADS * mad, SHIFT_FLOOR * abs(med)), len(earlier))
