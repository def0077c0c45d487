"""measure/slo.py: goodput (vLLM's: requests meeting every target per second) and whether targets held."""

from types import SimpleNamespace

import pytest

from lanemon.measure import slo
from lanemon.results.common import SloTarget


def m(ttft=0.1, tpot=0.01, e2e=1.0, ok=True, tokens=100):
    return SimpleNamespace(ok=ok, ttft_s=ttft if ok else None, tpot_s=tpot if ok else None,
                           e2e_s=e2e if ok else None, generated_tokens=tokens if ok else 0)


def test_goodput_is_requests_meeting_every_target_per_second():
    ms = [m(), m(), m(ttft=0.9), m(tpot=0.2), m(ok=False)]
    r = slo.evaluate(ms, {"ttft": 0.5, "tpot": 0.05}, 2.0)
    assert (r.good, r.total) == (2, 5)
    assert r.goodput_rps == pytest.approx(1.0)
    assert r.share == pytest.approx(0.4)
    t = {x.key: x for x in r.targets}
    assert (t["ttft"].met, t["tpot"].met) == (3, 3)  # the error misses both
    assert t["ttft"].attainment == pytest.approx(0.6)


def test_held_is_the_percentile_rule_p90_ttft_median_tpot():
    # 10 completed: one TTFT over the limit -> p90 interpolates between 0.1 and 0.9 = 0.18 -> held
    ms = [m() for _ in range(9)] + [m(ttft=0.9)]
    r = slo.evaluate(ms, {"ttft": 0.5}, 1.0)
    assert r.held and r.breach() is None
    # three of ten over: p90 over the limit
    ms = [m() for _ in range(7)] + [m(ttft=0.9) for _ in range(3)]
    r = slo.evaluate(ms, {"ttft": 0.5, "tpot": 0.05}, 1.0)
    assert not r.held
    assert r.breach() == "p90 TTFT 0.900 s > 0.5 s"
    assert [t.held for t in r.targets] == [False, True]
    # TPOT is judged on the median: 4 of 10 slow still holds, 6 of 10 does not
    assert slo.evaluate([m(tpot=0.2)] * 4 + [m()] * 6, {"tpot": 0.05}, 1.0).held
    r = slo.evaluate([m(tpot=0.2)] * 6 + [m()] * 4, {"tpot": 0.05}, 1.0)
    assert r.breach() == "median TPOT 200.0 ms > 50 ms"


def test_nothing_completed_nothing_held_and_no_rate_without_duration():
    r = slo.evaluate([m(ok=False), m(ok=False)], {"e2e": 10}, None)
    assert not r.held and r.goodput_rps is None and r.good == 0
    assert r.breach() == "p90 E2E: no completed request"
    j = r.to_result()
    assert j.targets["e2e"] == SloTarget(limit_s=10.0, stat="p90", value_s=None, met=0, total=2, attainment=0.0,
                                         held=False)
    assert slo.evaluate([], {"ttft": 1}, 5.0).to_result().share is None


def test_one_token_replies_cannot_miss_tpot():
    r = slo.evaluate([m(tpot=None, tokens=1)] * 3, {"tpot": 0.01}, 1.0)
    assert r.held and r.good == 3


def test_words():
    assert slo.stat_name("tpot") == "median TPOT"
    assert slo.targets_text({"ttft": 0.5, "e2e": 10}) == "TTFT ≤ 0.5 s, E2E ≤ 10 s"
    assert slo.targets_text(None) == "no SLO"
