"""What the engine did during one run: its ``/metrics`` counters as differences between the run's edges (pure).

An engine's counters are totals since it started; for one bench cell, race or session only the increase
between a scrape at its start and one at its end means anything.  Scrapes are the ``server_metrics``
events (client/prom.py, already summed across ``engine`` labels; per rank in ``by_engine`` when there are
several).  A scrape's instant is its event time less its parse and half its flight (as measure/server.py
places them); the *before* scrape is the last one read at or before the run's start, the *after* scrape
the first one read at or after its end (benches read at every cell edge and wait: Harness.edge).

The increase over a run adds up the increases between consecutive scrapes inside it (:class:`Accumulator`; the
same fold serves a bench cell, a load rep, a race, the report's session and the live dashboard).  The restart
rule is measure/restarts.py's, the one the server view and the live session row use too: a fall in any counter
or histogram sum, or a changed ``process_start_time_seconds``, ends the interval, and the counters of that
interval are not used (what the engine counted before the restart is gone): the restart is counted
(``restarts``; the last one's instant ``restart_t`` and ``restart_reason``; ``excluded_s`` the time left out).
A session adds up the intervals around a restart; a cell, rep or race in which the engine restarted
(:func:`window_counters`) has no figures of its own: its block says ``withheld`` and why.

Figures (each only where the engine exports it; docs/GPU.md, "Run-scoped engine counters"):
``prefix_queries``, ``prefix_hits`` (tokens) and ``prefix_hit_rate``; ``preemptions``;
``spec_drafts``, ``spec_draft_tokens``, ``spec_accepted_tokens``, ``spec_acceptance_rate`` (accepted /
draft tokens) and ``spec_mean_accepted`` (accepted tokens per draft); ``requests`` and
``requests_by_finish`` (stop / length / abort ...); ``prompt_tokens``, ``generation_tokens``; per rank
``ranks`` ({rank: {generation_tokens, ...}}) with ``rank_imbalance`` (max / mean of the ranks' generated
tokens: 1.0 is even); ``lora_adapters`` (running at the end); ``restarts`` (times the counters went down).
"""

from __future__ import annotations

import math
import pickle
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET

from lanemon import events as schema
from lanemon.measure.records import reiterable
from lanemon.measure.restarts import CUMULATIVE, START_KEY, restart_reason
from lanemon.events import Event
from lanemon.results.common import as_result, to_json_obj
from lanemon.results.counters import EngineCounters, RankCounters

NS = 1_000_000_000

#: our figure -> the mapped counter (client/prom.py keys)
COUNTERS = {
    "prefix_queries": "prefix_queries_total",
    "prefix_hits": "prefix_hits_total",
    "preemptions": "preemptions_total",
    "spec_drafts": "spec_drafts_total",
    "spec_draft_tokens": "spec_draft_tokens_total",
    "spec_accepted_tokens": "spec_accepted_tokens_total",
    "requests": "requests_success_total",
    "prompt_tokens": "prompt_tokens_total",
    "generation_tokens": "generation_tokens_total",
}
Scrape = dict[str, Any]
"""One mapped ``/metrics`` scrape as a recording holds it (client/prom.map_engine): untrusted JSON."""
RANK_FIGURES = ("generation_tokens", "prompt_tokens", "prefix_hits", "prefix_queries", "preemptions", "requests",
                "spec_draft_tokens", "spec_accepted_tokens")


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) and x >= 0 else None


def increase(before: Any, after: Any) -> float | None:
    """The increase of a counter between two readings (None when *after* is missing; a counter that went
    down was reset, so its increase is its new value: measure/server.py's rule)."""
    a, b = _num(after), _num(before)
    if a is None:
        return None
    if b is None:
        b = 0.0
    return a - b if a >= b else a


def _int(x: float | None) -> int | float | None:
    if x is None:
        return None
    return int(round(x)) if abs(x - round(x)) < 1e-9 else round(x, 6)


def _set(x: Any) -> Any:
    """A figure that may be unset (a key the engine does not export): None for reading."""
    return None if x is UNSET else x


def run_counters(before: Scrape, after: Scrape) -> EngineCounters:
    """The run-scoped figures between two mapped scrapes (module docstring)."""
    figures: dict[str, int | float | None] = {}
    for figure, key in COUNTERS.items():
        if key in after:
            figures[figure] = _int(increase(before.get(key), after.get(key)))
    engine = after.get("engine")
    out = EngineCounters(engine=engine[:64] if isinstance(engine, str) else None, **figures)  # type: ignore[arg-type]
    q, h = figures.get("prefix_queries"), figures.get("prefix_hits")
    if q and h is not None:
        out.prefix_hit_rate = round(max(0.0, min(1.0, h / q)), 4)
    drafts, dt, acc = figures.get("spec_drafts"), figures.get("spec_draft_tokens"), figures.get("spec_accepted_tokens")
    if dt and acc is not None:
        out.spec_acceptance_rate = round(max(0.0, min(1.0, acc / dt)), 4)
    if drafts and acc is not None:
        out.spec_mean_accepted = round(acc / drafts, 3)
    if _num(after.get("spec_accept_length")) is not None:  # SGLang: a gauge, the mean at the end
        out.spec_accept_length = round(float(after["spec_accept_length"]), 3)
    fb, fa = before.get("requests_by_finish"), after.get("requests_by_finish")
    if isinstance(fa, dict):
        fb = fb if isinstance(fb, dict) else {}
        by = {str(k)[:32]: _int(increase(fb.get(k), v)) for k, v in list(fa.items())[:16]}
        out.requests_by_finish = {k: v for k, v in by.items() if v}
    ranks = _ranks(before.get("by_engine"), after.get("by_engine"))
    if ranks:
        out.ranks = ranks
        gen = [_set(r.generation_tokens) or 0 for r in ranks.values()]
        mean = sum(gen) / len(gen)
        out.rank_imbalance = round(max(gen) / mean, 3) if mean > 0 else None
    if isinstance(after.get("lora_running"), list):
        out.lora_adapters = [str(n)[:64] for n in after["lora_running"][:16]]
    return out


def _ranks(before: Any, after: Any) -> dict[str, RankCounters]:
    if not isinstance(after, dict):
        return {}
    before = before if isinstance(before, dict) else {}
    out: dict[str, RankCounters] = {}
    for rank, vals in list(after.items())[:64]:
        if not isinstance(vals, dict):
            continue
        prev = before.get(rank) if isinstance(before.get(rank), dict) else {}
        d: dict[str, int | float | None] = {}
        for figure in RANK_FIGURES:
            key = COUNTERS[figure]
            if key in vals:
                d[figure] = _int(increase(prev.get(key), vals.get(key)))
        out[str(rank)[:16]] = RankCounters(**d)  # type: ignore[arg-type]
    return dict(sorted(out.items(), key=lambda kv: (len(kv[0]), kv[0])))


def scrape_instant(ev: Event) -> int:
    """When a ``server_metrics`` scrape's snapshot was taken: its event time less the parse and half the flight."""
    back = 0.0
    for key, share in (("parse_s", 1.0), ("latency_s", 0.5)):
        v = _num(ev.data.get(key))
        if v is not None and v < 60:
            back += v * share
    return ev.t - int(back * NS)


READ_KEYS = frozenset(COUNTERS.values()) | {"engine", "requests_by_finish", "by_engine", "lora_running",
                                             "spec_accept_length", START_KEY}
"""The keys of a mapped scrape that :class:`Accumulator` and :func:`run_counters` read (and every cumulative
``*_total`` / ``*_sum`` / ``*_count``, which the restart rule reads): :func:`scrapes` keeps only these (a scrape
maps ~40 figures; a recording of hours holds tens of thousands)."""


class Scrapes:
    """A lane's scrapes as (instant, mapped data) pairs, held compact: the instants as a C array, each scrape's
    keys as one shared tuple per distinct key set and its values pickled (~100-200 bytes a scrape, where a dict
    of floats cost ~600: a recording of hours holds hundreds of thousands of scrapes, issue 39 row 12).  Read
    back as fresh, equal dicts: iterating, indexing and slicing give what the list of pairs gave."""

    __slots__ = ("_t", "_k", "_v", "_keys", "_key_ids")

    def __init__(self, pairs: Iterable[tuple[int, Scrape]] = ()) -> None:
        self._t = array("q")
        self._k = array("I")
        self._v: list[bytes] = []
        self._keys: list[tuple] = []
        self._key_ids: dict[tuple, int] = {}
        for t, data in pairs:
            self.append(t, data)

    def append(self, t: int, data: Scrape) -> None:
        keys = tuple(data)
        kid = self._key_ids.get(keys)
        if kid is None:
            kid = self._key_ids[keys] = len(self._keys)
            self._keys.append(keys)
        self._t.append(t)
        self._k.append(kid)
        self._v.append(pickle.dumps(tuple(data.values()), protocol=5))

    def _pair(self, i: int) -> tuple[int, Scrape]:
        return self._t[i], dict(zip(self._keys[self._k[i]], pickle.loads(self._v[i])))

    def __len__(self) -> int:
        return len(self._t)

    def __bool__(self) -> bool:
        return len(self._t) > 0

    def __iter__(self) -> Iterator[tuple[int, Scrape]]:
        for i in range(len(self._t)):
            yield self._pair(i)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._pair(j) for j in range(*i.indices(len(self._t)))]
        return self._pair(range(len(self._t))[i])

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, (Scrapes, list)) else NotImplemented

    def instants(self) -> array:
        return self._t


def scrapes(events: Iterable[Event], lane: str) -> Scrapes:
    """The successful scrapes of *lane* as (instant, the mapped data read here), in time order (:class:`Scrapes`)."""
    held = Scrapes()
    for ev in events:
        if ev.kind == schema.SERVER_METRICS and ev.lane == lane and ev.data.get("ok"):
            held.append(scrape_instant(ev),
                        {k: v for k, v in ev.data.items() if k in READ_KEYS or k.endswith(CUMULATIVE)})
    t = held.instants()
    if all(t[i] <= t[i + 1] for i in range(len(t) - 1)):
        return held  # in time order already, as a recording is
    out = Scrapes()
    for i in sorted(range(len(t)), key=t.__getitem__):  # stable: ties keep their order, as list.sort kept them
        out.append(*held[i])
    return out


@dataclass
class Accumulator:
    """Run-scoped counters over a run of scrapes, fed one at a time (pure): the first is the baseline, every
    later one adds its increase over the previous value of each counter.  A scrape after which the engine had
    restarted (measure/restarts.py) ends the interval: nothing of it is added, ``restarts`` goes up by one and the
    interval's length is ``excluded_s``; the scrape is the next interval's baseline.  Keys missing from a scrape
    keep their last value; bounded: the mapped keys, 16 finish reasons, 64 ranks."""

    scrapes: int = 0
    first_t: int | None = None
    last_t: int | None = None
    restarts: int = 0
    restart_t: int | None = None
    restart_why: str | None = None
    excluded_ns: int = 0
    _seen: Scrape = field(default_factory=dict)
    """The last value of every key the restart rule reads (a key missing from one scrape keeps its last)."""
    _last: dict[str, float] = field(default_factory=dict)
    _finish_last: dict[str, float] = field(default_factory=dict)
    _rank_last: dict[str, dict[str, float]] = field(default_factory=dict)
    _total: Scrape = field(default_factory=dict)
    """The counters' increases added up, and the state at the end (engine, LoRA, SGLang's accept length): a
    mapped scrape's form, read by :func:`run_counters`."""
    _finish: dict[str, float] = field(default_factory=dict)
    _ranks: dict[str, dict[str, float]] = field(default_factory=dict)

    def add(self, t: int, data: Scrape) -> None:
        first = self.scrapes == 0
        self.scrapes += 1
        if first:
            self.first_t = t
        why = None if first else restart_reason(self._seen, data)
        if why:
            self.restarts += 1
            self.restart_t, self.restart_why = t, why
            if self.last_t is not None:
                self.excluded_ns += max(0, t - self.last_t)
        seen = self._seen
        for k, v in list(data.items())[:256]:  # bounded: a recording's scrape may name any keys, and many
            if isinstance(k, str) and (k in seen or (len(seen) < 256 and (k in READ_KEYS or k.endswith(CUMULATIVE)))):
                seen[k] = v

        def step(last: dict[str, float], total: dict[str, float], key: str, value: Any) -> None:
            v = _num(value)
            if v is None:
                return
            if not first and not why:
                inc = increase(last.get(key), v)
                if inc is not None:
                    total[key] = total.get(key, 0.0) + inc
            last[key] = v

        for key in COUNTERS.values():
            step(self._last, self._total, key, data.get(key))
        if isinstance(data.get("requests_by_finish"), dict):
            for k, v in list(data["requests_by_finish"].items())[:16]:
                step(self._finish_last, self._finish, str(k)[:32], v)
        if isinstance(data.get("by_engine"), dict):
            for rank, vals in list(data["by_engine"].items())[:64]:
                if isinstance(vals, dict):
                    rank = str(rank)[:16]
                    for figure in RANK_FIGURES:
                        key = COUNTERS[figure]
                        step(self._rank_last.setdefault(rank, {}), self._ranks.setdefault(rank, {}), key, vals.get(key))
        self._total["engine"] = data.get("engine", self._total.get("engine"))
        for key in ("lora_running", "spec_accept_length"):  # the state at the end, not a counter
            if key in data:
                self._total[key] = data[key]
        self.last_t = t

    def result(self) -> EngineCounters | None:
        """:func:`run_counters`'s figures since the baseline (the intervals of a restart left out),
        ``between_s``, ``restarts`` and, after one, ``restart_t``, ``restart_reason`` and ``excluded_s`` (None
        before two scrapes)."""
        if self.scrapes < 2 or self.first_t is None or self.last_t is None:
            return None
        after = dict(self._total)
        if self._finish:
            after["requests_by_finish"] = self._finish
        if len(self._rank_last) >= 2:
            after["by_engine"] = {r: self._ranks.get(r, {}) for r in self._rank_last}
        out = run_counters({}, after)
        out.between_s = round((self.last_t - self.first_t) / NS, 3)
        out.restarts = self.restarts
        if self.restart_t is not None:
            out.restart_t = self.restart_t
            out.restart_reason = self.restart_why
            out.excluded_s = round(self.excluded_ns / NS, 3)
        return out


def accumulate(scr: Iterable[tuple[int, Scrape]]) -> EngineCounters | None:
    """:class:`Accumulator` over (instant, mapped scrape) pairs in time order."""
    acc = Accumulator()
    for t, data in scr:
        acc.add(t, data)
    return acc.result()


def withheld(c: EngineCounters) -> EngineCounters:
    """A run's block when the engine restarted during it: no figures (the counters of the interval of the restart
    are lost, so what is left is not the run's), the restart named, ``withheld`` saying why."""
    n = _set(c.restarts) or 0
    why = f" ({c.restart_reason})" if _set(c.restart_reason) else ""
    return EngineCounters(
        engine=c.engine, between_s=c.between_s, restarts=c.restarts, restart_t=c.restart_t,
        restart_reason=c.restart_reason, excluded_s=c.excluded_s,
        withheld=(f"the engine restarted {'during this run' if n == 1 else f'{n} times during this run'}{why}: "
                  "what it counted before the restart is gone, so its counters are not this run's"))


def window_counters(scr: "Scrapes | list[tuple[int, Scrape]]", t0: int, t1: int) -> EngineCounters | None:
    """The run-scoped figures from the last scrape at or before *t0* to the first at or after *t1*, every scrape
    between them added up (:class:`Accumulator`); None when the run is not bracketed by two scrapes; only the
    restart named (:func:`withheld`) when the engine restarted in between."""
    lo = hi = None
    for i, t in enumerate(scr.instants() if isinstance(scr, Scrapes) else (t for t, _ in scr)):
        if t <= t0:
            lo = i
        elif t >= t1:
            hi = i
            break
    if lo is None or hi is None:
        return None
    c = accumulate(scr[lo:hi + 1])
    return withheld(c) if c is not None and _set(c.restarts) else c


def sum_counters(blocks: list[EngineCounters | None]) -> EngineCounters | None:
    """Several windows' figures (a cell's reps) added up, the rates recomputed."""
    given = [b for b in blocks if b is not None]
    if not given:
        return None
    if len(given) == 1:
        return given[0]
    if any(_set(b.withheld) for b in given):  # a restart in one rep: the cell's counters are not known
        last = max((b for b in given if _set(b.restart_t) is not None), key=lambda b: b.restart_t)
        return withheld(EngineCounters(
            engine=given[0].engine, between_s=round(sum(_set(b.between_s) or 0 for b in given), 3),
            restarts=sum(_set(b.restarts) or 0 for b in given), restart_t=last.restart_t,
            restart_reason=_set(last.restart_reason), excluded_s=round(sum(_set(b.excluded_s) or 0 for b in given), 3)))
    after: Scrape = {"engine": _set(given[0].engine)}
    for figure, key in COUNTERS.items():
        vals = [getattr(b, figure) for b in given if _set(getattr(b, figure)) is not None]
        if vals:
            after[key] = sum(vals)
    finish: dict[str, float] = {}
    for b in given:
        for k, v in (_set(b.requests_by_finish) or {}).items():
            finish[k] = finish.get(k, 0) + (v or 0)
    if finish:
        after["requests_by_finish"] = finish
    ranks: dict[str, dict[str, float]] = {}
    for b in given:
        for rank, d in (_set(b.ranks) or {}).items():
            r = ranks.setdefault(rank, {})
            for figure in RANK_FIGURES:
                v = _set(getattr(d, figure))
                if v is not None:
                    r[COUNTERS[figure]] = r.get(COUNTERS[figure], 0) + v
    if ranks:
        after["by_engine"] = ranks
    if _set(given[-1].lora_adapters) is not None:
        after["lora_running"] = given[-1].lora_adapters
    if _set(given[-1].spec_accept_length) is not None:
        after["spec_accept_length"] = given[-1].spec_accept_length
    out = run_counters({}, after)
    out.between_s = round(sum(_set(b.between_s) or 0 for b in given), 3)
    out.restarts = sum(_set(b.restarts) or 0 for b in given)
    return out


def attach_counters(lanes: dict[str, Any], events: list[Event]) -> None:
    """Add ``engine_counters`` (this module's figures between the cell's edges, summed over its reps; null when
    no scrape pair brackets it) to every level, category and length entry of a bench result's ``lanes``, and
    to every ``bench load`` rep (between the rep's own edges: the whole rep), in place.  Lanes without
    ``/metrics`` are left alone (measure/views.py calls this only when some lane was scraped)."""
    from lanemon.measure.energy import cell_groups, cell_windows

    cells = cell_windows(events)
    by_lane: dict[str, list] = {}

    def counters(lane: str, cids: list[str]) -> tuple[bool, EngineCounters | None]:
        scr = by_lane[lane] if lane in by_lane else by_lane.setdefault(lane, scrapes(events, lane))
        if not scr:
            return False, None
        blocks = [window_counters(scr, cells[c].t0, cells[c].t1) for c in cids]
        return True, (sum_counters(blocks) if all(b is not None for b in blocks) else None)

    for (lane, where, key), cids in cell_groups(cells).items():
        entry = (lanes.get(lane) or {}).get(where, {}).get(key) if isinstance(lanes.get(lane), dict) else None
        if isinstance(entry, dict):
            scraped, c = counters(lane, cids)
            if scraped:
                entry["engine_counters"] = to_json_obj(c) if c is not None else None
    for lane, d in lanes.items():  # bench load: each rep between its edges
        for rep in (d.get("reps") or []) if isinstance(d, dict) else []:
            cid = rep.get("cell") if isinstance(rep, dict) else None
            if isinstance(cid, str) and cid in cells:
                scraped, c = counters(lane, [cid])
                if scraped:
                    rep["engine_counters"] = to_json_obj(c) if c is not None else None


def session_counters(events: Iterable[Event]) -> dict[str, EngineCounters]:
    """Per lane, the run-scoped figures from the first to the last successful scrape of the session (the whole
    recording: a live session's, or a bench's including what ran between cells), every scrape added up
    (:class:`Accumulator`: the intervals of a restart left out and named, never a negative delta); lanes with
    fewer than two scrapes are left out."""
    events = reiterable(events)
    out: dict[str, EngineCounters] = {}
    lanes = sorted({ev.lane for ev in events if ev.kind == schema.SERVER_METRICS and ev.lane})
    for lane in lanes:
        c = accumulate(scrapes(events, lane))
        if c is not None:
            out[lane] = c
    return out


def counters_text(c: EngineCounters | Scrape, short: bool = False) -> str:
    """What an engine did over a run, in words (the report's session line; ``short``: the dashboard's); ``c`` a
    block, or its JSON form as a result not yet typed carries it."""
    if not isinstance(c, EngineCounters):
        c = as_result(c, EngineCounters)
    withheld_, requests = _set(c.withheld), _set(c.requests)
    if withheld_:
        return "engine restarted: counters withheld" if short else str(withheld_)
    bits = [] if short else [f"over {_set(c.between_s) or 0:.0f} s: {'?' if c.requests is UNSET else requests} requests"]
    if short and requests is not None:
        bits.append(f"{requests} req")
    if _set(c.generation_tokens) is not None and not short:
        bits.append(f"{c.generation_tokens:,} generated tokens")
    if _set(c.prefix_hit_rate) is not None:
        bits.append(f"{'prefix hit' if short else 'prefix cache hit'} {c.prefix_hit_rate * 100:.0f}%")
    if _set(c.preemptions) is not None:
        bits.append(f"{c.preemptions} {'preempt' if short else 'preemptions'}")
    if _set(c.spec_acceptance_rate) is not None:
        bits.append(f"spec {c.spec_acceptance_rate * 100:.0f}%" if short
                    else f"spec decode accepted {c.spec_acceptance_rate * 100:.0f}% of draft tokens")
    elif _set(c.spec_accept_length) is not None:
        bits.append(f"spec accept length {c.spec_accept_length:.2f}")
    if _set(c.rank_imbalance) is not None:
        bits.append(f"{len(_set(c.ranks) or {})} ranks, max/mean {c.rank_imbalance:.2f}")
    if _set(c.lora_adapters) and not short:
        bits.append("LoRA " + ", ".join(c.lora_adapters))
    n = _set(c.restarts)
    if n:
        left = f"the {c.excluded_s:.3g} s around {'it' if n == 1 else 'them'}" if _num(_set(c.excluded_s)) \
            is not None else "the intervals around it"
        bits.append(f"engine restarted{f' {n}×' if n > 1 else ''}" + ("" if short else f" ({left} not counted)"))
    return ("; " if not short else " · ").join(bits)
