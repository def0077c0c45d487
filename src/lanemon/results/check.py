"""``lanemon check``: one check and the whole report.

Part of the typed results (``lanemon.results``): see the package docstring.  Built by
:func:`lanemon.workloads.check.run_check`."""

from __future__ import annotations


from lanemon.results.common import Num, Result


class CheckItem(Result):
    """One check: passed or not, whether the lane needs it to pass, what was seen; ``ttft_s`` and ``tok_s`` (the
    stream's decode rate) for the streaming checks, null for the others."""

    name: str
    passed: bool
    required: bool
    detail: str
    ttft_s: Num
    tok_s: Num


class CheckResult(Result):
    """``lanemon check --json`` (workloads/check.py ``run_check``): passed when every required check did."""

    lane: str
    url: str
    model: str | None
    passed: bool
    checks: list[CheckItem]
