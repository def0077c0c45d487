"""Service-level objectives: goodput and whether each target held (pure, no IO).

One arithmetic for every place that judges ``--slo ttft=S tpot=S e2e=S`` (bench load, bench sweep, the
decode cells, the live dashboard):

* a request **meets** the SLO when it completed and is within *every* given target
  (:func:`lanemon.measure.metrics.meets_slo`: a missing figure fails its target, except TPOT of a
  one-token reply, which cannot miss);
* **goodput** is vLLM's (``vllm bench serve --goodput``): the requests meeting every target per second
  of the measured duration -- ``good / duration_s``.  ``share`` = good / all requests (errors are misses);
* a target's **attainment** is the share of all requests (errors are misses) within that one target;
* a target **held** when its percentile over the completed requests is within the limit: p90 for TTFT
  and E2E, the median for TPOT (:data:`HOLD_PERCENTILE`) -- the rule ``bench sweep`` stops on.  With no
  completed request nothing held.

Callers pass :class:`~lanemon.measure.metrics.RequestMetrics` (anything with ``ok``, ``ttft_s``,
``tpot_s``, ``e2e_s`` and ``generated_tokens``) and the duration they measured over.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lanemon.measure.metrics import SLO_KEYS, meets_slo, percentile, round_or_none
from lanemon.results.common import SloTarget
from lanemon.results.load import LoadSlo

#: the percentile of completed requests that must be within a target for it to hold
HOLD_PERCENTILE: dict[str, int] = {"ttft": 90, "tpot": 50, "e2e": 90}

_LABEL = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "E2E"}


def stat_name(key: str) -> str:
    """``p90 TTFT``, ``median TPOT``: the statistic a target is judged on."""
    p = HOLD_PERCENTILE[key]
    return f"{'median' if p == 50 else f'p{p}'} {_LABEL[key]}"


def _value(m: Any, key: str) -> float | None:
    return {"ttft": m.ttft_s, "tpot": m.tpot_s, "e2e": m.e2e_s}[key]


def within(m: Any, key: str, limit: float) -> bool:
    """One request within one target (the rule of :func:`meets_slo`, for a single key)."""
    return meets_slo(m, {key: limit})


@dataclass(frozen=True, slots=True)
class TargetResult:
    key: str            # ttft | tpot | e2e
    limit_s: float
    percentile: int     # the percentile judged (HOLD_PERCENTILE)
    value_s: float | None  # that percentile over the completed requests (None: none completed)
    met: int            # requests within this target
    total: int          # all requests (errors included)
    held: bool

    @property
    def attainment(self) -> float | None:
        return self.met / self.total if self.total else None

    def breach(self) -> str | None:
        """``p90 TTFT 0.612 s > 0.5 s`` when the target did not hold, else None."""
        if self.held:
            return None
        if self.value_s is None:
            return f"{stat_name(self.key)}: no completed request"
        if self.key == "tpot":
            return f"{stat_name(self.key)} {self.value_s * 1000:.1f} ms > {self.limit_s * 1000:g} ms"
        return f"{stat_name(self.key)} {self.value_s:.3f} s > {self.limit_s:g} s"

    def to_result(self) -> SloTarget:
        """The target as the results carry it (``--json``: every key, always; figures rounded)."""
        return SloTarget(limit_s=self.limit_s, stat=f"p{self.percentile}", value_s=round_or_none(self.value_s, 6),
                         met=self.met, total=self.total, attainment=round_or_none(self.attainment), held=self.held)


@dataclass(frozen=True, slots=True)
class SloResult:
    slo: dict[str, float]
    good: int           # requests meeting every target
    total: int          # all requests (errors included)
    duration_s: float | None
    targets: tuple[TargetResult, ...]

    @property
    def goodput_rps(self) -> float | None:
        """vLLM's goodput: requests meeting every target per second of the measured duration."""
        return self.good / self.duration_s if self.duration_s else None

    @property
    def share(self) -> float | None:
        return self.good / self.total if self.total else None

    @property
    def held(self) -> bool:
        return bool(self.targets) and all(t.held for t in self.targets)

    def breach(self) -> str | None:
        """The first broken target in words (order ttft, tpot, e2e), or None when every one held."""
        return next((b for b in (t.breach() for t in self.targets) if b), None)

    def to_result(self) -> LoadSlo:
        """The judgement as the results carry it (docs/JSON.md, "SLO"): goodput, good, total, share, duration,
        held and each target (figures rounded)."""
        return LoadSlo(goodput_rps=round_or_none(self.goodput_rps), good=self.good, total=self.total,
                       share=round_or_none(self.share), duration_s=round_or_none(self.duration_s), held=self.held,
                       targets={t.key: t.to_result() for t in self.targets})


def evaluate(metrics: Sequence[Any], slo: Mapping[str, float], duration_s: float | None) -> SloResult:
    """Judge requests against ``slo`` (seconds per key).  ``metrics``: one per request, errors included;
    ``duration_s``: the time they were measured over (goodput's denominator; None or 0: no rate)."""
    total = len(metrics)
    done = [m for m in metrics if m.ok]
    targets = []
    for key in SLO_KEYS:
        if key not in slo:
            continue
        limit = float(slo[key])
        p = HOLD_PERCENTILE[key]
        values = [v for v in (_value(m, key) for m in done) if v is not None]
        value = percentile(values, p) if values else None
        one_token = key == "tpot" and done and not values and all(m.generated_tokens <= 1 for m in done)
        held = bool(done) and (one_token or (value is not None and value <= limit))
        targets.append(TargetResult(key, limit, p, value, sum(1 for m in metrics if within(m, key, limit)),
                                    total, held))
    good = sum(1 for m in metrics if meets_slo(m, dict(slo)))
    return SloResult(dict(slo), good, total, duration_s if duration_s and duration_s > 0 else None, tuple(targets))


def targets_text(slo: Mapping[str, float] | None) -> str:
    """``TTFT ≤ 0.5 s, TPOT ≤ 0.05 s`` (``no SLO`` when empty)."""
    return ", ".join(f"{_LABEL.get(k, k.upper())} ≤ {v:g} s" for k, v in (slo or {}).items()) or "no SLO"
