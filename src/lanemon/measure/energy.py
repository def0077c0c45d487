"""Energy and cost of a run: joules, mean power, output tokens per joule and USD per 1M output tokens (pure).

A lane's GPU telemetry arrives as ``gpu`` events (client/telemetry.py), each a reading of the host's GPUs:
``power_w`` (summed over its GPUs) and, when every GPU has one, ``energy_mj``, the sum of the devices'
energy counters (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION / nvmlDeviceGetTotalEnergyConsumption, millijoules
since boot).  A reading's instant is its event time less the parse and half the request's flight.

For a window ``[t0, t1]`` (a bench cell's start and end marks, a race):

* **energy from the counter** (``energy_source: "counter"``): the counter linearly interpolated at t0 and t1
  between the readings either side of each, and the difference.  Readings must bracket the window (one at
  or before t0, one at or after t1; Monitors reads at every cell edge, so they are milliseconds away), and the
  counter must not go down between them (a reset: the driver reloaded) -- else the power is integrated.
* **energy from power** (``"power"``): the trapezoid rule over the readings in the window, the power at each
  edge interpolated (or held from the nearest reading when none is on that side, if within
  :data:`MAX_HOLD_S`).  A coarser figure: power is a sample, not an average, and between readings it is
  guessed.
* ``gpu_power_w_mean`` = energy / window; ``tokens_per_joule`` = output tokens / energy;
  ``usd_per_1m_output_tokens`` = cost_per_hour x window / 3600 / output tokens x 1e6 (the GPUs are paid
  for by the hour whether busy or not, so the window is the cell's wall time, not the busy time).

Where a figure cannot be known it is None and ``energy_reason`` / ``cost_reason`` say why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lanemon import events as schema
from lanemon.measure.records import reiterable
from lanemon.events import Event

NS = 1_000_000_000
MAX_HOLD_S = 5.0
"""How far from a window's edge a power reading may be held when none lies on the edge's other side."""


@dataclass(frozen=True)
class Reading:
    t: int
    """When it was taken (ns on the session clock)."""
    power_w: float | None
    energy_mj: float | None


def _num(x: Any, hi: float) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) and 0 <= x <= hi else None


class Readings(list):
    """:func:`readings`' list, with ``failure``: the message of the lane's last failed reading (a telemetry
    error is the telemetry endpoint's, said as such, never "no GPU telemetry for this lane")."""

    failure: str | None = None


def readings(events: Iterable[Event], lane: str) -> list[Reading]:
    """The successful GPU readings of *lane*, in time order (values that are not finite and non-negative
    are dropped: a recording is untrusted)."""
    out = Readings()
    for ev in events:
        if ev.kind != schema.GPU or ev.lane != lane:
            continue
        d = ev.data
        if not d.get("ok"):
            out.failure = str(d.get("message") or d.get("cls") or "a reading failed")[:300]
            continue
        back = (_num(d.get("parse_s"), 60) or 0.0) + (_num(d.get("latency_s"), 60) or 0.0) / 2
        out.append(Reading(ev.t - int(back * NS), _num(d.get("power_w"), 1e6), _num(d.get("energy_mj"), 1e18)))
    out.sort(key=lambda r: r.t)
    return out


def _interp(a: Reading, b: Reading, t: int, attr: str) -> float:
    va, vb = getattr(a, attr), getattr(b, attr)
    if b.t == a.t:
        return vb
    return va + (vb - va) * (t - a.t) / (b.t - a.t)


def _bracket(rs: list[Reading], t: int, attr: str) -> tuple[Reading | None, Reading | None]:
    before = after = None
    for r in rs:
        if getattr(r, attr) is None:
            continue
        if r.t <= t:
            before = r
        elif after is None:
            after = r
            break
    return before, after


def counter_energy_j(rs: list[Reading], t0: int, t1: int) -> tuple[float | None, str | None]:
    """(joules, None) from the energy counter over [t0, t1], or (None, why not)."""
    with_counter = [r for r in rs if r.energy_mj is not None]
    if not with_counter:
        return None, "no energy counter in the telemetry"
    a0, b0 = _bracket(with_counter, t0, "energy_mj")
    a1, b1 = _bracket(with_counter, t1, "energy_mj")
    if a0 is None or (b1 is None and (a1 is None or a1.t < t1)):
        return None, "no energy reading on both sides of the window"
    lo, hi = a0, b1 or a1
    span = [r for r in with_counter if lo.t <= r.t <= hi.t]
    if any(y.energy_mj < x.energy_mj for x, y in zip(span, span[1:])):
        return None, "the energy counter went down (reset) during the window"
    e0 = _interp(a0, b0, t0, "energy_mj") if b0 is not None else a0.energy_mj
    e1 = _interp(a1, b1, t1, "energy_mj") if (a1 is not None and b1 is not None) else (b1 or a1).energy_mj
    return max(0.0, (e1 - e0) / 1000.0), None


def power_energy_j(rs: list[Reading], t0: int, t1: int) -> tuple[float | None, str | None]:
    """(joules, None) from the power readings integrated over [t0, t1] (trapezoid rule), or (None, why not)."""
    ps = [r for r in rs if r.power_w is not None]
    if not ps:
        return None, "no power reading in the telemetry"

    def edge(t: int) -> float | None:
        a, b = _bracket(ps, t, "power_w")
        if a is not None and b is not None:
            return _interp(a, b, t, "power_w")
        near = a if a is not None else b
        return near.power_w if near is not None and abs(near.t - t) <= MAX_HOLD_S * NS else None

    p0, p1 = edge(t0), edge(t1)
    if p0 is None or p1 is None:
        return None, "no power reading near the window's edges"
    pts = [(t0, p0)] + [(r.t, r.power_w) for r in ps if t0 < r.t < t1] + [(t1, p1)]
    joules = sum((tb - ta) / NS * (pa + pb) / 2 for (ta, pa), (tb, pb) in zip(pts, pts[1:]))
    return joules, None


def window_energy(rs: list[Reading], t0: int, t1: int) -> dict[str, Any]:
    """``energy_j``, ``gpu_power_w_mean``, ``energy_source`` (counter | power) and ``energy_reason`` (why
    None) over [t0, t1]."""
    if not rs:
        failure = getattr(rs, "failure", None)
        reason = ("no GPU telemetry for this lane" if failure is None else failure
                  if failure.startswith("GPU telemetry") else f"GPU telemetry failed: {failure}")
        return {"energy_j": None, "gpu_power_w_mean": None, "energy_source": None, "energy_reason": reason}
    if t1 <= t0:
        return {"energy_j": None, "gpu_power_w_mean": None, "energy_source": None,
                "energy_reason": "empty window"}
    joules, why = counter_energy_j(rs, t0, t1)
    source = "counter"
    if joules is None:
        joules, why2 = power_energy_j(rs, t0, t1)
        source = "power"
        if joules is None:
            return {"energy_j": None, "gpu_power_w_mean": None, "energy_source": None,
                    "energy_reason": f"{why}; {why2}"}
    seconds = (t1 - t0) / NS
    return {"energy_j": round(joules, 3), "gpu_power_w_mean": round(joules / seconds, 3),
            "energy_source": source, "energy_reason": None}


def efficiency(energy_j: float | None, output_tokens: int | None, seconds: float | None,
               cost_per_hour: float | None, energy_reason: str | None = None) -> dict[str, Any]:
    """``tokens_per_joule`` and ``usd_per_1m_output_tokens`` (None with ``*_reason`` where unknown)."""
    out: dict[str, Any] = {"tokens_per_joule": None, "tokens_per_joule_reason": None,
                           "usd_per_1m_output_tokens": None, "cost_reason": None}
    if not output_tokens:
        out["tokens_per_joule_reason"] = out["cost_reason"] = "no output tokens"
        return out
    if energy_j is None:
        out["tokens_per_joule_reason"] = energy_reason or "energy unknown"
    elif energy_j <= 0:
        out["tokens_per_joule_reason"] = "no energy measured over the window"
    else:
        out["tokens_per_joule"] = round(output_tokens / energy_j, 4)
    if cost_per_hour is None:
        out["cost_reason"] = "no cost_per_hour for this lane (lanes.toml or --cost NAME=USD_PER_HOUR)"
    elif not seconds or seconds <= 0:
        out["cost_reason"] = "empty window"
    else:
        out["usd_per_1m_output_tokens"] = round(cost_per_hour * seconds / 3600.0 / output_tokens * 1e6, 4)
    return out


def lane_costs(events: Iterable[Event]) -> dict[str, float]:
    """``cost_per_hour`` per lane from the ``lane`` events (the last one said wins)."""
    out: dict[str, float] = {}
    for ev in events:
        if ev.kind == schema.LANE and ev.lane:
            c = _num(ev.data.get("cost_per_hour"), 1e6)
            if c is not None:
                out[ev.lane] = c
    return out


def energy_of(events: list[Event], lane: str, windows: list[tuple[int, int]], output_tokens: int | None,
              cost_per_hour: float | None, rs: list[Reading] | None = None) -> dict[str, Any]:
    """The energy and cost block of one result entry made of one or more windows (a cell's reps): energy
    and seconds summed over the windows, then :func:`efficiency`."""
    rs = readings(events, lane) if rs is None else rs
    joules = 0.0
    seconds = 0.0
    sources = set()
    reason = None
    for t0, t1 in windows:
        w = window_energy(rs, t0, t1)
        seconds += max(0, t1 - t0) / NS
        if w["energy_j"] is None:
            reason = w["energy_reason"]
            joules = math.nan
        else:
            joules += w["energy_j"]
            sources.add(w["energy_source"])
    energy = None if (math.isnan(joules) or not windows) else joules
    out: dict[str, Any] = {
        "gpu_power_w_mean": round(energy / seconds, 3) if energy is not None and seconds > 0 else None,
        "energy_j": round(energy, 3) if energy is not None else None,
        "energy_source": (sources.pop() if len(sources) == 1 else "mixed") if energy is not None and sources
        else None,
        "energy_reason": None if energy is not None else (reason or "no window"),
        "energy_window_s": round(seconds, 3),
    }
    out.update(efficiency(energy, output_tokens, seconds, cost_per_hour, out["energy_reason"]))
    return out


#: a cell mark's key -> the result dict holding its entries (bench decode: levels and categories; prefill and
#: needles: lengths; load: levels)
PARTS = (("level", "levels"), ("category", "categories"), ("length", "lengths"))
ENERGY_KEYS = ("gpu_power_w_mean", "energy_j", "energy_source", "energy_reason", "energy_window_s",
               "tokens_per_joule", "tokens_per_joule_reason", "usd_per_1m_output_tokens", "cost_reason")


def cell_windows(events: Iterable[Event]) -> dict[str, dict[str, Any]]:
    """Finished bench cells: ``{cell id: {"lane", "t0", "t1", keys of the start mark}}``."""
    cells: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev.kind != schema.MARK or ev.data.get("label") != "cell" or not isinstance(ev.data.get("cell"), str):
            continue
        cid = ev.data["cell"]
        if ev.data.get("phase") == "start":
            cells[cid] = {**ev.data, "lane": ev.lane, "t0": ev.t, "t1": None}
        elif ev.data.get("phase") == "end" and cid in cells:
            cells[cid]["t1"] = ev.t
    return {k: v for k, v in cells.items() if v["t1"] is not None}


def cell_groups(cells: dict[str, dict[str, Any]]) -> dict[tuple[str, str, str], list[str]]:
    """The result entries the cells belong to: ``{(lane, "levels" | "categories" | "lengths", key): [cell ids,
    one per rep]}``."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for cid, c in cells.items():
        for key, where in PARTS:
            if c.get(key) is not None and (key != "level" or c.get("part") in (None, "level")):
                groups.setdefault((str(c["lane"]), where, str(c[key])), []).append(cid)
                break
    return groups


def attach_energy(lanes: dict[str, Any], events: list[Event]) -> None:
    """Add the energy and cost figures (:func:`energy_of`, keys :data:`ENERGY_KEYS`) to every level, category
    and length entry of a bench result's ``lanes`` and every ``bench load`` rep, from the cells' marks, the
    lanes' ``gpu`` readings and their ``cost_per_hour`` (in place).  Entries of a lane without telemetry get
    None with the reason."""
    from lanemon.measure.metrics import output_tokens
    from lanemon.measure.records import iter_records

    cells = cell_windows(events)
    costs = lane_costs(events)
    tokens: dict[str, int] = {}
    for rec in iter_records(events, keep_text=False):
        cid = rec.meta.get("cell") if isinstance(rec.meta, dict) else None
        if isinstance(cid, str) and cid in cells and rec.ok:
            tokens[cid] = tokens.get(cid, 0) + output_tokens(rec)[0]
    by_lane: dict[str, list[Reading]] = {}
    for (lane, where, key), cids in cell_groups(cells).items():
        entry = (lanes.get(lane) or {}).get(where, {}).get(key) if isinstance(lanes.get(lane), dict) else None
        if not isinstance(entry, dict):
            continue
        rs = by_lane[lane] if lane in by_lane else by_lane.setdefault(lane, readings(events, lane))
        windows = [(cells[c]["t0"], cells[c]["t1"]) for c in cids]
        entry.update(energy_of(events, lane, windows, sum(tokens.get(c, 0) for c in cids), costs.get(lane), rs))
    for lane, d in lanes.items():  # bench load: each rep over its measured window and the tokens served in it
        for rep in (d.get("reps") or []) if isinstance(d, dict) else []:
            window = rep.get("measured_window_ns") if isinstance(rep, dict) else None
            if not (isinstance(window, list) and len(window) == 2 and all(type(x) is int for x in window)):
                continue
            served = rep.get("served_tokens")
            served = round(served) if isinstance(served, (int, float)) and served > 0 else None
            rs = by_lane[lane] if lane in by_lane else by_lane.setdefault(lane, readings(events, lane))
            rep.update(energy_of(events, lane, [(window[0], window[1])], served, costs.get(lane), rs))


def race_windows(events: Iterable[Event]) -> dict[Any, tuple[int, int]]:
    """Finished races: ``{race index: (start mark t, end mark t)}``."""
    starts: dict[Any, int] = {}
    out: dict[Any, tuple[int, int]] = {}
    for ev in events:
        if ev.kind != schema.MARK or ev.data.get("bench") != "race" or "race" not in ev.data:
            continue
        idx = ev.data.get("race")
        if isinstance(idx, (list, dict)):
            continue
        if ev.data.get("phase") == "start":
            starts[idx] = ev.t
        elif ev.data.get("phase") == "end" and idx in starts:
            out[idx] = (starts[idx], ev.t)
    return out


def attach_race_energy(result: dict[str, Any], events: Iterable[Event]) -> dict[str, Any]:
    """Energy and cost (:data:`ENERGY_KEYS`) for every lane of every race (the race's start to end marks:
    the lane's GPUs are held for the race) and, summed over the races, for each lane of the summary (in
    place).  Lanes without telemetry get None with the reason."""
    races = result.get("races")
    if not isinstance(races, list):
        return result
    events = reiterable(events)
    windows = race_windows(events)
    costs = lane_costs(events)
    per_lane: dict[str, tuple[list[tuple[int, int]], int]] = {}
    cache: dict[str, list[Reading]] = {}
    for race in races:
        if not isinstance(race, dict) or race.get("race") not in windows or not isinstance(race.get("lanes"), dict):
            continue
        w = windows[race["race"]]
        for lane, entry in race["lanes"].items():
            if not isinstance(entry, dict):
                continue
            tokens = entry.get("output_tokens") if entry.get("error") is None else 0
            tokens = tokens if isinstance(tokens, int) and not isinstance(tokens, bool) else 0
            rs = cache[lane] if lane in cache else cache.setdefault(lane, readings(events, lane))
            entry.update(energy_of(events, lane, [w], tokens, costs.get(lane), rs))
            ws, n = per_lane.get(lane, ([], 0))
            per_lane[lane] = (ws + [w], n + tokens)
    summary = result.get("lanes")
    if isinstance(summary, dict):
        for lane, (ws, n) in per_lane.items():
            if isinstance(summary.get(lane), dict):
                summary[lane].update(energy_of(events, lane, ws, n, costs.get(lane), cache.get(lane)))
    return result
