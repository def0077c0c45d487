"""What a monitor keeps open needs: per-lane figures over a sliding window, latency histograms since the
start, outcome counters, the engine's gauges (pure, no IO).

:class:`MonitorState` folds the bus with the dashboard's own folds -- :class:`~lanemon.folds.dashboard.SessionState`
(health, model, outcome totals, the engine's /metrics) and :class:`~lanemon.folds.series.SeriesState`
(the samples the window statistics come from) -- so the exporter, the alert rules and the dashboard say
the same numbers.  On top of them it keeps:

* cumulative TTFT / TPOT histograms (the exporter's ``lanemon_ttft_seconds`` / ``lanemon_tpot_seconds``),
  observed only for complete requests lanemon was not starved during (TPOT also not for bursts): the
  project's rule (docs/METRICS.md);
* the engine's preemption counter over time (preemptions in the window);
* :class:`Availability`: each lane's down / up changes from its health probes (the ``lane_state`` events, the
  headless stderr lines, the exporter's down counter).

:meth:`MonitorState.figures` answers ``{lane: {metric: value}}`` with the names of
:data:`lanemon.measure.alerts.METRICS`, what alert rules are evaluated on.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from lanemon.events import Event
from lanemon import events as schema
from lanemon.folds.dashboard import LaneState, SessionState
from lanemon.folds.series import SeriesState
from lanemon.measure import energy, metrics
from lanemon.measure.load import CLIENT_BOUND
from lanemon.measure import slo as slo_rules
from lanemon.measure.metrics import meets_slo
from lanemon.measure.records import BURST, RequestRecord
from lanemon.results.monitor_events import DOWN, UP, LaneDown, LaneUp, event_data
from lanemon.results.readings import ProbeResult, engine_metrics, read
from lanemon.untrusted import inert

NS = 1_000_000_000

TTFT_BUCKETS = (0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
                20.0, 40.0, 80.0, 160.0, 640.0)
"""Upper bounds (s) of the TTFT histogram: vLLM's own ``time_to_first_token_seconds`` buckets."""
TPOT_BUCKETS = (0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2,
                0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
"""Upper bounds (s) of the TPOT histogram (vLLM's ``inter_token_latency_seconds`` buckets)."""
DEFAULT_WINDOW_S = 60.0
MAX_MODEL_IDS = 4
"""Distinct model ids a lane may show as a label value; a lane's further ids are :data:`OTHER_MODEL`."""
OTHER_MODEL = "(other)"
GPU_MARGIN_S = 120.0
"""GPU readings kept from before the window: a slow exporter's counter update either side of its start."""
SATURATION_TTFT_RISE = 1.2
"""Over-saturation: the second half of the window's median TTFT is at least this many times the first half's ..."""
SATURATION_FLAT = 0.10
"""... while the engine's generation throughput moved by less than this share ..."""
SATURATION_QUEUE_RISE = 1.0
"""... and its queue (requests waiting) grew by at least this many requests on average."""


def oversaturated(waiting: tuple[float, float] | None, ttft: tuple[float, float] | None,
                  gen_tok_s: tuple[float, float] | None) -> bool | None:
    """The over-saturation flag from (first half, second half) of a window: the queue grows and TTFT rises
    while throughput stays flat -- more load is only waiting longer.  None when a figure is missing."""
    if waiting is None or ttft is None or gen_tok_s is None or ttft[0] <= 0 or gen_tok_s[0] <= 0:
        return None
    return (waiting[1] - waiting[0] >= SATURATION_QUEUE_RISE and ttft[1] >= SATURATION_TTFT_RISE * ttft[0]
            and abs(gen_tok_s[1] - gen_tok_s[0]) <= SATURATION_FLAT * gen_tok_s[0])


def saturation(series: SeriesState, lane: str, t0: int, t1: int) -> float | None:
    """1.0 / 0.0: :func:`oversaturated` over the two halves of ``[t0, t1]`` -- the median TTFT of the lane's
    clean samples and the mean queue (``waiting``) and generation rate of its ``/metrics`` scrapes in each
    half; None without the figures.  The dashboard (over its chart window), the alert rules and the exporter
    all read this one function."""
    mid = (t0 + t1) // 2
    halves = (series.window(lane, t0, mid).ttft[0], series.window(lane, mid + 1, t1).ttft[0])
    ttft = halves if None not in halves else None
    scrapes = series.lane(lane).server

    def split(key: str) -> tuple[float, float] | None:
        pts = scrapes.points(key)
        a = [v for t, v in pts if t0 <= t <= mid]
        b = [v for t, v in pts if mid < t <= t1]
        return (sum(a) / len(a), sum(b) / len(b)) if a and b else None

    flag = oversaturated(split("waiting"), ttft, split("gen_tok_s"))  # type: ignore[arg-type]
    return None if flag is None else float(flag)


REASON_MAX = 200
"""Characters of a probe's error kept in a down line / event (the message comes from the lane: untrusted)."""


@dataclass(frozen=True, slots=True)
class LaneChange:
    """A lane went down (its health probe failed after answering, or from the start) or came back up."""

    lane: str
    state: str  # down | up
    t_ns: int
    cls: str | None = None
    """Down: the probe's error class (connect, timeout, http, ...)."""
    message: str = ""
    """Down: why (the probe's error, escapes stripped, at most :data:`REASON_MAX` characters)."""
    since_ns: int | None = None
    """Up: when it went down."""

    @property
    def down_s(self) -> float | None:
        return None if self.since_ns is None else round((self.t_ns - self.since_ns) / NS, 3)

    def event(self) -> LaneDown | LaneUp:
        """The ``lane_state`` event's data, typed (results/monitor_events.py; docs/RECORDING.md)."""
        if self.state == DOWN:
            return LaneDown(t_s=round(self.t_ns / NS, 3), cls=self.cls, message=self.message)
        return LaneUp(t_s=round(self.t_ns / NS, 3), since_s=round((self.since_ns or 0) / NS, 3), down_s=self.down_s)

    def to_json(self) -> dict[str, object]:
        """:meth:`event` as the JSON object the ``lane_state`` event carries."""
        return event_data(self.event())

    def line(self) -> str:
        """One line for stderr: ``lane D DOWN at +2.0s: connect: connection refused (...)`` /
        ``lane D UP at +5.0s (down 3.0 s)``; the lane name and the reason passed through ``inert``."""
        name = inert(self.lane, 64)
        if self.state == DOWN:
            why = inert(self.message, REASON_MAX) or "no answer"
            return f"lane {name} DOWN at +{self.t_ns / NS:.1f}s: {inert(self.cls or 'probe', 32)}: {why}"
        return f"lane {name} UP at +{self.t_ns / NS:.1f}s (down {self.down_s:.1f} s)"


class Availability:
    """Each lane's down / up changes from its health probes (``probe`` events), pure.

    A lane is down from its first failed probe (at once: a monitor says so on the probe that saw it) until
    a probe answers again.  The first answer of a lane never seen down is not a change (nothing to say)."""

    def __init__(self) -> None:
        self.down_since: dict[str, int] = {}
        """Lanes down now -> when they went down (ns)."""
        self.seen: set[str] = set()
        self.ever_down: set[str] = set()
        self.downs: dict[str, int] = {}
        """Lane -> times it went down."""
        self.down_ns: dict[str, int] = {}
        """Lane -> ns spent down, finished stretches only (:meth:`down_total_s` adds the current one)."""

    def apply(self, ev: Event) -> LaneChange | None:
        if ev.kind != schema.PROBE or ev.lane is None:
            return None
        lane, probe = ev.lane, read(ev.data, ProbeResult)  # decoded at the edge
        if probe is None:  # a recording's probe that does not fit its type says nothing about the lane: skipped
            return None
        ok = probe.ok
        self.seen.add(lane)
        since = self.down_since.get(lane)
        if ok:
            if since is None:
                return None
            del self.down_since[lane]
            self.down_ns[lane] = self.down_ns.get(lane, 0) + max(0, ev.t - since)
            return LaneChange(lane, UP, ev.t, since_ns=since)
        if since is not None:
            return None
        self.down_since[lane] = ev.t
        self.ever_down.add(lane)
        self.downs[lane] = self.downs.get(lane, 0) + 1
        cls = probe.cls
        message = probe.message or probe.status or ""
        return LaneChange(lane, DOWN, ev.t, cls=inert(cls, 32) if cls else None,
                          message=inert(str(message), REASON_MAX))

    def down_total_s(self, lane: str, now_ns: int) -> float:
        since = self.down_since.get(lane)
        return (self.down_ns.get(lane, 0) + (max(0, now_ns - since) if since is not None else 0)) / NS


@dataclass
class Histogram:
    """A cumulative histogram: counts per upper bound (the last bucket is +Inf), sum and count."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value
        self.n += 1

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, observations <= it) per bucket, +Inf last (Prometheus' ``le`` buckets)."""
        out, run = [], 0
        for bound, c in zip((*self.bounds, float("inf")), self.counts):
            run += c
            out.append((bound, run))
        return out


@dataclass(frozen=True, slots=True)
class _Judged:
    """A sample as meets_slo reads it (measure/metrics.py: ok, ttft_s, tpot_s, e2e_s, generated_tokens)."""

    ok: bool
    ttft_s: float | None
    tpot_s: float | None
    e2e_s: float | None
    generated_tokens: int


def slo_window(series: SeriesState, lane: str, t0: int, t1: int, slo: Mapping[str, float], *,
               final: bool = False) -> tuple[float | None, float | None]:
    """(attainment, goodput req/s) of ``lane`` over the samples that ended in [t0, t1] (measure/slo.py's
    arithmetic; the dashboard's chart window and the monitor's window alike).  A complete request lanemon was
    starved during is neither a hit nor a miss of the lane's; (None, None) without an SLO or a request."""
    if not slo:
        return None, None
    judged = []
    for s in series.samples(lane, t0):
        if s.t < t0 or s.t > t1 or series.pending(s, final):
            continue
        if s.outcome == "ok" and CLIENT_BOUND in series.flags_of(s):
            continue
        judged.append(_Judged(s.outcome == "ok", s.ttft_s, s.tpot_s, s.e2e_s, int(s.tokens)))
    if not judged:
        return None, None
    result = slo_rules.evaluate(judged, slo, (t1 - max(t0, 0)) / NS)
    return result.share, result.goodput_rps


def breaches(series: SeriesState, lane: str, t0: int, t1: int, slo: Mapping[str, float]) -> list[int]:
    """End times (ns) of the window's judged requests that missed the SLO: what a chart marks."""
    out = []
    for s in series.samples(lane, t0):
        if s.t < t0 or s.t > t1 or (s.outcome == "ok" and CLIENT_BOUND in series.flags_of(s)):
            continue
        if not meets_slo(_Judged(s.outcome == "ok", s.ttft_s, s.tpot_s, s.e2e_s, int(s.tokens)), dict(slo)):  # type: ignore[arg-type]
            out.append(s.t)
    return out


class _Session(SessionState):
    """The dashboard's fold, telling the monitor which complete requests count as lane speed."""

    def __init__(self, owner: "MonitorState", lanes) -> None:
        super().__init__(lanes)
        self._owner = owner

    def _plot(self, lane: LaneState, rec: RequestRecord, m: metrics.RequestMetrics) -> None:
        super()._plot(lane, rec, m)
        if CLIENT_BOUND in rec.flags:
            return
        hist = self._owner.histograms(lane.name)
        if m.generated_tokens:
            self._owner.output_tokens[lane.name] = self._owner.output_tokens.get(lane.name, 0) + m.generated_tokens
        if m.ttft_s is not None:
            hist[0].observe(m.ttft_s)
        if m.tpot_s is not None and BURST not in m.flags:
            hist[1].observe(m.tpot_s)


class MonitorState:
    """Per-lane figures for the exporter and the alert rules, from the bus."""

    def __init__(self, lanes: list[tuple[str, str, str | None]] | None = None, *, window_s: float = DEFAULT_WINDOW_S,
                 slo: Mapping[str, float] | None = None) -> None:
        self.window_s = float(window_s)
        self.slo = dict(slo or {})
        self.session = _Session(self, lanes)
        self.series = SeriesState([name for name, _, _ in lanes or []])
        self.hists: dict[str, tuple[Histogram, Histogram]] = {}
        self.preemptions: dict[str, deque[tuple[int, float]]] = {}
        self.availability = Availability()
        self.gpu: dict[str, deque[energy.Reading]] = {}
        """Each lane's GPU readings (power, energy counter) over the window and a little before it."""
        self.cost_per_hour: dict[str, float] = {}
        self.output_tokens: dict[str, int] = {}
        """Generated tokens of the complete requests lanemon was not starved during, since the start."""
        self.models: dict[str, list[str]] = {}
        """Each lane's distinct model ids, the first :data:`MAX_MODEL_IDS` (the exporter's label values)."""
        self.model_changes: dict[str, int] = {}
        self._model_now: dict[str, str] = {}
        self.last_change: LaneChange | None = None
        """The down / up change the latest event made (None: none)."""
        self.version = 0

    @property
    def lanes(self) -> dict[str, LaneState]:
        return self.session.lanes

    @property
    def last_t(self) -> int:
        return max(self.session.last_t, self.series.last_t)

    def histograms(self, lane: str) -> tuple[Histogram, Histogram]:
        h = self.hists.get(lane)
        if h is None:
            h = self.hists[lane] = (Histogram(TTFT_BUCKETS), Histogram(TPOT_BUCKETS))
        return h

    def apply(self, ev: Event) -> None:
        self.version += 1
        self.session.apply(ev)
        self.series.apply(ev)
        self.last_change = self.availability.apply(ev)
        if ev.lane is not None and ev.kind in (schema.PROBE, schema.LANE):
            self._note_model(ev.lane)
            if ev.kind == schema.LANE:
                self.cost_per_hour.update(energy.lane_costs([ev]))
        if ev.kind == schema.GPU and ev.lane is not None:
            for r in energy.readings([ev], ev.lane):
                dq = self.gpu.setdefault(ev.lane, deque())
                dq.append(r)
                while len(dq) > 2 and dq[1].t < ev.t - int((self.window_s + GPU_MARGIN_S) * NS):
                    dq.popleft()
        if ev.kind == schema.SERVER_METRICS and ev.lane is not None:
            m = engine_metrics(ev.data)
            v = m.preemptions_total if m is not None else None
            if v is not None and v >= 0:
                dq = self.preemptions.setdefault(ev.lane, deque())
                dq.append((ev.t, float(v)))
                while len(dq) > 2 and dq[1][0] < ev.t - int(self.window_s * NS):
                    dq.popleft()

    def _note_model(self, lane: str) -> None:
        state = self.lanes.get(lane)
        model = state.model if state is not None else None
        if not model or model == self._model_now.get(lane):
            return
        if lane in self._model_now:
            self.model_changes[lane] = self.model_changes.get(lane, 0) + 1
        self._model_now[lane] = model
        seen = self.models.setdefault(lane, [])
        if model not in seen and len(seen) < MAX_MODEL_IDS:
            seen.append(model)

    def model_label(self, lane: str) -> str | None:
        """The lane's model id as an exporter label: the current one if among the first
        :data:`MAX_MODEL_IDS` the lane had, else ``OTHER_MODEL`` (a lane changing its model id on every probe
        must not make a series per id); None while no model is known."""
        state = self.lanes.get(lane)
        model = state.model if state is not None else None
        if not model:
            return None
        return model if model in self.models.get(lane, ()) else OTHER_MODEL

    def energy_figures(self, lane: str, now_ns: int | None = None) -> dict[str, float | None]:
        """GPU energy (J) and mean power (W) over the window, the window's output tokens per joule and
        USD per 1M output tokens (measure/energy.energy_of: the benches' definitions, withheld as they are when
        the energy's uncertainty is over 10 %); None where unknown."""
        now = self.last_t if now_ns is None else now_ns
        t0 = max(0, now - int(self.window_s * NS))
        tokens = sum(int(s.tokens) for s in self.series.samples(lane, t0)
                     if t0 <= s.t <= now and s.outcome == "ok" and CLIENT_BOUND not in self.series.flags_of(s))
        e = energy.energy_of([], lane, [(t0, now)], tokens, self.cost_per_hour.get(lane),
                             rs=list(self.gpu.get(lane, ())), what="monitor window")
        return {"energy_j": e.energy_j, "gpu_power_w_mean": e.gpu_power_w_mean,
                "tokens_per_joule": e.tokens_per_joule, "usd_per_1m_output_tokens": e.usd_per_1m_output_tokens,
                "output_tokens": float(tokens)}

    # -- reading -------------------------------------------------------------------------------------
    def _slo_figures(self, lane: str, t0: int, t1: int) -> tuple[float | None, float | None]:
        return slo_window(self.series, lane, t0, t1, self.slo)

    def figures(self, now_ns: int | None = None) -> dict[str, dict[str, float | None]]:
        """``{lane: {metric: value}}`` over the window ending at ``now_ns`` (default: the latest event)."""
        now = self.last_t if now_ns is None else now_ns
        t0 = now - int(self.window_s * NS)
        out: dict[str, dict[str, float | None]] = {}
        for name, lane in self.lanes.items():
            w = self.series.window(name, t0, now)
            failed = w.requests_err + w.requests_truncated + w.requests_empty
            attain, good = self._slo_figures(name, t0, now)
            last = lane.server.last if lane.server.available else {}
            out[name] = {
                "up": None if lane.up is None else float(lane.up),
                "down": None if lane.up is None else float(not lane.up),
                "ttft_p50": w.ttft[0], "ttft_p90": w.ttft[1], "ttft_p99": w.ttft[2],
                "tpot_p50": w.tpot[0], "tpot_p90": w.tpot[1], "tpot_p99": w.tpot[2],
                "e2e_p50": w.e2e[0], "e2e_p90": w.e2e[1], "e2e_p99": w.e2e[2],
                "decode_tok_s": w.tok_s_p50,
                "requests": float(w.n),
                "error_share": failed / w.n if w.n else None,
                "slo_attainment": attain,
                "goodput": good,
                "kv_usage": _num(last.get("kv_usage")),
                "waiting": _num(last.get("waiting")),
                "running": _num(last.get("running")),
                "preemptions": self._preempted(name, t0),
                "server_ttft": _num(lane.server.timings.ttft_s),
                "oversaturated": saturation(self.series, name, t0, now),
            }
        return out

    def _preempted(self, lane: str, t0: int) -> float | None:
        dq = self.preemptions.get(lane)
        if not dq:
            return None
        before = [v for t, v in dq if t <= t0]
        base = before[-1] if before else dq[0][1]
        return max(0.0, dq[-1][1] - base)  # a restarted engine resets its counter: never negative


def _num(x: object) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None
