"""Time series for the dashboard's charts: every finished request as a timed sample (pure, no Textual).

:class:`SeriesState` folds the bus into, per lane,

* one :class:`Sample` per finished request, stamped with its end time: TTFT, TPOT, end-to-end,
  per-stream decode tok/s, its outcome (``ok``, ``error``, ``truncated``, ``empty``) and its flags;
* the generated tokens per second of session time (aggregate throughput) of the clean requests;
* the lane's own ``/metrics`` over time (running, waiting, KV cache use).

A sample is *flagged* -- counted, marked on the chart, never drawn as lane speed -- when the
request did not complete cleanly (an error, a truncated or empty stream: outcome), when the measuring side
flagged the record (``RequestRecord.flags``: ``burst``), or when lanemon itself was starved while
it ran (``client_bound``, from the ``client_load`` events; :mod:`lanemon.measure.load`).  A sample
ending after the last ``client_load`` window is *pending*: not drawn until the watcher has reported
past it (a replay that ends first shows it, judged on what the recording says).

:meth:`SeriesState.window` answers the numbers beside the charts: per lane p50/p90/p99 of TTFT,
TPOT and E2E, request rate and outcome counts over the last N seconds.
"""

from __future__ import annotations

import bisect
from array import array
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.bounds import gpu_reading, number
from lanemon.measure.load import CLIENT_BOUND, ClientLoad
from lanemon.measure.metrics import RequestMetrics, percentile, request_metrics, tail_ok
from lanemon.measure.records import COMPLETE, EMPTY, ERROR, TRUNCATED, Assembler, RequestRecord

__all__ = ["KEEP_NS", "Outcomes", "RECENT_NS", "Sample", "SeriesState", "WindowStats", "WINDOWS_S"]

NS = 1_000_000_000
_REQUEST_KINDS = schema.REQUEST_KINDS
WINDOWS_S = (60, 300, 900)
"""The chart windows the user switches between: 1, 5 and 15 minutes."""
KEEP_NS = (WINDOWS_S[-1] + 60) * NS
"""History kept per lane: the widest window plus a minute."""
RECENT_NS = (WINDOWS_S[0] + 60) * NS
"""Samples younger than this (the narrowest window plus a minute) are kept as :class:`Sample` objects; older
ones, once judged, are packed into :class:`Packed` columns (a few dozen bytes each, no object per request)."""
FLAG_NAMES = ("error", "truncated", "empty", "burst", CLIENT_BOUND)
_NO_FLAGS: frozenset[str] = frozenset()
_OUTCOMES = ("ok", "error", "truncated", "empty")
_OUTCOME_CODE = {name: i for i, name in enumerate(_OUTCOMES)}
_FLAG_BIT = {name: 1 << i for i, name in enumerate(FLAG_NAMES)}
_FLAGSETS: dict[int, frozenset[str]] = {}


@dataclass(slots=True)
class Sample:
    """One finished request, as the charts draw it."""

    t: int
    """End of the request (ns session time): where it sits on the time axis."""
    sent: int
    ttft_s: float | None
    tpot_s: float | None
    e2e_s: float | None
    tok_s: float | None
    outcome: str
    """``ok`` | ``error`` | ``truncated`` | ``empty`` (:mod:`lanemon.measure.records`'s outcomes)."""
    flags: frozenset[str] = frozenset()
    """What the measuring side said of the record (``burst``); ``client_bound`` is judged lazily."""
    first: int | None = None
    """First token (ns): the request's tokens count towards throughput from here to ``t``."""
    tokens: float = 0.0
    """Generated tokens (a complete request's)."""


def _flagset(bits: int) -> frozenset[str]:
    """The flags a bit mask packs (one shared frozenset per mask)."""
    out = _FLAGSETS.get(bits)
    if out is None:
        out = _FLAGSETS[bits] = frozenset(n for n, b in _FLAG_BIT.items() if bits & b)
    return out


_NAN = float("nan")


def _f(x: float | None) -> float:
    return _NAN if x is None else x


def _o(x: float) -> float | None:
    return None if x != x else x


def _drop_front(t: array, start: int, cutoff: int, batch: int) -> tuple[int, bool]:
    """The first row of ``t`` (times, in filing order) at ``cutoff`` or later, from ``start``; and whether to
    compact now: once at least ``batch`` rows and a quarter of them are dropped (:class:`Packed`, :class:`Scrapes`)."""
    i = start
    while i < len(t) and t[i] < cutoff:
        i += 1
    return i, i >= batch and i * 4 >= len(t)


class Packed:
    """Judged samples older than :data:`RECENT_NS`, one row per request in typed arrays (8 bytes a field):
    the same figures a :class:`Sample` holds, its flags as a bit mask with ``client_bound`` already judged
    (the load watcher's windows are not kept for ever: measure/load.ClientLoad ``keep_ns``).  Rows are in
    filing order; the oldest are dropped from the front (:meth:`drop_before`)."""

    __slots__ = ("t", "sent", "first", "vals", "code", "start", "ordered")

    def __init__(self) -> None:
        self.t = array("q")
        self.sent = array("q")
        self.first = array("q")
        """First token (ns), -1 for none."""
        self.vals = array("d")
        """ttft, tpot, e2e, tok_s, tokens per row (NaN for None)."""
        self.code = array("H")
        """outcome index | flag bits << 4."""
        self.start = 0
        """Rows before this index are dropped (compacted away in batches)."""
        self.ordered = True
        """Every row ends no earlier than the row before it (as requests are filed live): :meth:`samples`
        then finds its first row by bisection instead of reading every older one."""

    def __len__(self) -> int:
        return len(self.t) - self.start

    def add(self, s: Sample, flags: frozenset[str] | set[str]) -> None:
        if self.t and s.t < self.t[-1]:
            self.ordered = False
        self.t.append(s.t)
        self.sent.append(s.sent)
        self.first.append(-1 if s.first is None else s.first)
        self.vals.extend((_f(s.ttft_s), _f(s.tpot_s), _f(s.e2e_s), _f(s.tok_s), s.tokens))
        bits = 0
        for name in flags:
            bits |= _FLAG_BIT.get(name, 0)
        self.code.append(_OUTCOME_CODE.get(s.outcome, 1) | bits << 4)

    def drop_before(self, cutoff: int) -> None:
        i, compact = _drop_front(self.t, self.start, cutoff, 1024)
        self.start = i
        if compact:
            # compact once a quarter is dropped: the arrays hold at most 4/3 of the live rows, and what is left
            # (3/4) is more than half of their capacity, so they keep it (no shrink and regrow of a block of
            # hundreds of KB every few minutes: the allocator's heap would fragment)
            for arr in (self.t, self.sent, self.first, self.code):
                del arr[:i]
            del self.vals[:5 * i]
            self.start = 0

    def samples(self, t0: int | None = None) -> Iterator[Sample]:
        """The rows as :class:`Sample` objects (built on reading), those ending before ``t0`` skipped; a row's
        flags are its sample's, with ``client_bound`` when the watcher's windows said so when it was packed."""
        t, sent, first, vals, code = self.t, self.sent, self.first, self.vals, self.code
        begin = self.start
        if t0 is not None and self.ordered:  # skip the rows ending before t0 without reading them
            begin = bisect.bisect_left(t, t0, begin)
        for i in range(begin, len(t)):
            end = t[i]
            if t0 is not None and end < t0:
                continue
            c = code[i]
            k = 5 * i
            fst = first[i]
            yield Sample(end, sent[i], _o(vals[k]), _o(vals[k + 1]), _o(vals[k + 2]), _o(vals[k + 3]),
                         _OUTCOMES[c & 15], _flagset(c >> 4), None if fst < 0 else fst, vals[k + 4])


class Scrapes:
    """One lane's scraped figures over time (/metrics, GPU telemetry) in typed columns, one row a reading:
    40 bytes a /metrics scrape with its four figures, where a ``(t, {name: value})`` pair held about 400 (a
    lane scraped every 2 s keeps 480 of them for :data:`KEEP_NS`).  A figure a reading did not have (or
    that could not be true: :func:`_possible`) is NaN in its column and left out when read."""

    __slots__ = ("keys", "t", "cols", "start")

    def __init__(self, keys: tuple[str, ...]) -> None:
        self.keys = keys
        self.t = array("q")
        self.cols = {k: array("d") for k in keys}
        self.start = 0
        """Rows before this index are dropped (compacted away in batches, as :class:`Packed` does)."""

    def add(self, t: int, vals: dict[str, float]) -> None:
        self.t.append(t)
        for k, col in self.cols.items():
            col.append(vals.get(k, _NAN))

    def drop_before(self, cutoff: int) -> None:
        i, compact = _drop_front(self.t, self.start, cutoff, 256)
        self.start = i
        if compact:
            del self.t[:i]
            for col in self.cols.values():
                del col[:i]
            self.start = 0

    def points(self, key: str) -> list[tuple[int, float]]:
        """(t, value) of every reading that had ``key``, oldest first (what a chart draws)."""
        col, t = self.cols[key], self.t
        return [(t[i], v) for i in range(self.start, len(t)) if (v := col[i]) == v]

    def __len__(self) -> int:
        return len(self.t) - self.start

    def __getitem__(self, i: int) -> tuple[int, dict[str, float]]:
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        j = self.start + (i % n)
        return self.t[j], {k: v for k, col in self.cols.items() if (v := col[j]) == v}

    def __iter__(self) -> Iterator[tuple[int, dict[str, float]]]:
        """Each reading as ``(t, {name: value})`` with the figures it had."""
        for i in range(len(self)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Scrapes) and list(self) == list(other)


SERVER_KEYS = ("running", "waiting", "kv_usage", "gen_tok_s")
"""What a lane's /metrics scrape keeps for the charts (:attr:`LaneSeries.server`)."""
GPU_KEYS = ("power_w", "util_pct")
"""What a lane's GPU reading keeps (:attr:`LaneSeries.gpu`)."""


@dataclass
class LaneSeries:
    samples: deque[Sample] = field(default_factory=deque)
    """The recent samples (:data:`RECENT_NS`, and any not judged yet), oldest first."""
    packed: Packed = field(default_factory=Packed)
    """The older ones, to :data:`KEEP_NS` (:class:`Packed`): read both with :meth:`SeriesState.samples`."""
    server: Scrapes = field(default_factory=lambda: Scrapes(SERVER_KEYS))
    """{running, waiting, kv_usage, gen_tok_s} per successful /metrics scrape (only the figures that can be
    true; ``kv_usage`` is a share, 0..1)."""
    gpu: Scrapes = field(default_factory=lambda: Scrapes(GPU_KEYS))
    """{power_w, util_pct} per successful GPU telemetry reading (docs/GPU.md): power summed over the lane's
    GPUs, utilisation their mean; charted beside tok/s on the same time axis."""
    filed: int = 0
    """Samples filed so far (the newest ``filed - n`` of :attr:`samples` are those filed after the n-th:
    :class:`ChartFeed` reads only those)."""


@dataclass
class Outcomes:
    """Finished requests by outcome (:mod:`lanemon.measure.records`); only complete ones have figures.

    The dashboard's per-lane totals (:class:`lanemon.folds.dashboard.LaneState`) and the numbers over a
    window (:class:`WindowStats`) both count with this one class.
    """

    requests_ok: int = 0
    """Complete requests (a finish_reason and at least one token): the only ones with figures."""
    requests_err: int = 0
    """Requests that ended in an error (any class but ``cancelled``), malformed usage included."""
    requests_truncated: int = 0
    """Tokens came, but the stream ended (``[DONE]`` or a cut) without a finish_reason: no figures."""
    requests_empty: int = 0
    """The stream ended without a single content or reasoning token: no figures."""

    def count(self, outcome: str) -> None:
        """One more request that ended ``complete`` / ``truncated`` / ``empty`` / ``error``."""
        name = _OUTCOME_FIELDS[outcome]
        setattr(self, name, getattr(self, name) + 1)


_OUTCOME_FIELDS = {COMPLETE: "requests_ok", ERROR: "requests_err", TRUNCATED: "requests_truncated",
                   EMPTY: "requests_empty"}


@dataclass
class WindowStats(Outcomes):
    """One lane's numbers over a window (all None/0 when nothing finished in it).

    ``requests_ok`` counts only the clean complete requests here: a complete one that is not lane
    speed (client-bound, burst) is counted in ``flagged`` instead.
    """

    n: int = 0
    flagged: int = 0
    """Completed cleanly but not counted as lane speed (client-bound, burst)."""
    rate_rps: float | None = None
    ttft: tuple[float | None, float | None, float | None] = (None, None, None)
    tpot: tuple[float | None, float | None, float | None] = (None, None, None)
    e2e: tuple[float | None, float | None, float | None] = (None, None, None)
    tok_s_p50: float | None = None
    samples: tuple[int, int, int] = (0, 0, 0)
    """How many samples the TTFT, TPOT and E2E percentiles rest on (a p99 needs 100)."""


def _possible(key: str, value: Any) -> bool:
    """A scraped figure that can be true: a finite count >= 0, a KV-cache share in [0, 1] (a lane's
    /metrics are untrusted: anything else is left out, never drawn)."""
    value = number(value)  # not 10**400 either: float() cannot hold it (measure/bounds.py)
    if value is None or value < 0:
        return False
    return key != "kv_usage" or value <= 1


def _pcts(values: list[float]) -> tuple[float | None, float | None, float | None]:
    """p50, p90, p99 -- a tail percentile over too few samples (:data:`TAIL_MIN_SAMPLES`) is the largest sample
    (the screens label it ``max``: :attr:`WindowStats.n` is under 100)."""
    if not values:
        return (None, None, None)
    values.sort()
    n = len(values)
    return (percentile(values, 50), percentile(values, 90) if tail_ok(90, n) else values[-1],
            percentile(values, 99) if tail_ok(99, n) else values[-1])


class SeriesState:
    """Per-lane time series of finished requests, throughput and server metrics."""

    def __init__(self, lanes: list[str] | None = None, *, recent_ns: int = RECENT_NS) -> None:
        self.lanes: dict[str, LaneSeries] = {name: LaneSeries() for name in lanes or []}
        self.recent_ns = recent_ns
        """Samples older than this are packed (:class:`Packed`); a huge value keeps every one an object."""
        self.version = 0
        self.last_t = 0
        self.load = ClientLoad(keep_ns=KEEP_NS, stalls_ns=60 * NS)
        self._asm = Assembler(keep_text=False)

    def lane(self, name: str) -> LaneSeries:
        series = self.lanes.get(name)
        if series is None:
            series = self.lanes[name] = LaneSeries()
        return series

    def apply(self, ev: Event) -> None:
        """Fold one event, assembling requests here (standalone use; the app hands this fold the
        dashboard's assembled records instead: :meth:`apply_event` and :meth:`add`)."""
        if ev.kind == schema.TOKEN:
            if ev.t > self.last_t:
                self.last_t = ev.t
            self._asm.apply(ev)
            return
        if self.apply_event(ev):
            return
        rec = self._asm.apply(ev)
        if rec is not None:
            self.add(rec)

    def apply_token(self, ev: Event) -> None:
        """:meth:`apply_event` for a ``token`` event: only the clock moves (the request is assembled by whoever
        assembles them)."""
        if ev.t > self.last_t:
            self.last_t = ev.t

    def apply_event(self, ev: Event) -> bool:
        """Fold everything but the requests' own events; False for a request event (left to whoever
        assembles the requests, which then calls :meth:`add` with each finished one)."""
        kind = ev.kind
        if ev.t > self.last_t:
            self.last_t = ev.t
        if kind in _REQUEST_KINDS:
            return False
        if self.load.apply(ev):
            self.version += 1
            return True
        if kind == schema.SERVER_METRICS and ev.lane is not None:
            d = ev.data
            if d.get("ok"):
                vals = {k: float(d[k]) for k in SERVER_KEYS if _possible(k, d.get(k))}
                if vals:
                    self._scraped(self.lane(ev.lane).server, ev.t, vals)
                    self.version += 1
            return True
        if kind == schema.GPU and ev.lane is not None:
            d = ev.data
            if d.get("ok"):
                d, _ = gpu_reading(d)  # only physically possible values are drawn (measure/bounds.py)
                vals = {}
                if d.get("power_w") is not None:
                    vals["power_w"] = float(d["power_w"])
                utils = [float(g["util_pct"]) for g in d.get("gpus") or () if "util_pct" in g]
                if utils:
                    vals["util_pct"] = sum(utils) / len(utils)
                if vals:
                    self._scraped(self.lane(ev.lane).gpu, ev.t, vals)
                    self.version += 1
            return True
        if ev.lane is not None and kind == schema.LANE:
            self.lane(ev.lane)
        return True

    def add(self, rec: RequestRecord, m: RequestMetrics | None = None) -> None:
        """File one finished request (lanemon's own cancellations are not the lane's: skipped); ``m``: its
        metrics when the caller computed them already (the dashboard's fold did)."""
        if rec.error is not None and rec.error.cls == schema.ERR_CANCELLED:
            return
        end = rec.end_ns if rec.end_ns is not None else self.last_t
        if not rec.ok:  # error, or truncated / empty (measure/records.py): marked, never plotted
            outcome = rec.outcome if rec.outcome in ("truncated", "empty") else "error"
            sample = Sample(end, rec.sent_ns or end, None, None, (end - (rec.sent_ns or end)) / NS, None, outcome)
        else:
            if m is None:
                m = request_metrics(rec)
            # burst (judged from the timing) and the record's flags
            flags = frozenset(str(f) for f in m.flags) if m.flags else _NO_FLAGS
            sample = Sample(end, rec.sent_ns or end, m.ttft_s, m.tpot_s, m.e2e_s, m.decode_tok_s, "ok", flags)
            sample.first = rec.token_ns[0] if rec.token_ns else end
            sample.tokens = float(m.generated_tokens)
        series = self.lane(rec.lane)
        self._push(series.samples, sample)
        series.filed += 1
        self._pack(series)
        self.version += 1

    def _pack(self, series: LaneSeries) -> None:
        """Move the judged samples older than :attr:`recent_ns` into the lane's packed columns and drop the
        packed rows older than :data:`KEEP_NS`."""
        dq, packed = series.samples, series.packed
        cutoff = self.last_t - self.recent_ns
        while dq and dq[0].t < cutoff and not self.pending(dq[0]):
            s = dq.popleft()
            judged = s.outcome == "ok" and self.load.overlaps(s.sent, s.t)  # as flags_of judges it
            packed.add(s, s.flags | {CLIENT_BOUND} if judged else s.flags)
        packed.drop_before(self.last_t - KEEP_NS)

    def samples(self, lane: str, t0: int | None = None) -> Iterator[Sample]:
        """Every sample of ``lane`` kept (packed ones first, then the recent ones), those ending before ``t0``
        skipped: what the charts, the window figures and the monitor read."""
        series = self.lane(lane)
        yield from series.packed.samples(t0)
        for s in series.samples:
            if t0 is None or s.t >= t0:
                yield s
    @staticmethod
    def _spread(buckets: dict[int, float], start: int, end: int, tokens: float) -> None:
        if tokens <= 0:
            return
        if end <= start:
            buckets[end // NS] += tokens
            return
        sec = start // NS
        while sec * NS < end:
            lo, hi = max(start, sec * NS), min(end, (sec + 1) * NS)
            buckets[sec] += tokens * (hi - lo) / (end - start)
            sec += 1

    def _scraped(self, scrapes: Scrapes, t: int, vals: dict[str, float]) -> None:
        scrapes.add(t, vals)
        scrapes.drop_before(self.last_t - KEEP_NS)

    def _push(self, dq: deque[Sample], item: Sample) -> None:
        dq.append(item)
        cutoff = self.last_t - KEEP_NS
        while dq and dq[0].t < cutoff:
            dq.popleft()

    # -- reading (the screen, on its timer) ------------------------------------

    def pending(self, s: Sample, final: bool = False) -> bool:
        """Not judged yet: the load watcher has not reported past the sample's end."""
        return not final and self.load.watching and not self.load.covers(s.t)

    def flagged(self, s: Sample) -> bool:
        """``bool(flags_of(s))`` without building the set: the per-sample test of every window read."""
        return bool(s.flags) or s.outcome != "ok" or self.load.overlaps(s.sent, s.t)

    def judged_until(self, final: bool = False) -> int | None:
        """Samples ending after this are pending (:meth:`pending`): the watcher's last report, ``1 << 62``
        when nothing is pending, None while every sample is."""
        if final or not self.load.watching:
            return 1 << 62
        return self.load.seen_until

    def flags_of(self, s: Sample) -> set[str]:
        """Every reason ``s`` is not lane speed (empty: a clean, countable sample)."""
        out = set(s.flags)
        if s.outcome != "ok":
            out.add(s.outcome)
        elif self.load.overlaps(s.sent, s.t):
            out.add(CLIENT_BOUND)
        return out

    def tokens_per_s(self, lane: str, t0: int, t1: int, avg_s: int = 5, *,
                     final: bool = False) -> list[tuple[int, float]]:
        """(second end ns, generated tok/s over the ``avg_s`` seconds before it) for the seconds in [t0, t1)
        whose averaging window holds no flagged request.

        Only requests judged clean (complete, not client-bound, not a burst) are lane throughput.  A second
        whose window overlaps a flagged request's tokens has no point at all (the chart's line breaks there
        and the flag is marked) -- counting those tokens would plot the lane's speed from a starved client,
        and leaving them out would plot a drop to zero that the lane never had.
        """
        avg = max(1, int(avg_s))
        first = max(0, t0 // NS)
        # spread here, not when filed: client-bound is known only once the watcher reported
        buckets: dict[int, float] = defaultdict(float)
        dirty: dict[int, float] = defaultdict(float)
        until = self.judged_until(final)
        begin = (first - avg) * NS
        for s in self.samples(lane, begin):
            if s.tokens <= 0 or s.t < begin or s.first is None or s.first > t1:
                continue
            if until is None or s.t > until:  # pending
                continue
            self._spread(dirty if self.flagged(s) else buckets, s.first, s.t, s.tokens)
        return _rates(buckets, dirty, t0, t1, avg)

    def window(self, lane: str, t0: int, t1: int, *, final: bool = False) -> WindowStats:
        """One lane's numbers over the samples that ended in [t0, t1]."""
        st = WindowStats()
        ttft: list[float] = []
        tpot: list[float] = []
        e2e: list[float] = []
        tok: list[float] = []
        until = self.judged_until(final)
        overlaps = self.load.overlaps
        for s in self.samples(lane, t0):
            t = s.t
            if t < t0 or t > t1 or until is None or t > until:  # out of the window, or pending
                continue
            st.n += 1
            if s.outcome != "ok":
                st.count(s.outcome)
            elif s.flags or overlaps(s.sent, t):
                st.flagged += 1
            else:
                st.requests_ok += 1  # st.count(COMPLETE)
                if s.ttft_s is not None:
                    ttft.append(s.ttft_s)
                if s.tpot_s is not None:
                    tpot.append(s.tpot_s)
                if s.e2e_s is not None:
                    e2e.append(s.e2e_s)
                if s.tok_s is not None:
                    tok.append(s.tok_s)
        span = (t1 - max(t0, 0)) / NS
        st.rate_rps = st.n / span if span > 0 and st.n else None
        st.ttft, st.tpot, st.e2e = _pcts(ttft), _pcts(tpot), _pcts(e2e)
        st.samples = (len(ttft), len(tpot), len(e2e))
        st.tok_s_p50 = _pcts(tok)[0]
        return st


def _rates(buckets: dict[int, float], dirty: dict[int, float], t0: int, t1: int, avg: int) -> list[tuple[int, float]]:
    """(second end ns, tok/s over the ``avg`` seconds before it) for the seconds in [t0, t1) whose averaging
    window holds no flagged tokens (``dirty``), from the clean tokens spread per second (``buckets``)."""
    first, last = max(0, t0 // NS), t1 // NS
    out = []
    total = sum(buckets.get(s, 0.0) for s in range(first - avg, first))
    flagged = sum(dirty.get(s, 0.0) for s in range(first - avg, first))
    for sec in range(first, last):
        total += buckets.get(sec, 0.0) - buckets.get(sec - avg, 0.0)
        flagged += dirty.get(sec, 0.0) - dirty.get(sec - avg, 0.0)
        if flagged > 1e-9:
            continue
        out.append(((sec + 1) * NS, max(0.0, total) / min(avg, sec + 1)))
    return out


class ChartFeed:
    """One lane's request charts (TTFT, decode per stream, flagged marks, throughput) kept up to date as its
    samples are judged, for a live dashboard: each call reads only the samples filed since the last one (a
    busy lane files ~50 a second; its chart window holds thousands), not the whole window again.

    A sample is taken in once the load watcher reported past its end (:meth:`SeriesState.pending`); what it
    says then (clean, or the reason it is flagged) is what the charts show, as a packed sample keeps it.
    Samples are read in filing order and wait behind a pending one.  Points older than the window are
    dropped; a wider window, or samples no longer where the feed left them, make it read the lane again."""

    def __init__(self, series: SeriesState, lane: str) -> None:
        self.series, self.lane = series, lane
        self.ttft: deque[tuple[int, float]] = deque()
        self.tok: deque[tuple[int, float]] = deque()
        self.marks: deque[tuple[int, str]] = deque()
        self.clean: dict[int, float] = defaultdict(float)
        """Clean requests' generated tokens spread over the seconds they streamed (second -> tokens)."""
        self.dirty: dict[int, float] = defaultdict(float)
        """Flagged requests' tokens, likewise: a second whose averaging window holds any has no rate."""
        self.since: int | None = None
        """The oldest end time kept (None: nothing read yet)."""
        self._taken = 0
        """The lane's samples taken in so far, counted as :attr:`LaneSeries.filed` counts them."""
        self.reads = 0
        """Samples read (tests count them)."""

    def update(self, t0: int) -> None:
        """Take in the samples judged since the last call; keep what ended at ``t0`` or later (the seconds of
        throughput from ``t0`` less a minute, for the averaging)."""
        lane = self.series.lane(self.lane)
        new = lane.filed - self._taken
        if self.since is None or t0 < self.since or not 0 <= new <= len(lane.samples):  # (restored, moved on)
            self._rebuild(lane, t0)
        elif new:
            samples = lane.samples
            self._take(samples[i] for i in range(len(samples) - new, len(samples)))
        self._trim(t0)

    def _rebuild(self, lane: LaneSeries, t0: int) -> None:
        for part in (self.ttft, self.tok, self.marks, self.clean, self.dirty):
            part.clear()
        self.since = t0
        self._taken = lane.filed - len(lane.samples)  # the packed ones: judged, read here
        for s in lane.packed.samples(t0 - 60 * NS):
            self._add(s)
        self._take(iter(list(lane.samples)))

    def _take(self, samples: Iterator[Sample]) -> None:
        until = self.series.judged_until()
        for s in samples:
            if until is None or s.t > until:  # pending: it and every later-filed one wait
                break
            self._taken += 1
            self._add(s)

    def _add(self, s: Sample) -> None:
        self.reads += 1
        series = self.series
        flagged = series.flagged(s)
        if s.tokens > 0 and s.first is not None:
            series._spread(self.dirty if flagged else self.clean, s.first, s.t, s.tokens)
        if s.t < (self.since or 0):
            return
        if flagged:
            self.marks.append((s.t, s.outcome if s.outcome != "ok" else sorted(series.flags_of(s))[0]))
            return
        if s.ttft_s is not None:
            self.ttft.append((s.t, s.ttft_s))
        if s.tok_s is not None:
            self.tok.append((s.t, s.tok_s))

    def _trim(self, t0: int) -> None:
        self.since = max(self.since or 0, t0)
        for points in (self.ttft, self.tok, self.marks):
            while points and points[0][0] < t0:
                points.popleft()
        oldest = t0 // NS - 61  # the widest averaging (30 s) and a margin
        for buckets in (self.clean, self.dirty):
            if buckets and min(buckets) < oldest:
                for sec in [k for k in buckets if k < oldest]:
                    del buckets[sec]

    def tokens_per_s(self, t0: int, t1: int, avg_s: int = 5) -> list[tuple[int, float]]:
        """:meth:`SeriesState.tokens_per_s` from the seconds taken in."""
        return _rates(self.clean, self.dirty, t0, t1, max(1, int(avg_s)))
