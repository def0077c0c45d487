"""``lanemon check``: one check and the whole report.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations


from lanemon.results.common import Num, Result


class CheckItem(Result):
    name: str
    passed: bool
    required: bool
    detail: str
    ttft_s: Num = None
    tok_s: Num = None


class CheckResult(Result):
    """``lanemon check --json`` (workloads/check.py ``CheckReport``): passed when every required check did."""

    lane: str
    url: str
    model: str | None
    passed: bool
    checks: list[CheckItem]
