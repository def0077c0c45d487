"""Energy and cost of a run: joules (with their uncertainty), mean power, output tokens per joule and USD per 1M
output tokens (pure).

A lane's GPU telemetry arrives as ``gpu`` events (client/telemetry.py), each a reading of the host's GPUs:
``power_w`` (summed over its GPUs) and, when every GPU has one, ``energy_mj``, the sum of the devices'
energy counters (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION / nvmlDeviceGetTotalEnergyConsumption, millijoules
since boot).  A reading's instant is its event time less the parse and half the request's flight.

The source's own update interval is learned from when its values change, and a window's energy is taken from
the counter's updates either side of it or from the power updates inside it, with an uncertainty from that
sampling (measure/energy_sampling.py).  A result entry (a cell and its reps, a race, a load rep):

* ``energy_j`` ± ``energy_uncertainty_j``; ``energy_source`` ``counter``, ``power`` or ``counter+power``
  (counter intervals after a reset, a wrap or an impossible rise bridged by power; ``energy_note`` says which);
  ``energy_update_s`` the source's learned update interval; ``energy_dropped`` counter intervals dropped as
  physically impossible;
* withheld (None, ``energy_reason`` with the advice) where the uncertainty is over :data:`MAX_UNCERTAINTY` of
  the figure, or where neither the counter nor the power brackets the window -- never 0.0 for want of an
  update;
* ``gpu_power_w_mean`` = energy / window; ``tokens_per_joule`` = generated tokens / energy (±
  ``tokens_per_joule_uncertainty``: the tokens over energy less its uncertainty, less the figure);
  ``usd_per_1m_output_tokens`` = cost_per_hour x window / 3600 / generated tokens x 1e6 (the GPUs are paid for
  by the hour whether busy or not, so the window is the cell's wall time, not the busy time).

The tokens both count are every generated token, reasoning included (:func:`energy_tokens`; the catalogue's
``tokens_per_joule``): what usage.completion_tokens and vLLM's generation_tokens count as output tokens, and
what the GPUs spent their energy on.  Every surface (decode, prefill, sweep, load, race, the monitor) passes
that count to :func:`efficiency`, the one place the two figures are computed.

Where a figure cannot be known it is None and ``energy_reason`` / ``cost_reason`` say why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

import msgspec

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.energy_sampling import MAX_W_PER_GPU, Reading, Sampled, sample, window
from lanemon.measure.metrics import generated_tokens as _generated
from lanemon.measure.records import RequestRecord
from lanemon.results.common import Energy

NS = 1_000_000_000
MAX_UNCERTAINTY = 0.10
"""A figure whose uncertainty is more than this share of it is withheld (with the reason and the advice)."""
ADVICE = "run dcgm-exporter with -c 1000 (1 s), or use --reps / longer cells"

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
    """The successful GPU readings of *lane*, in time order (values that are not finite and non-negative, or a
    power over :data:`MAX_W_PER_GPU` per GPU, are dropped: a recording is untrusted); ``failure`` on the list is
    the message of the lane's last failed reading."""
    out = Readings()
    for ev in events:
        if ev.kind != schema.GPU or ev.lane != lane:
            continue
        d = ev.data
        if not d.get("ok"):
            out.failure = str(d.get("message") or d.get("cls") or "a reading failed")[:300]
            continue
        flight = _num(d.get("latency_s"), 60) or 0.0
        back = (_num(d.get("parse_s"), 60) or 0.0) + flight / 2
        n = d.get("gpu_count")
        gpus = n if type(n) is int and 1 <= n <= 64 else 1
        out.append(Reading(ev.t - int(back * NS), _num(d.get("power_w"), MAX_W_PER_GPU * gpus),
                           _num(d.get("energy_mj"), 1e18), gpus, int(flight / 2 * NS)))
    out.sort(key=lambda r: r.t)
    return out


class WindowEnergy(NamedTuple):
    """One window's energy (:func:`window_energy`), not yet judged against :data:`MAX_UNCERTAINTY`."""

    energy_j: float | None = None
    energy_uncertainty_j: float | None = None
    gpu_power_w_mean: float | None = None
    energy_source: str | None = None
    energy_note: str | None = None
    energy_update_s: float | None = None
    energy_dropped: int = 0
    energy_reason: str | None = None
    """Why ``energy_j`` is None (None when it is known)."""


def window_energy(rs: list[Reading], t0: int, t1: int, sampled: Sampled | None = None, load_edges: bool = True
                  ) -> WindowEnergy:
    """The energy over [t0, t1] (``energy_reason``: why None), not yet judged against :data:`MAX_UNCERTAINTY`
    (:func:`energy_of` does)."""
    if not rs:
        failure = getattr(rs, "failure", None)
        reason = ("no GPU telemetry for this lane" if failure is None else failure
                  if failure.startswith("GPU telemetry") else f"GPU telemetry failed: {failure}")
        return WindowEnergy(energy_reason=reason)
    if t1 <= t0:
        return WindowEnergy(energy_reason="empty window")
    est, why, interval, dropped = window(sample(rs) if sampled is None else sampled, t0, t1, load_edges)
    update_s = round(interval, 3) if interval is not None else None
    if est is None:
        return WindowEnergy(energy_update_s=update_s, energy_dropped=dropped, energy_reason=why)
    seconds = (t1 - t0) / NS
    return WindowEnergy(energy_j=round(est.joules, 3), energy_uncertainty_j=round(est.uncertainty, 3),
                        gpu_power_w_mean=round(est.joules / seconds, 3), energy_source=est.source,
                        energy_note="; ".join(est.notes) or None, energy_update_s=update_s, energy_dropped=dropped)


def energy_tokens(rec: RequestRecord) -> int:
    """The tokens tok/J and $/1M count for one request: every generated token, reasoning included (usage's
    completion_tokens, else a chunk count; measure/metrics.generated_tokens)."""
    return _generated(rec)[0]


class Efficiency(NamedTuple):
    """Tokens per joule and USD per 1M output tokens of a window (:func:`efficiency`); each None with its reason
    where unknown."""

    tokens_per_joule: float | None = None
    tokens_per_joule_uncertainty: float | None = None
    tokens_per_joule_reason: str | None = None
    usd_per_1m_output_tokens: float | None = None
    cost_reason: str | None = None


def efficiency(energy_j: float | None, generated_tokens: int | None, seconds: float | None,
               cost_per_hour: float | None, energy_reason: str | None = None,
               energy_uncertainty_j: float | None = None) -> Efficiency:
    """``tokens_per_joule`` (± ``tokens_per_joule_uncertainty``) and ``usd_per_1m_output_tokens`` (None with
    ``*_reason`` where unknown) of *generated_tokens* -- reasoning included (:func:`energy_tokens`) -- over
    *energy_j* and *seconds*: the one definition every surface reads."""
    if not generated_tokens:
        return Efficiency(tokens_per_joule_reason="no generated tokens", cost_reason="no generated tokens")
    tpj = tpj_u = tpj_reason = usd = cost_reason = None
    if energy_j is None:
        tpj_reason = energy_reason or "energy unknown"
    elif energy_j <= 0:
        tpj_reason = "no energy measured over the window"
    else:
        tpj = round(generated_tokens / energy_j, 4)
        u = energy_uncertainty_j or 0.0
        tpj_u = round(generated_tokens / (energy_j - u) - generated_tokens / energy_j, 4) if u < energy_j else None
    if cost_per_hour is None:
        cost_reason = "no cost_per_hour for this lane (lanes.toml or --cost NAME=USD_PER_HOUR)"
    elif not seconds or seconds <= 0:
        cost_reason = "empty window"
    else:
        usd = round(cost_per_hour * seconds / 3600.0 / generated_tokens * 1e6, 4)
    return Efficiency(tokens_per_joule=tpj, tokens_per_joule_uncertainty=tpj_u, tokens_per_joule_reason=tpj_reason,
                      usd_per_1m_output_tokens=usd, cost_reason=cost_reason)


def lane_costs(events: Iterable[Event]) -> dict[str, float]:
    """``cost_per_hour`` per lane from the ``lane`` events (the last one said wins)."""
    out: dict[str, float] = {}
    for ev in events:
        if ev.kind == schema.LANE and ev.lane:
            c = _num(ev.data.get("cost_per_hour"), 1e6)
            if c is not None:
                out[ev.lane] = c
    return out


def energy_of(events: list[Event], lane: str, windows: list[tuple[int, int]], generated_tokens: int | None,
              cost_per_hour: float | None, rs: list[Reading] | None = None, what: str = "window",
              sampled: Sampled | None = None, load_edges: bool = True) -> Energy:
    """The energy and cost block of one result entry made of one or more windows (a cell's reps; *what* names
    them in a reason): energy, its uncertainty and seconds summed over the windows, withheld with the reason and
    the advice where any window has no figure or the sum's uncertainty is over :data:`MAX_UNCERTAINTY` of it;
    then :func:`efficiency` of *generated_tokens* (reasoning included).  *sampled*: the lane's readings as
    updates, when the caller has them already; *load_edges*: the windows start and end where lanemon's own load
    does (cells, races), not inside a running load (a load rep's measured window: its warm-up before, its
    cool-down after)."""
    rs = readings(events, lane) if rs is None else rs
    sampled = sample(rs) if sampled is None else sampled
    joules = unc = seconds = 0.0
    sources, notes = set(), []
    reason = None
    dropped = 0
    interval = None
    for t0, t1 in windows:
        w = window_energy(rs, t0, t1, sampled, load_edges)
        seconds += max(0, t1 - t0) / NS
        interval = w.energy_update_s if w.energy_update_s is not None else interval
        dropped += w.energy_dropped
        if w.energy_j is None:
            reason = reason or w.energy_reason
            continue
        joules += w.energy_j
        unc += w.energy_uncertainty_j or 0.0
        sources.add(w.energy_source)
        notes += [w.energy_note] if w.energy_note and w.energy_note not in notes else []
    if reason is None and not windows:
        reason = "no window"
    if reason is None and joules > 0 and unc > MAX_UNCERTAINTY * joules:
        every = f"the exporter updates every {interval:.0f} s; " if interval and interval >= 1.5 else ""
        reason = (f"{every}this {what} lasted {seconds:.1f} s: its energy is only known to ±{unc:.0f} J of "
                  f"{joules:.0f} J (over {MAX_UNCERTAINTY:.0%}): {ADVICE}")
    elif reason is not None and interval and interval >= 1.5:  # a slow exporter: what to do about it
        said = "updates every" in reason or "did not change" in reason
        reason = (f"{reason} ({'' if said else f'the exporter updates every {interval:.0f} s; '}this {what} lasted "
                  f"{seconds:.1f} s: {ADVICE})")
    if dropped:
        notes.append(f"{dropped} counter interval(s) rising faster than {MAX_W_PER_GPU:.0f} W per GPU dropped")
    energy = None if reason is not None else joules
    uncertainty = round(unc, 3) if energy is not None else None
    eff = efficiency(energy, generated_tokens, seconds, cost_per_hour, reason, uncertainty)
    return Energy(
        gpu_power_w_mean=round(energy / seconds, 3) if energy is not None and seconds > 0 else None,
        energy_j=round(energy, 3) if energy is not None else None, energy_uncertainty_j=uncertainty,
        energy_source=(sources.pop() if len(sources) == 1 else "mixed") if energy is not None and sources else None,
        energy_reason=reason, energy_note="; ".join(notes) or None, energy_update_s=interval,
        energy_dropped=dropped, energy_window_s=round(seconds, 3), tokens_per_joule=eff.tokens_per_joule,
        tokens_per_joule_uncertainty=eff.tokens_per_joule_uncertainty,
        tokens_per_joule_reason=eff.tokens_per_joule_reason, usd_per_1m_output_tokens=eff.usd_per_1m_output_tokens,
        cost_reason=eff.cost_reason)


def energy_json(e: Energy) -> dict[str, float | int | str | None]:
    """The energy block as a result's JSON carries it: every key of :data:`ENERGY_KEYS`, ``null`` included."""
    return {key: getattr(e, key) for key in ENERGY_KEYS}


ENERGY_KEYS = ("gpu_power_w_mean", "energy_j", "energy_uncertainty_j", "energy_source", "energy_reason",
               "energy_note", "energy_update_s", "energy_dropped", "energy_window_s", "tokens_per_joule",
               "tokens_per_joule_uncertainty", "tokens_per_joule_reason", "usd_per_1m_output_tokens", "cost_reason")


def lane_readings(cache: dict[str, tuple[list[Reading], Sampled]], events: Iterable[Event], lane: str
                  ) -> tuple[list[Reading], Sampled]:
    """*lane*'s readings and their updates, read once per lane (*cache*)."""
    if lane not in cache:
        rs = readings(events, lane)
        cache[lane] = (rs, sample(rs))
    return cache[lane]


class CellWindow(NamedTuple):
    """A finished bench cell (:func:`cell_windows`): its lane, its start and end marks' times and what its start
    mark says it measured (the mark's values as recorded: untrusted, compared and shown as text)."""

    lane: str | None
    t0: int
    """The start mark's time (ns)."""
    t1: int
    """The end mark's time (ns)."""
    level: Any = None
    category: Any = None
    length: Any = None
    part: Any = None
    """``level`` (a decode ladder's level), or the phase a level mark belongs to (a sweep's, ...)."""


def cell_windows(events: Iterable[Event]) -> dict[str, CellWindow]:
    """Finished bench cells by cell id (a start mark and its end mark)."""
    starts: dict[str, CellWindow] = {}
    cells: dict[str, CellWindow] = {}
    for ev in events:
        if ev.kind != schema.MARK or ev.data.get("label") != "cell" or not isinstance(ev.data.get("cell"), str):
            continue
        cid = ev.data["cell"]
        if ev.data.get("phase") == "start":
            d = ev.data
            starts[cid] = CellWindow(ev.lane, ev.t, ev.t, d.get("level"), d.get("category"), d.get("length"),
                                     d.get("part"))
            cells.pop(cid, None)  # a cell id started again: its new start waits for its own end
        elif ev.data.get("phase") == "end" and cid in starts:
            cells[cid] = starts[cid]._replace(t1=ev.t)
    return {cid: cells[cid] for cid in starts if cid in cells}


def cell_groups(cells: dict[str, CellWindow]) -> dict[tuple[str, str, str], list[str]]:
    """The result entries the cells belong to: ``{(lane, "levels" | "categories" | "lengths", key): [cell ids,
    one per rep]}``."""
    groups: dict[tuple[str, str, str], list[str]] = {}
    for cid, c in cells.items():
        for value, where in ((c.level, "levels"), (c.category, "categories"), (c.length, "lengths")):
            if value is not None and (where != "levels" or c.part in (None, "level")):
                groups.setdefault((str(c.lane), where, str(value)), []).append(cid)
                break
    return groups


def attach_energy(lanes: dict[str, Any], events: list[Event]) -> None:
    """Add the energy and cost figures (:func:`energy_of`, keys :data:`ENERGY_KEYS`) to every level, category
    and length entry of a bench result's ``lanes`` and every ``bench load`` rep, from the cells' marks, the
    lanes' ``gpu`` readings and their ``cost_per_hour`` (in place).  Entries of a lane without telemetry get
    None with the reason."""
    from lanemon.measure.records import iter_records

    cells = cell_windows(events)
    costs = lane_costs(events)
    tokens: dict[str, int] = {}
    for rec in iter_records(events, keep_text=False):
        cid = rec.meta.get("cell") if isinstance(rec.meta, dict) else None
        if isinstance(cid, str) and cid in cells and rec.ok:
            tokens[cid] = tokens.get(cid, 0) + energy_tokens(rec)
    by_lane: dict[str, tuple[list[Reading], Sampled]] = {}
    for (lane, where, key), cids in cell_groups(cells).items():
        entry = (lanes.get(lane) or {}).get(where, {}).get(key) if isinstance(lanes.get(lane), dict) else None
        if not isinstance(entry, dict):
            continue
        rs, sampled = lane_readings(by_lane, events, lane)
        windows = [(cells[c].t0, cells[c].t1) for c in cids]
        entry.update(energy_json(energy_of(events, lane, windows, sum(tokens.get(c, 0) for c in cids),
                                           costs.get(lane), rs, "cell", sampled)))
    for lane, d in lanes.items():  # bench load: each rep over its measured window and the tokens served in it
        for rep in (d.get("reps") or []) if isinstance(d, dict) else []:
            window = rep.get("measured_window_ns") if isinstance(rep, dict) else None
            if not (isinstance(window, list) and len(window) == 2 and all(type(x) is int for x in window)):
                continue
            served = rep.get("served_tokens")
            served = round(served) if isinstance(served, (int, float)) and served > 0 else None
            rs, sampled = lane_readings(by_lane, events, lane)
            rep.update(energy_json(energy_of(events, lane, [(window[0], window[1])], served, costs.get(lane), rs,
                                             "rep", sampled, load_edges=False)))


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


def run_energy(events: list[Event], lane: str, windows: list[tuple[int, int]], generated_tokens: int,
               cost_per_hour: float | None, rs: list[Reading] | None = None, sampled: Sampled | None = None
               ) -> Energy:
    """A run of several windows (a lane's races): their energy summed (:func:`energy_of`), or -- where that is
    withheld (windows too short for the exporter's updates) -- over the run's span from its first window's start to
    its last one's end, the time between them included and said so: the counter's updates bracket the whole run
    even where they bracket no single race."""
    block = energy_of(events, lane, windows, generated_tokens, cost_per_hour, rs, "run", sampled)
    if block.energy_j is not None or len(windows) < 2:
        return block
    span = (min(a for a, _ in windows), max(b for _, b in windows))
    over = energy_of(events, lane, [span], generated_tokens, cost_per_hour, rs, "run", sampled)
    if over.energy_j is None:
        return block
    said = (f"over the run's span ({(span[1] - span[0]) / NS:.0f} s, the time between its windows included): no "
            "single window was long enough for the exporter's updates")
    return msgspec.structs.replace(over, energy_note="; ".join(x for x in (said, over.energy_note) if x))
