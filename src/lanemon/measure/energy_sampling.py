"""A telemetry source's own cadence, and the energy of a window with its uncertainty (pure).

An exporter does not sample when lanemon reads it: dcgm-exporter collects every 30 s by default (``-c`` in
ms) and serves the same values until its next collection; NVML's counter is fresh at every call.  So the
readings lanemon takes (:class:`Reading`, every second and at every cell edge) are turned into **updates**
first -- the instants the source's values changed -- and the source's **update interval** is learned from
them (:func:`learn`, :func:`series`):

* the counter when there is one (a GPU that is on always draws power, so every collection moves it): the gaps
  between the readings where its value changed, their lower quartile (with fewer than three, the longest it
  stood still); else the power: the shortest gap between its changes (a power that stays flat for a while is not
  a slow exporter);
* a source is **cached** when its counter showed the same value at two readings in a row (a fresh counter moves
  a millijoule a millisecond; twice, or once with an interval over 1.5x lanemon's own reading gap).
  Then only the readings that brought a new value are kept, each placed at its collection: exporters collect on
  a timer, so the interval rounded to 100 ms and the phase every change allows (:func:`fit_clock`) put it within
  a fraction of the reading gap (``slack``); where no phase fits, halfway between the reading before it (which
  still showed the old value) and itself, ± half that gap.  A fresh source (NVML, an exporter collecting faster
  than lanemon reads) keeps every reading where it was taken, ± half its request's flight.

Over a window [t0, t1] (:func:`counter_window`, :func:`power_window`) each figure comes with an
**uncertainty** from that sampling, a bound under one assumption: between two updates the power stays within
[0, the highest power seen around the window] (the highest of the readings and of the counter's mean power
between updates):

* from the counter: the counter between the updates either side of t0 and of t1.  A cached counter is
  interpolated: at an edge a fraction f into an update interval g long that is off by at most f(1 - f) g P (a
  step in the power at the worst instant), plus P x the slack of those updates; with a 30 s exporter and a 4 s
  cell that is more than the cell's energy.  A fresh counter is cut at lanemon's edge with the power of the
  reading before it (lanemon's own load starts at its mark, :func:`_held`): off by the time from the reading to
  the edge x how much the power moved across the reading before, plus the reading's half flight x its power.
* from power (no counter; or across a counter interval that cannot be used): the power's steps inside the
  window, each held until the next (a time-weighted integral of the readings *inside* the window, not of the idle
  ones at its edges, :func:`steps`); each step may have happened anywhere between the reading before it (a whole
  collection interval earlier for a cached source) and the reading that showed it, so it adds the change x half
  that time.  Needs an update inside the window.
* an interval where the counter fell (a **reset**: the driver reloaded; a **wrap**: it fell from near 2^32 or
  2^64 mJ) or rose faster than :data:`MAX_W_PER_GPU` per GPU allows (an **impossible** step: never summed nor
  shown, counted: :func:`dropped`) is bridged by the power over it, labelled, with its uncertainty.

A power that changes more than once between two updates (a cell shorter than the exporter's interval, a batch
that ramps) is outside the assumption; a window with no update inside it has no power figure at all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lanemon.measure.bounds import GPU

NS = 1_000_000_000
MAX_W_PER_GPU = GPU["power_w"][1]
"""The most a GPU can draw (W; measure/bounds.py ``GPU``, the one table of what a reading may physically be): the
bound on a power reading, and on a counter's rise per second.  More is not a measurement: dropped and counted."""
JITTER_S = 0.05
"""Timing slack allowed when checking a counter's rise against :data:`MAX_W_PER_GPU` (two readings close together
have instants known to a few ms)."""
WRAPS = (2.0 ** 32, 2.0 ** 64)
"""Counter widths (mJ) a fall from near the top of is called a wrap rather than a reset."""


@dataclass(frozen=True)
class Reading:
    t: int
    """When it was taken (ns on the session clock)."""
    power_w: float | None
    energy_mj: float | None
    gpus: int = 1
    """How many GPUs the reading sums (bounds what it may physically say)."""
    slack: int = 0
    """± ns on ``t``: half the request's flight (the source sampled somewhere in it)."""


@dataclass(frozen=True)
class Point:
    t: int
    """The update's estimated instant (ns)."""
    v: float
    slack: int = 0
    """± ns on ``t``."""


@dataclass(frozen=True)
class Series:
    """One quantity's updates (``energy_mj`` or ``power_w``)."""

    points: list[Point] = field(default_factory=list)
    interval_s: float | None = None
    """The source's learned update interval (s); None with fewer than three changes."""
    cached: bool = False
    gpus: int = 1


@dataclass(frozen=True)
class Estimate:
    joules: float
    uncertainty: float
    source: str
    """``counter``, ``power`` or ``counter+power`` (counter intervals bridged by power)."""
    notes: tuple[str, ...] = ()


def _median(xs: list[int]) -> int | None:
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else None


def learn(rs: list[Reading]) -> tuple[float | None, bool, Fit | None]:
    """(the source's update interval in s, cached?, its collections' clock where it can be fitted) from its
    readings: see the module's text."""
    attr = "energy_mj" if sum(r.energy_mj is not None for r in rs) >= 3 else "power_w"
    vals = [(r.t, getattr(r, attr)) for r in rs if getattr(r, attr) is not None]
    read_gap = _median([b[0] - a[0] for a, b in zip(vals, vals[1:]) if b[0] > a[0]])
    if read_gap is None:
        return None, False, None
    changes = [vals[i][0] for i in range(1, len(vals)) if vals[i][1] != vals[i - 1][1]]
    gaps = sorted(b - a for a, b in zip(changes, changes[1:]) if b > a)
    if attr == "power_w":
        # a power may stay flat for a long time: the shortest gap between its changes bounds the interval
        return (max(gaps[0], read_gap) if gaps else read_gap) / NS, False, None
    # a counter read twice in a row at the same value was not read fresh (a GPU that is on moves it by a millijoule
    # a millisecond): a cached source, however fast it collects; one that moved at every reading is fresh
    repeats = sum(1 for x, y in zip(vals, vals[1:]) if x[1] == y[1])
    if len(gaps) >= 3:
        interval = gaps[len(gaps) // 4]
    elif repeats:
        # few changes: the longest the counter was seen standing still (a lower bound on the interval)
        edges = [vals[0][0]] + changes + [vals[-1][0]]
        interval = max(b - a for a, b in zip(edges, edges[1:]))
    else:
        interval = read_gap
    cached = repeats >= 2 or (repeats == 1 and interval > 1.5 * read_gap)
    if not cached:
        return interval / NS, False, None
    slack = {r.t: r.slack for r in rs}
    brackets = [(vals[i - 1][0] - slack[vals[i - 1][0]], vals[i][0] + slack[vals[i][0]]) for i in range(1, len(vals))
                if vals[i][1] != vals[i - 1][1]]
    return interval / NS, True, fit_clock(brackets, interval) if len(brackets) >= 3 else None


@dataclass(frozen=True)
class Fit:
    """A cached source's collections: at ``phase + k * period`` (ns), known to ± ``width``."""

    period: float
    phase: float
    width: float

    def at(self, tp: int, t: int) -> Point | None:
        """The collection between readings *tp* and *t* (None if the clock puts none there)."""
        c = self.phase + round(((tp + t) / 2 - self.phase) / self.period) * self.period
        return Point(int(c), 0.0, int(self.width)) if tp - self.width <= c <= t + self.width else None


def fit_clock(brackets: list[tuple[int, int]], interval: int) -> Fit | None:
    """The phase of a source's collections consistent with every (reading before, reading after) pair that saw a
    change, at the learned interval rounded to 100 ms (exporters collect on a timer of whole milliseconds:
    dcgm-exporter a ticker every ``-c`` ms, 30000 by default); None where none fits (a source that does not tick
    so, or an interval that is not a round one)."""
    period = round(interval / 1e8) * 1e8
    if period <= 0 or abs(period - interval) > 0.05 * period:
        return None
    lo, hi = float(brackets[0][0]), float(brackets[0][1])  # the first collection's instant lies in here
    for tp, t in brackets[1:]:
        x = ((tp + t) / 2 - (lo + hi) / 2) / period
        fits = [(min(hi, t - k * period) - max(lo, tp - k * period), k) for k in {math.floor(x), math.ceil(x)}]
        overlap, k = max(fits)
        if overlap < 0:
            return None
        lo, hi = max(lo, tp - k * period), min(hi, t - k * period)
    return Fit(period, (lo + hi) / 2, (hi - lo) / 2)


def series(rs: list[Reading], attr: str, interval_s: float | None = None, cached: bool = False,
           fit: Fit | None = None) -> Series:
    """*attr*'s updates (:class:`Series`), given the source's interval, whether it is cached and its collections'
    clock (:func:`learn`)."""
    vals = [(r.t, getattr(r, attr), r.slack) for r in rs if getattr(r, attr) is not None]
    gpus = max([r.gpus for r in rs] or [1])
    if not cached:
        return Series([Point(t, v, sl) for t, v, sl in vals], interval_s, False, gpus)
    half = int((interval_s or 0) * NS / 2)
    pts = [Point(vals[0][0] - half, vals[0][1], half + vals[0][2])] if vals else []
    for (tp, vp, sp), (t, v, sl) in zip(vals, vals[1:]):
        if v != vp:
            c = fit.at(tp - sp, t + sl) if fit is not None else None
            pts.append(Point(c.t, v, c.slack) if c is not None
                       else Point((tp - sp + t + sl) // 2, v, (t + sl - tp + sp) // 2))
    return Series(pts, interval_s, True, gpus)


def steps(rs: list[Reading], attr: str, interval_s: float | None = None, cached: bool = False,
          fit: Fit | None = None) -> tuple[Series, list[int]]:
    """*attr* as a step function: (its steps -- the first reading, then each change, placed in the middle of the
    time the true change may have happened: after the reading before it less the source's interval when cached
    (after the collection before, when the collections' clock is known), and before the reading that showed it
    -- and the instants it was observed: every reading of a fresh source, the collections of a cached one)."""
    vals = [(r.t - r.slack, r.t + r.slack, getattr(r, attr)) for r in rs if getattr(r, attr) is not None]
    gpus = max([r.gpus for r in rs] or [1])
    if not vals:
        return Series([], interval_s, cached, gpus), []
    u = int((interval_s or 0) * NS) if cached else 0
    pts = [Point(vals[0][1], vals[0][2], 0)]
    seen = [(vals[0][0] + vals[0][1]) // 2]
    for (tp, _, vp), (_, t, v) in zip(vals, vals[1:]):  # tp: the earliest the reading before sampled, t: the latest
        if v != vp:
            c = fit.at(tp, t) if fit is not None else None
            if c is not None:  # a collection at a known instant: the true change in the period before it
                pts.append(Point(c.t - int(fit.period) // 2, v, int(fit.period) // 2 + c.slack))
                seen.append(c.t)
            else:
                pts.append(Point((tp - u + t) // 2, v, (t - tp + u) // 2))
                seen.append((tp + t) // 2)  # the collection itself was between the two readings
    return Series(pts, interval_s, cached, gpus), (seen if cached else [(a + b) // 2 for a, b, _ in vals])


def _kind(a: Point, b: Point, gpus: int) -> str:
    """``ok``, ``reset``, ``wrap`` or ``impossible`` for the counter interval from *a* to *b*."""
    dv = b.v - a.v
    if dv < 0:
        return "wrap" if any(0.9 * w <= a.v <= w for w in WRAPS) else "reset"
    if dv / 1000.0 > MAX_W_PER_GPU * gpus * ((b.t - a.t) / NS + JITTER_S):
        return "impossible"
    return "ok"


BRIDGE_TEXT = {"reset": "the energy counter fell (a reset)", "wrap": "the energy counter wrapped",
               "impossible": "the energy counter rose faster than a GPU can draw"}


def power_window(ps: Series, seen: list[int], a: int, b: int) -> tuple[Estimate | None, str | None]:
    """The power's steps (:func:`steps`) integrated over [a, b]; each step may have happened anywhere in its
    span, which bounds the error (see the module).  Needs the power known at *a* and observed inside."""
    pts = ps.points
    if not pts:
        return None, "no power reading in the telemetry"
    every = f" (the source updates every {ps.interval_s:.0f} s)" if ps.interval_s and ps.interval_s >= 1.5 else ""
    if pts[0].t > a or not any(a <= t <= b for t in seen):
        return None, f"no power update inside the window{every}"
    joules = unc = 0.0
    for k, p in enumerate(pts):
        end = pts[k + 1].t if k + 1 < len(pts) else b
        lo, hi = max(p.t, a), min(end, b)
        if hi > lo:
            joules += p.v * (hi - lo) / NS
        if k:
            clip = lambda t: min(max(t, a), b)  # noqa: E731
            moved = max(clip(p.t + p.slack) - clip(p.t), clip(p.t) - clip(p.t - p.slack))
            unc += abs(p.v - pts[k - 1].v) * moved / NS
    return Estimate(joules, unc, "power"), None


def counter_window(cs: Series, ps: Series, seen: list[int], t0: int, t1: int,
                   power_at: dict[int, tuple[float, float | None, float | None]] | None = None,
                   load_edges: bool = True) -> tuple[Estimate | None, str | None]:
    """The counter between its updates either side of the window, intervals that cannot be used bridged by
    :func:`power_window` (see the module); *power_at*: a fresh source's power at each reading, with the readings'
    before and after it (:func:`fresh_power`); *load_edges*: t0 and t1 are where lanemon's own load starts and
    ends (a cell's or a race's marks), not edges inside a running load (a load rep's measured window)."""
    pts = cs.points
    if not pts:
        return None, "no energy counter in the telemetry"
    i0 = next((i for i in range(len(pts) - 1, -1, -1) if pts[i].t <= t0), None)
    i1 = next((i for i in range(len(pts)) if pts[i].t >= t1), None)
    if i0 is None or i1 is None or i1 <= i0:
        every = f"; it updates every {cs.interval_s:.0f} s" if cs.interval_s and cs.interval_s >= 1.5 else ""
        if cs.cached and len(pts) < 3:  # too few changes to know the interval: only that it is longer than this
            every = f"; it did not change for {cs.interval_s:.0f} s (dcgm-exporter collects every 30 s by default)"
        return None, f"no energy counter update on both sides of the window{every}"
    joules = unc = 0.0
    notes: list[str] = []
    bridged = False
    top = 0.0  # the highest power seen around the window: the counter's mean power between updates, readings
    for a, b in zip(pts[i0:i1], pts[i0 + 1:i1 + 1]):
        if b.t > a.t and _kind(a, b, cs.gpus) == "ok":
            top = max(top, (b.v - a.v) / 1000.0 / ((b.t - a.t) / NS))
    top = max([top] + [p.v for p in ps.points if pts[i0].t <= p.t <= pts[i1].t])
    for a, b in zip(pts[i0:i1], pts[i0 + 1:i1 + 1]):
        lo, hi = max(a.t, t0), min(b.t, t1)
        kind = _kind(a, b, cs.gpus)
        if kind != "ok":
            if hi <= lo:
                continue
            est, why = power_window(ps, seen, lo, hi)
            if est is None:
                return None, f"{BRIDGE_TEXT[kind]} during the window and {why}"
            joules += est.joules
            unc += est.uncertainty
            bridged = True
            notes.append(f"{BRIDGE_TEXT[kind]}: that interval is the power integrated")
            continue
        g = b.t - a.t
        if hi <= lo or g <= 0:
            continue
        held = None
        if not cs.cached and (a.t < t0 < b.t or a.t < t1 < b.t):
            held = (_held(power_at, a, b, t0, t1, cs.gpus) if load_edges
                    else _one_step(power_at, a, b, t0, t1))
        if held is not None:
            joules += held[0]
            unc += held[1]
            continue
        joules += (b.v - a.v) / 1000.0 * (hi - lo) / g
        for edge in (t0, t1):
            if a.t < edge < b.t:
                f = (edge - a.t) / g
                unc += (f * (1 - f) * g + max(a.slack, b.slack)) / NS * top
    return Estimate(max(0.0, joules), unc, "counter+power" if bridged else "counter", tuple(dict.fromkeys(notes))), None


def fresh_power(rs: list[Reading]) -> dict[int, tuple[float, float | None, float | None]]:
    """{reading instant: (its power, the power of the reading before it, of the one after it)}."""
    ps = [(r.t, r.power_w) for r in rs if r.power_w is not None]
    return {t: (p, ps[i - 1][1] if i else None, ps[i + 1][1] if i + 1 < len(ps) else None)
            for i, (t, p) in enumerate(ps)}


def _held(power_at: dict[int, tuple[float, float | None, float | None]] | None, a: Point, b: Point, t0: int,
          t1: int, gpus: int) -> tuple[float, float] | None:
    """A fresh counter's interval [a, b] cut at the window's edges: between a reading taken before lanemon's start
    mark and the mark (or its end mark and the next reading) its own load is not running, so the power there is
    taken as that reading's, ± how much the power moved across the reading before (after) it; the rest of the
    counter's rise is the window's.  None where the readings do not allow it (a cached source, no power at these
    readings, an implied power that is not physical): the interval is then interpolated."""
    if not power_at or a.t not in power_at or b.t not in power_at:
        return None
    pa, pre, _ = power_at[a.t]
    pb, _, post = power_at[b.t]
    before = max(0, t0 - a.t) / NS
    after = max(0, b.t - t1) / NS
    if (before and pre is None) or (after and post is None):
        return None
    inside = (min(b.t, t1) - max(a.t, t0)) / NS
    joules = (b.v - a.v) / 1000.0 - before * pa - after * pb
    if joules < 0 or inside <= 0 or joules / inside > MAX_W_PER_GPU * gpus:
        return None
    unc = before * abs(pa - (pre if pre is not None else pa)) + after * abs(pb - (post if post is not None else pb))
    # and the readings' own instants: each sampled somewhere in its request's flight
    unc += (a.slack * pa if before else 0.0) / NS + (b.slack * pb if after else 0.0) / NS
    return joules, unc


def _one_step(power_at: dict[int, tuple[float, float | None, float | None]] | None, a: Point, b: Point, t0: int,
              t1: int) -> tuple[float, float] | None:
    """A fresh counter's interval [a, b] cut at an edge inside a running load, where the power at both readings
    and the counter's rise agree with one change of power between them (the module's assumption): the counter
    under that change, ± f(1 - f) g x the change (the interpolation's own bound) and the readings' half flights;
    None where they do not agree (the power did more than change once: the interval is interpolated with the
    highest power's bound)."""
    if not power_at or a.t not in power_at or b.t not in power_at:
        return None
    pa, pb = power_at[a.t][0], power_at[b.t][0]
    g = (b.t - a.t) / NS
    mean = (b.v - a.v) / 1000.0 / g
    slop = 0.02 * max(pa, pb) + 0.5
    if not min(pa, pb) - slop <= mean <= max(pa, pb) + slop:
        return None
    x = g * min(1.0, max(0.0, (pb - mean) / (pb - pa))) if pb != pa else g  # time at pa from a

    def upto(t: int) -> float:  # joules from a to t under the one change
        d = min(max(0.0, (t - a.t) / NS), g)
        return pa * min(d, x) + pb * max(0.0, d - x)

    lo, hi = max(a.t, t0), min(b.t, t1)
    scale = (b.v - a.v) / 1000.0 / upto(b.t) if upto(b.t) > 0 else 1.0  # the counter's rise, exactly
    joules = (upto(hi) - upto(lo)) * scale
    unc = 0.0
    for edge in (t0, t1):
        if a.t < edge < b.t:
            f = (edge - a.t) / NS / g
            unc += f * (1 - f) * g * abs(pb - pa) + slop * f * (1 - f) * g + max(a.slack, b.slack) / NS * max(pa, pb)
    return joules, unc


def dropped(cs: Series, t0: int, t1: int) -> int:
    """Counter intervals overlapping [t0, t1] that rose faster than a GPU can draw (never summed)."""
    pts = cs.points
    return sum(1 for a, b in zip(pts, pts[1:]) if b.t > t0 and a.t < t1 and _kind(a, b, cs.gpus) == "impossible")


@dataclass(frozen=True)
class Sampled:
    """A source's readings turned into updates, once for every window over them (:func:`sample`)."""

    interval_s: float | None
    counter: Series
    power: Series
    seen: list[int]
    power_at: dict[int, tuple[float, float | None, float | None]] | None


def sample(rs: list[Reading]) -> Sampled:
    interval, cached, fit = learn(rs)
    has_counter = sum(r.energy_mj is not None for r in rs) >= 3
    # a power reading that repeats the last value observes the power only from a source known to be fresh (its
    # counter moves at every reading): otherwise a repeat may be a stale copy
    ps, seen = steps(rs, "power_w", interval, cached or not has_counter, fit)
    return Sampled(interval, series(rs, "energy_mj", interval, cached, fit), ps, seen,
                   None if cached else fresh_power(rs))


def window(s: Sampled, t0: int, t1: int, load_edges: bool = True
           ) -> tuple[Estimate | None, str | None, float | None, int]:
    """(the estimate over [t0, t1] with the smaller uncertainty of the counter's and power's, or None and why not;
    the source's update interval in s; counter intervals dropped as impossible).  *load_edges*: see
    :func:`counter_window`."""
    by_counter, why = counter_window(s.counter, s.power, s.seen, t0, t1, s.power_at, load_edges)
    by_power, why2 = power_window(s.power, s.seen, t0, t1)
    n = dropped(s.counter, t0, t1)
    options = [e for e in (by_counter, by_power) if e is not None and math.isfinite(e.joules)]
    if len(options) == 2 and abs(by_counter.joules - by_power.joules) > by_counter.uncertainty + by_power.uncertainty:
        options = [by_counter]  # the power changed more than its readings show (a burst between them): the counter
    if not options:
        return None, (f"{why}; {why2}" if s.counter.points else why2), s.interval_s, n
    return min(options, key=lambda e: (e.uncertainty, e is by_power)), None, s.interval_s, n
