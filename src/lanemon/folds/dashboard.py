"""Dashboard state: a pure fold of the event stream (no Textual, no IO).

The live dashboard, a replay and a share viewer all keep one
:class:`SessionState` and feed it every event from the bus.  The UI redraws
from it on a timer (high-rate token events coalesce here instead of causing a
redraw each), checking :attr:`SessionState.version` (which a token leaves alone) and the second of
:attr:`SessionState.last_t` to skip frames that would show nothing new.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from lanemon.measure import metrics
from lanemon.measure.bounds import gpu_reading
from lanemon.measure.counters import Accumulator
from lanemon.measure.restarts import restart_reason
from lanemon.measure.server import sim_name
from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.load import CLIENT_BOUND, ClientLoad, flag as flag_record
from lanemon.measure.server import server_timings
from lanemon.results.counters import EngineCounters
from lanemon.results.readings import engine_metrics
from lanemon.results.server import ServerTimings
from lanemon.measure.records import BURST, EMPTY, ERROR, TRUNCATED, Assembler, RequestRecord
from lanemon.folds.series import KEEP_NS, NS, Outcomes

HISTORY = 120  # points kept per sparkline
ERRORS_KEPT = 50
STALL_SHOWN_S = 10.0
OWN_CPU_S = 10
"""Seconds of load windows the status bar's "lanemon N % CPU" averages (:meth:`HostState.own_cpu_pct`)."""
"""An in-flight request without data for this long is shown as stalled (the client's own stall rule,
lanes.toml ``timeout``, later ends it as an error)."""


@dataclass
class ServerMetricsState:
    """A lane's Prometheus /metrics as folded from ``server_metrics`` events (lanes/prom.py)."""

    available: bool | None = None
    """None until the first scrape; False once the lane turned out to have no /metrics."""
    engine: str | None = None
    simulates: str | None = None
    """The engine lanemon's simulator simulates on this lane (its probe's ``simulates``), or None."""
    last: dict = field(default_factory=dict)
    """The latest successful scrape's data (running, waiting, kv_usage, gen_tok_s, ...)."""
    last_t: int | None = None
    error: str | None = None
    """The latest scrape's failure (None after a success)."""
    running: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    waiting: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    kv_usage: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    gen_tok_s: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    gen_busy: tuple[int, float] | None = None
    """(scrape time, rate) of the latest scrape interval in which the engine generated (gen_tok_s > 0): between
    a monitor's probes the engine idles, and its rate is shown as the last busy one with its age, not 0."""
    prompt_tok_s: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    hit_rate: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    timings: ServerTimings = field(default_factory=ServerTimings)
    """The engine's own latency means (``ttft_s``, ``queue_s``, ``prefill_s``, ``decode_s``, ``e2e_s``, ...) over
    the latest scrape interval in which requests ended and the engine did not restart (measure/server.py; empty
    without histograms: every figure None)."""
    server_ttft_s: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    session: Accumulator = field(default_factory=Accumulator)
    """What the engine's counters did since this session's first scrape (measure/counters.py: the increases of
    every scrape added up; the interval of a restart left out and the restart named, measure/restarts.py's rule,
    never a negative delta); :meth:`session_counters`."""
    _session_at: int = field(default=-1, compare=False)
    _session_out: EngineCounters | None = field(default=None, compare=False)

    def session_counters(self) -> EngineCounters | None:
        """The run-scoped figures since the session's first scrape (None before two), computed once per scrape."""
        if self._session_at != self.session.scrapes:
            self._session_at, self._session_out = self.session.scrapes, self.session.result()
        return self._session_out

    def apply(self, t: int, d: dict) -> None:
        if not d.get("ok"):
            if d.get("available") is False:
                self.available = False
            self.error = d.get("message") or d.get("cls") or "scrape failed"
            return
        self.available, self.error = True, None
        self.engine = d.get("engine", self.engine)
        self.session.add(t, d)
        prev = self.last
        if prev and "ttft_count" in d and "ttft_count" in prev and not restart_reason(prev, d):
            before, after = engine_metrics(prev), engine_metrics(d)
            timings = server_timings(before, after) if before is not None and after is not None else ServerTimings()
            if timings.ttft_count and timings.ttft_s is not None:
                self.timings = timings
                self.server_ttft_s.append(float(timings.ttft_s))
        self.last, self.last_t = dict(d), t
        for key in ("running", "waiting", "kv_usage", "gen_tok_s", "prompt_tok_s"):
            if d.get(key) is not None:
                getattr(self, key).append(float(d[key]))
        if d.get("gen_tok_s"):
            self.gen_busy = (t, float(d["gen_tok_s"]))
        if d.get("prefix_hit_rate") is not None:
            self.hit_rate.append(float(d["prefix_hit_rate"]))


@dataclass
class GpuState:
    """A lane's GPU telemetry as folded from ``gpu`` events (client/telemetry.py, docs/GPU.md)."""

    configured: bool = False
    """The lane names a telemetry source (its ``lane`` event says ``telemetry``)."""
    available: bool | None = None
    """None until the first reading; False once the source turned out not to work."""
    last: dict = field(default_factory=dict)
    last_t: int | None = None
    error: str | None = None
    power_w: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    dropped: int = 0
    """Values of the readings so far that were not physically possible (or not numbers), dropped
    (measure/bounds.gpu_reading: the telemetry client's count recorded with each reading, plus what a
    recorded reading still held); the panel says how many."""

    def apply(self, t: int, d: dict) -> None:
        self.configured = True
        if not d.get("ok"):
            if d.get("available") is False:
                self.available = False
            self.error = str(d.get("message") or d.get("cls") or "reading failed")
            return
        d, _ = gpu_reading(d)  # live and replay alike: a recording is untrusted
        self.dropped += int(d.get("dropped", 0))
        self.available, self.error = True, None
        self.last, self.last_t = d, t
        if d.get("power_w") is not None:
            self.power_w.append(float(d["power_w"]))

    def summary(self) -> dict:
        """The latest reading for a panel: ``util_pct`` (mean over GPUs), ``power_w`` (sum), ``temp_c``
        (hottest), ``memory`` ("unified" when no GPU reports a framebuffer, else ``(used, total)`` MiB),
        ``throttle`` (reason names but idle), ``xid`` (the non-zero ones), ``gpus`` (how many)."""
        gpus = [g for g in self.last.get("gpus") or [] if isinstance(g, dict)]
        num = lambda g, k: g.get(k) if isinstance(g.get(k), (int, float)) and not isinstance(g.get(k), bool) else None
        utils = [v for g in gpus if (v := num(g, "util_pct")) is not None]
        temps = [v for g in gpus if (v := num(g, "temp_c")) is not None]
        used = [num(g, "fb_used_mib") for g in gpus]
        free = [num(g, "fb_free_mib") for g in gpus]
        memory: str | tuple[float, float] | None = None
        if gpus and all(g.get("unified") for g in gpus):
            memory = "unified"
        elif gpus and all(u is not None and f is not None for u, f in zip(used, free)):
            memory = (sum(used), sum(u + f for u, f in zip(used, free)))  # type: ignore[operator]
        throttle = sorted({str(n) for g in gpus for n in g.get("throttle") or [] if n != "idle"})
        return {"gpus": len(gpus), "util_pct": sum(utils) / len(utils) if utils else None,
                "power_w": num(self.last, "power_w"), "temp_c": max(temps) if temps else None,
                "memory": memory, "throttle": throttle,
                "xid": sorted({int(v) for g in gpus if (v := num(g, "xid"))})}


def gpu_text(gpu: GpuState) -> str:
    """The GPU line of a lane's panel: ``GPU 87% · 41 W · 52 °C · unified`` (plus throttle reasons and
    XIDs, and ``N values dropped``: impossible or unread values of the readings so far); one word when there
    is nothing to show: ``untracked`` (no telemetry configured), ``waiting`` (no reading yet), ``unavailable``
    (the source does not work); ``failing: <why>`` while no reading has succeeded."""
    if not gpu.configured:
        return "untracked"
    if gpu.available is False:
        return "unavailable"
    if not gpu.last:
        if gpu.error is None:
            return "waiting"
        why = gpu.error.removeprefix("GPU telemetry: ")  # the endpoint's own failure, said as such
        return "failing: " + (why if len(why) <= 72 else why[:71] + "…")
    s = gpu.summary()
    parts = []
    if s["util_pct"] is not None:
        parts.append(f"{s['util_pct']:.0f}%")
    if s["power_w"] is not None:
        parts.append(f"{s['power_w']:.0f} W")
    if s["temp_c"] is not None:
        parts.append(f"{s['temp_c']:.0f} °C")
    mem = s["memory"]
    if mem == "unified":
        parts.append("unified")
    elif isinstance(mem, tuple):
        parts.append(f"{mem[0] / 1024:.0f}/{mem[1] / 1024:.0f} GiB")
    if s["gpus"] > 1:
        parts.append(f"×{s['gpus']}")
    if s["throttle"]:
        parts.append(",".join(s["throttle"]))
    if s["xid"]:
        parts.append("XID " + ",".join(str(x) for x in s["xid"]))
    if gpu.dropped:  # never shown, never summed: said
        parts.append(f"{gpu.dropped} values dropped")
    return " · ".join(parts) or "no figures"


@dataclass
class HostState:
    """This machine (psutil) as folded from ``host`` events (lanes/host.py)."""

    last: dict = field(default_factory=dict)
    last_t: int | None = None
    samples: int = 0
    cpu_pct: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    mem_pct: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    net_rx_Bps: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    net_tx_Bps: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))

    gpu: GpuState = field(default_factory=GpuState)
    """This machine's own GPUs (NVML in the ``host`` samples, docs/GPU.md); ``gpu_text`` is its panel line."""
    client_lag_ms: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    """lanemon's own event-loop lag, largest per ``client_load`` window (client/loadwatch.py)."""
    client_bound: bool = False
    """The latest ``client_load`` window was starved: lanemon itself is the bottleneck right now."""
    client_bound_windows: int = 0
    client_load: dict = field(default_factory=dict)
    """The latest ``client_load`` event's data (lag_ms, lag_mean_ms, cpu_pct, proc_cpu_pct, bound, ...)."""
    own_cpu: deque[tuple[int, int, float]] = field(default_factory=deque)
    """(window start, end, lanemon's % of one core) of the ``client_load`` windows of the last
    :data:`OWN_CPU_S` seconds (:meth:`own_cpu_pct`)."""

    def apply(self, t: int, d: dict) -> None:
        self.last, self.last_t = dict(d), t
        self.samples += 1
        gpus = d.get("gpus")
        if isinstance(gpus, list) and gpus:
            power = [g["power_w"] for g in gpus if isinstance(g, dict) and isinstance(g.get("power_w"), (int, float))
                     and not isinstance(g.get("power_w"), bool)]
            self.gpu.apply(t, {"ok": True, "gpus": gpus, **({"power_w": sum(power)} if power else {})})
        for key in ("cpu_pct", "mem_pct", "net_rx_Bps", "net_tx_Bps"):
            if d.get(key) is not None:
                getattr(self, key).append(float(d[key]))

    def apply_load(self, d: dict, t: int | None = None) -> None:
        self.client_load = dict(d)
        own, t0 = d.get("proc_cpu_pct"), d.get("t0")
        if (t is not None and isinstance(own, (int, float)) and not isinstance(own, bool) and math.isfinite(own)
                and isinstance(t0, int) and not isinstance(t0, bool) and t0 < t
                and d.get("worker") is None):  # a bench worker's window: its CPU is its process's, not this one's
            self.own_cpu.append((t0, t, float(own)))
            while self.own_cpu and self.own_cpu[0][1] <= t - OWN_CPU_S * 1_000_000_000:
                self.own_cpu.popleft()
        self.client_bound = bool(d.get("bound"))
        self.client_bound_windows += self.client_bound
        if isinstance(d.get("lag_ms"), (int, float)):
            self.client_lag_ms.append(float(d["lag_ms"]))


    def own_cpu_pct(self) -> float | None:
        """lanemon's own CPU, % of one core, over the last :data:`OWN_CPU_S` seconds (each load window weighted
        by its length): one 0.5 s window reads 2 % or 14 % as the screen's once-a-second frame falls outside or
        inside it; the latest window when no window said how long it was."""
        span = sum(t1 - t0 for t0, t1, _ in self.own_cpu)
        if span <= 0:
            own = self.client_load.get("proc_cpu_pct")
            return float(own) if isinstance(own, (int, float)) and not isinstance(own, bool) else None
        return sum((t1 - t0) * pct for t0, t1, pct in self.own_cpu) / span


@dataclass(kw_only=True)
class LaneState(Outcomes):
    """One lane as the panels show it; the outcome counters (``requests_ok`` ...) are :class:`Outcomes`."""

    name: str
    url: str = ""
    model: str | None = None
    up: bool | None = None
    """None until the first probe answers."""
    models_latency_s: float | None = None
    last_probe_t: int | None = None
    probe_error: str | None = None
    down_t: int | None = None
    """When the lane's latest outage began (its first failed health check since it was last up)."""
    up_again_t: int | None = None
    """When it came back from that outage (the first health check that passed after it), None while down."""
    probes_failed: int = 0
    """Health checks (``GET /models``) that failed: the panel counts them apart from the requests' errors."""
    in_flight: int = 0
    bursts: int = 0
    """Complete requests whose chunks were read in one burst: TTFT plotted, decode rate not."""
    last_burst_t: int | None = None
    tokens_estimated: bool = False
    ttft_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    tps_history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    last_ttft_s: float | None = None
    last_tps: float | None = None
    errors: deque[tuple[int, str, str]] = field(default_factory=lambda: deque(maxlen=ERRORS_KEPT))
    """(t_ns, error class, message) newest last."""
    server: ServerMetricsState = field(default_factory=ServerMetricsState)
    gpu: GpuState = field(default_factory=GpuState)
    """The lane's GPU telemetry (docs/GPU.md); ``gpu_text`` is its panel line."""
    """The lane's Prometheus /metrics, when it has them."""
    client_bound: int = 0
    """Completed requests whose TTFT / decode were NOT plotted: lanemon itself was starved while they ran
    (their timestamps say when lanemon read the chunks, not when the lane wrote them)."""
    last_client_bound_t: int | None = None
    """End (ns) of the latest client-bound request (None: none yet); the panel says "client-bound" near it."""
    active: dict[str, int] = field(default_factory=dict)
    """In-flight request id -> time (ns) of its latest sign of progress (sent, first byte, token, usage)."""

    def stalled(self, now_ns: int, after_s: float = STALL_SHOWN_S) -> tuple[int, float]:
        """(in-flight requests without data for ``after_s`` seconds, the longest such wait in seconds)."""
        limit = now_ns - int(after_s * 1e9)
        waits = [now_ns - t for t in self.active.values() if t <= limit]
        return len(waits), (max(waits) / 1e9 if waits else 0.0)

    def withhold(self, why: str, t: int) -> None:
        """A complete request not plotted as lane speed (``client_bound`` or ``burst``), ending at ``t``."""
        count, last = _WITHHELD[why]
        setattr(self, count, getattr(self, count) + 1)
        setattr(self, last, t)

    @property
    def median_ttft_s(self) -> float | None:
        return metrics.median(list(self.ttft_history))

    @property
    def median_tps(self) -> float | None:
        return metrics.median(list(self.tps_history))


_WITHHELD = {CLIENT_BOUND: ("client_bound", "last_client_bound_t"), BURST: ("bursts", "last_burst_t")}


class SessionState:
    """Everything the dashboard shows, rebuilt identically from live or replayed events."""

    def __init__(self, lanes: list[tuple[str, str, str | None]] | None = None) -> None:
        self.lanes: dict[str, LaneState] = {}
        self.version = 0
        """Moves with every change the dashboard shows: every event but a token of a known lane (a stream's
        tokens change nothing shown until its request ends -- the record, the figures and the in-flight
        counts come with other events; what moves with time alone, the stall marks' seconds and the clock,
        a viewer redraws once a second of :attr:`last_t`, which tokens do move)."""
        self.events = 0
        self.last_t = 0
        self.notes: deque[tuple[int, str, str]] = deque(maxlen=ERRORS_KEPT)
        self.host = HostState()
        self.load = ClientLoad(keep_ns=KEEP_NS, stalls_ns=60 * NS)
        """lanemon's own starved windows (measure/load.py), from ``client_load`` events."""
        self._pending: deque[tuple[LaneState, RequestRecord, metrics.RequestMetrics]] = deque()
        """Completed requests waiting for the load watcher to report past their end before they are plotted."""
        self._asm = Assembler(keep_text=False)
        self.last_metrics: metrics.RequestMetrics | None = None
        """The metrics of the complete request the latest :meth:`apply` returned (None for any other
        outcome): computed once, read by the series fold (ui/app.py) instead of computing them again."""
        for name, url, model in lanes or []:
            self.lanes[name] = LaneState(name=name, url=url, model=model)

    def lane(self, name: str) -> LaneState:
        st = self.lanes.get(name)
        if st is None:
            st = self.lanes[name] = LaneState(name=name)
        return st

    def apply_token(self, ev: Event) -> None:
        """:meth:`apply` for a ``token`` event (a plain :class:`Event`), the stream's bulk: the same changes
        without the tests of every other kind (no token finishes a request)."""
        self.events += 1
        t = ev.t
        if t > self.last_t:
            self.last_t = t
        if ev.lane is None:
            return
        if ev.lane not in self.lanes:  # a new lane is a new panel; any other token changes nothing shown
            self.version += 1
        if ev.req is not None:
            self.lane(ev.lane).active[ev.req] = t
            self._asm.apply(ev)
        else:
            self.lane(ev.lane)

    def apply(self, ev: Event) -> RequestRecord | None:
        """Apply one event; returns the finished request record, if any."""
        self.events += 1
        if ev.kind != schema.TOKEN or (ev.lane is not None and ev.lane not in self.lanes):  # as apply_token
            self.version += 1
        self.last_t = max(self.last_t, ev.t)
        kind, d = ev.kind, ev.data
        if kind == schema.NOTE:
            self.notes.append((ev.t, d.get("level", "info"), d.get("message", "")))
            return None
        if kind == schema.HOST:
            self.host.apply(ev.t, d)
            return None
        if self.load.apply(ev):
            self.host.apply_load(d, ev.t)
            self._resolve()
            return None
        if ev.lane is None:
            return None
        lane = self.lane(ev.lane)
        if kind == schema.SERVER_METRICS:
            lane.server.apply(ev.t, d)
            return None
        if kind == schema.GPU:
            lane.gpu.apply(ev.t, d)
            return None
        if kind == schema.PROBE:
            lane.last_probe_t = ev.t
            lane.up = bool(d.get("ok"))
            lane.models_latency_s = d.get("latency_s")
            if d.get("model"):
                lane.model = d["model"]
            if sim_name(d.get("simulates")):
                lane.server.simulates = d["simulates"]
            if d.get("model_changed_from"):  # logged with the errors: every later figure is another model's
                lane.errors.append((ev.t, "model", f"model changed: {d['model_changed_from']} -> {d.get('model')}"))
            if lane.up:
                if lane.probe_error is not None:
                    lane.up_again_t = ev.t
                lane.probe_error = None
            else:
                if lane.probe_error is None:
                    lane.down_t, lane.up_again_t = ev.t, None
                msg = d.get("message") or d.get("cls") or "down"
                lane.probes_failed += 1
                if msg != lane.probe_error:
                    lane.errors.append((ev.t, d.get("cls", "probe"), msg))
                lane.probe_error = msg
            return None
        if kind == schema.LANE:
            lane.url = d.get("url", lane.url)
            lane.model = d.get("model", lane.model)
            if d.get("telemetry"):
                lane.gpu.configured = True
            return None
        if kind == schema.REQUEST:
            lane.in_flight += 1
        if ev.req is not None:
            lane.active[ev.req] = ev.t
        rec = self._asm.apply(ev)
        if rec is None:
            return None
        self.last_metrics = None
        lane.active.pop(ev.req, None)
        lane.in_flight = max(0, lane.in_flight - 1)
        outcome = rec.outcome
        if outcome == ERROR and rec.error is not None and rec.error.cls == schema.ERR_CANCELLED:
            return rec  # lanemon stopped it (quit, Ctrl-C): not the lane's fault
        lane.count(outcome)  # type: ignore[arg-type]
        if outcome == ERROR:
            lane.errors.append((ev.t, rec.error.cls or "error", rec.error.message or ""))  # type: ignore[union-attr]
            return rec
        if outcome == TRUNCATED:
            why = (rec.error.message if rec.error is not None else None) or "the stream ended without a finish_reason"
            lane.errors.append((ev.t, TRUNCATED, f"{why} after {len(rec.token_ns)} token chunks"))
            return rec
        if outcome == EMPTY:
            lane.errors.append((ev.t, EMPTY, f"no token in the reply (finish_reason {rec.finish_reason})"))
            return rec
        m = self.last_metrics = metrics.request_metrics(rec)
        lane.tokens_estimated = m.tokens_estimated
        if self.load.watching and not self.load.covers(rec.end_ns):
            self._pending.append((lane, rec, m))  # judged when the watcher reports past its end
        else:
            self._plot(lane, rec, m)
        return rec

    def _resolve(self) -> None:
        while self._pending and self.load.covers(self._pending[0][1].end_ns):
            self._plot(*self._pending.popleft())

    def _plot(self, lane: LaneState, rec: RequestRecord, m: metrics.RequestMetrics) -> None:
        """Add a completed request's TTFT and decode to the lane's figures, unless lanemon was starved."""
        self.version += 1
        if self.load.overlaps(rec.sent_ns, rec.end_ns):
            flag_record(rec)
            lane.withhold(CLIENT_BOUND, rec.end_ns)  # type: ignore[arg-type]
            return
        if m.ttft_s is not None:
            lane.last_ttft_s = m.ttft_s
            lane.ttft_history.append(m.ttft_s)
        if BURST in m.flags:  # read in one go: the gaps are lanemon's read granularity, not the lane's pace
            lane.withhold(BURST, rec.end_ns)  # type: ignore[arg-type]
            return
        if m.decode_tok_s is not None:
            lane.last_tps = m.decode_tok_s
            lane.tps_history.append(m.decode_tok_s)
