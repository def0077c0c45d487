"""Typed ``bench load`` and ``bench sweep`` results for tests (lanemon.results.load / .sweep), built from the few
keys a test cares about: every other key a result always carries is filled at a neutral value (zero, ``null``,
empty), and the whole is read through ``as_result`` (strictly: a key the contract does not name fails)."""

from __future__ import annotations

from typing import Any

import typed_cells

from lanemon.results.common import as_result
from lanemon.results.load import LoadRep, LoadResult
from lanemon.results.sweep import SweepResult

_PCTS = {"p50": None, "p90": None, "p99": None, "n": 0, "max": None}

REP: dict[str, Any] = {
    "cell": "A:load:r0", "requests": 0, "measured": 0, "ok": 0, "errors": 0, "truncated": 0, "empty": 0, "bursts": 0,
    "offered_rate_rps": None, "scheduled_rate_rps": None, "sent_rate_rps": None, "completed_rate_rps": None,
    "completed_rate_reason": None, "completed_in_window": None, "served_tokens": None, "measured_window_ns": None,
    "output_tok_s": None, "visible_tok_s": None, "reasoning_tok_s": None, "lane_behind": None,
    "backlog_at_end": None, "ttft_early_s": None, "ttft_late_s": None, "ttft_s": _PCTS, "tpot_s": _PCTS,
    "e2e_s": _PCTS, "send_lag_s": {"p50": None, "p99": None, "max": None, "n": 0}, "client_behind": False,
    "input_tokens_asked_p50": None, "input_tokens_p50": None, "output_tokens_asked_p50": None,
    "output_tokens_p50": None, "tokens_estimated": False, "error": None, "refused": 0, "refused_error": None,
    "not_sent": 0, "workers_lost": [],
}
"""A rep's every always-printed key, neutral."""

TARGET: dict[str, Any] = {"limit_s": None, "stat": None, "value_s": None, "met": None, "total": None,
                          "attainment": None, "held": None}
"""One judged ``--slo`` target's keys, neutral."""

DECODE_CELL = typed_cells.DECODE_CELL
"""A sweep level is a decode cell: tests/typed_cells.py holds its every always-printed key, neutral."""


def _targets(targets: dict[str, Any]) -> dict[str, Any]:
    return {k: {**TARGET, **t} for k, t in targets.items()}


def rep_json(**fields: Any) -> dict[str, Any]:
    """A rep's JSON: :data:`REP` with ``fields`` (a percentile block given in part keeps the others; an ``slo``'s
    targets given in part are filled from :data:`TARGET`)."""
    out = dict(REP)
    for k, v in fields.items():
        out[k] = {**REP[k], **v} if isinstance(REP.get(k), dict) and isinstance(v, dict) else v
    if isinstance(out.get("slo"), dict):
        out["slo"] = {**out["slo"], "targets": _targets(out["slo"].get("targets") or {})}
    return out


def load_rep(**fields: Any) -> LoadRep:
    return as_result(rep_json(**fields), LoadRep)


def load_result(lanes: dict[str, list[dict[str, Any]]], config: dict[str, Any] | None = None,
                **top: Any) -> LoadResult:
    """``lanes``: lane -> its reps' JSON (:func:`rep_json`); a lane's own keys follow its reps (as load_results
    sets them)."""
    obj = {"bench": "load", "interrupted": False, "cut": [],
           "schedule": {"seed": None, "seed_drawn": False, "same_for_every_lane": True},
           "config": config or {"load": {"arrival": "poisson", "rate": 1.0}},
           "lanes": {n: {"reps": reps, "offered_rate_rps": reps[0]["offered_rate_rps"] if reps else None,
                         "client_behind": any(r["client_behind"] for r in reps),
                         "lane_behind": any(bool(r["lane_behind"]) for r in reps)} for n, reps in lanes.items()},
           **top}
    return as_result(obj, LoadResult)


def level_json(**fields: Any) -> dict[str, Any]:
    """A sweep level's JSON: :data:`DECODE_CELL` with ``fields`` (a ``goodput``'s targets filled from
    :data:`TARGET`, its counts at zero)."""
    out = {**DECODE_CELL, **fields}
    g = out.get("goodput")
    if isinstance(g, dict):
        out["goodput"] = {"good": 0, "total": 0, **g, "targets": _targets(g.get("targets") or {})}
    return out


def sweep_result(lanes: dict[str, dict[str, Any]], **top: Any) -> SweepResult:
    """``lanes``: lane -> its keys (``levels``: level -> the keys :func:`level_json` fills); the others at neutral
    values."""
    base = {"gain_per_doubling": {}, "stopped": "max_level", "knee": None, "slo_holds_to": None,
            "max_aggregate_tok_s": None, "rests_on": None, "unreliable_levels": [], "knee_reliable": False}
    obj = {"bench": "sweep", "interrupted": False, "cut": [], "crossover": None, "knee_gain": 0.1, "slo": None,
           "config": {},
           "lanes": {n: {**base, **d, "levels": {c: level_json(**cell) for c, cell in (d.get("levels") or {}).items()}}
                     for n, d in lanes.items()},
           **top}
    return as_result(obj, SweepResult)
