"""Paired comparison of two qeval runs: kept / broke / fixed / both-failed and an exact McNemar test."""

from __future__ import annotations

from fractions import Fraction
from math import comb
from typing import Any

__all__ = ["mcnemar_exact", "compare_runs", "compare_line"]


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value on the discordant pairs ``b`` (A pass, B fail) and ``c`` (A fail, B pass).

    p = min(1, 2 * P(X <= min(b, c))) with X ~ Binomial(b + c, 1/2); 1.0 when b + c == 0.
    Computed with exact integers, then converted to float.
    """
    if b < 0 or c < 0:
        raise ValueError("counts must be non-negative")
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = Fraction(sum(comb(n, i) for i in range(k + 1)), 2 ** n)
    return float(min(Fraction(1), 2 * tail))


def compare_runs(a: dict[str, Any], b: dict[str, Any], name_a: str | None = None,
                 name_b: str | None = None) -> dict[str, Any]:
    """Pair two ``qeval run`` results by task id (see docs/JSON.md, "qeval")."""
    ta, tb = a.get("tasks") or {}, b.get("tasks") or {}
    common = [tid for tid in ta if tid in tb]
    left_out = len(set(ta) ^ set(tb))
    groups: dict[str, list[str]] = {"kept": [], "broke": [], "fixed": [], "both_failed": []}
    for tid in common:
        pa, pb = bool(ta[tid].get("passed")), bool(tb[tid].get("passed"))
        key = "kept" if pa and pb else "broke" if pa else "fixed" if pb else "both_failed"
        groups[key].append(tid)
    out: dict[str, Any] = {
        "a": {"name": name_a or a.get("lane") or "A", "passed": sum(bool(ta[t].get("passed")) for t in common),
              "total": len(common)},
        "b": {"name": name_b or b.get("lane") or "B", "passed": sum(bool(tb[t].get("passed")) for t in common),
              "total": len(common)},
    }
    for key, ids in groups.items():
        out[key] = len(ids)
    out["p_value"] = mcnemar_exact(len(groups["broke"]), len(groups["fixed"]))
    for key, ids in groups.items():
        out[f"{key}_ids"] = sorted(ids)
    out["left_out"] = left_out
    return out


def compare_line(result: dict[str, Any]) -> str:
    """``"A 71/75, B 71/75; kept 71, broke 0, fixed 0, p = 1.000"``."""
    a, b = result["a"], result["b"]
    # McNemar tests only the discordant pairs: with none there is nothing to test (not "p = 1.000")
    test = (f"p = {result['p_value']:.3f}" if result["broke"] + result["fixed"] else "no discordant pairs")
    return (f"{a['name']} {a['passed']}/{a['total']}, {b['name']} {b['passed']}/{b['total']}; "
            f"kept {result['kept']}, broke {result['broke']}, fixed {result['fixed']}, {test}")
