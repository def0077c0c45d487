"""Paired comparison of two qeval runs: kept / broke / fixed / both-failed and an exact McNemar test."""

from __future__ import annotations

from fractions import Fraction
from math import comb

from lanemon.results.qeval import QevalCompare, QevalResult, QevalSide

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


def compare_runs(a: QevalResult, b: QevalResult, name_a: str | None = None,
                 name_b: str | None = None) -> QevalCompare:
    """Pair two ``qeval run`` results by task id (see docs/JSON.md, "qeval")."""
    ta, tb = a.tasks, b.tasks
    common = [tid for tid in ta if tid in tb]
    left_out = len(set(ta) ^ set(tb))
    groups: dict[str, list[str]] = {"kept": [], "broke": [], "fixed": [], "both_failed": []}
    for tid in common:
        pa, pb = ta[tid].passed, tb[tid].passed
        key = "kept" if pa and pb else "broke" if pa else "fixed" if pb else "both_failed"
        groups[key].append(tid)
    return QevalCompare(
        a=QevalSide(name=name_a or a.lane or "A", passed=sum(ta[t].passed for t in common), total=len(common)),
        b=QevalSide(name=name_b or b.lane or "B", passed=sum(tb[t].passed for t in common), total=len(common)),
        kept=len(groups["kept"]), broke=len(groups["broke"]), fixed=len(groups["fixed"]),
        both_failed=len(groups["both_failed"]),
        p_value=mcnemar_exact(len(groups["broke"]), len(groups["fixed"])),
        kept_ids=sorted(groups["kept"]), broke_ids=sorted(groups["broke"]), fixed_ids=sorted(groups["fixed"]),
        both_failed_ids=sorted(groups["both_failed"]), left_out=left_out)


def compare_line(result: QevalCompare) -> str:
    """``"A 71/75, B 71/75; kept 71, broke 0, fixed 0, p = 1.000"``."""
    a, b = result.a, result.b
    # McNemar tests only the discordant pairs: with none there is nothing to test (not "p = 1.000")
    test = f"p = {result.p_value:.3f}" if result.broke + result.fixed else "no discordant pairs"
    return (f"{a.name} {a.passed}/{a.total}, {b.name} {b.passed}/{b.total}; "
            f"kept {result.kept}, broke {result.broke}, fixed {result.fixed}, {test}")
