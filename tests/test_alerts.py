"""Alert rules (measure/alerts.py): the grammar parsed by hand (never eval) and the pure fire/resolve state."""

from __future__ import annotations

import pytest

from lanemon.measure.alerts import FIRING, RESOLVED, AlertEngine, RuleError, parse_duration, parse_rule

S = 1_000_000_000


def test_a_rule_with_units_and_or_binds_looser_than_and():
    r = parse_rule("error_share >= 5% or kv_usage > 90% and waiting > 3 for 2m")
    assert r.for_s == 120.0
    assert r.text == "error_share >= 5% or kv_usage > 90% and waiting > 3"
    assert [[str(c) for c in g] for g in r.groups] == [["error_share >= 0.05"], ["kv_usage > 0.9", "waiting > 3"]]
    assert r.holds({"error_share": 0.06})
    assert r.holds({"error_share": 0.0, "kv_usage": 0.95, "waiting": 4})
    assert not r.holds({"error_share": 0.0, "kv_usage": 0.95, "waiting": 1})
    assert parse_rule("ttft_p90 > 500ms").groups[0][0].value == pytest.approx(0.5)
    assert parse_duration("1h") == 3600 and parse_duration("250ms") == 0.25


def test_a_missing_figure_never_satisfies_a_comparison():
    r = parse_rule("ttft_p50 < 1")
    assert not r.holds({}) and not r.holds({"ttft_p50": None}) and not r.holds({"ttft_p50": float("nan")})


@pytest.mark.parametrize("text, words", [
    ("", "empty rule"),
    ("ttft > 1", "unknown metric 'ttft'"),
    ("ttft_p50 up 1", "expected a comparison"),
    ("ttft_p50 = 1", "unexpected"),
    ("ttft_p50 > fast", "expected a number"),
    ("ttft_p50 > 1 xor up < 1", "expected 'and', 'or' or 'for'"),
    ("ttft_p50 > 1 for", "takes one duration"),
    ("ttft_p50 >", "expected METRIC OP NUMBER"),
    ("ttft_p50 > 1 for 2s up < 1", "'for' takes one duration"),
    ("ttft_p50 > 1 for 800h", "between 0 and 30 days"),
    ("ttft_p50 > 1 for 5%", "not a duration"),
    ("ttft_p50 > 2m", "write thresholds in s, ms or %"),
    ("__import__('os').system('x') > 1", "unexpected"),
    ("ttft_p50 > 1e999", "not a finite number"),
    ("up < 1 and " * 8 + "up < 1", "more than 8 comparisons"),
    ("x" * 500, "longer than 400"),
])
def test_bad_rules_are_one_line_errors(text, words):
    with pytest.raises(RuleError, match=words) as exc:
        parse_rule(text, where="--alert")
    assert "\n" not in str(exc.value) and str(exc.value).startswith("--alert")


def test_severity_is_checked_and_for_cannot_be_given_twice():
    with pytest.raises(RuleError, match="severity"):
        parse_rule("up < 1", severity="loud")
    with pytest.raises(RuleError, match="both in the rule"):
        parse_rule("up < 1 for 2s", for_s=3.0)


def test_an_alert_fires_after_its_for_and_resolves_once():
    eng = AlertEngine([parse_rule("ttft_p50 > 0.05 for 2s", severity="critical")])
    slow, fast = {"A": {"ttft_p50": 0.2}}, {"A": {"ttft_p50": 0.01}}
    assert eng.evaluate(0, slow) == []  # pending since 0
    assert eng.evaluate(1 * S, slow) == []
    fired = eng.evaluate(2 * S, slow)
    assert [(t.state, t.lane, t.since_ns) for t in fired] == [(FIRING, "A", 0)]
    assert fired[0].to_json()["values"] == {"ttft_p50": 0.2} and fired[0].to_json()["severity"] == "critical"
    assert "FIRING [critical] lane A: ttft_p50 > 0.05 for 2s (ttft_p50=0.2 s)" in fired[0].line()
    assert eng.evaluate(3 * S, slow) == []  # still firing: no second transition
    assert eng.firing_count("A") == 1
    resolved = eng.evaluate(4 * S, fast)
    assert [(t.state, t.since_ns) for t in resolved] == [(RESOLVED, 2 * S)]
    assert eng.evaluate(5 * S, fast) == [] and eng.firing() == []


def test_a_condition_that_breaks_off_restarts_its_for_and_lanes_filter():
    eng = AlertEngine([parse_rule("down > 0 for 2s", lanes=["B"])])
    down = {"A": {"down": 1.0}, "B": {"down": 1.0}}
    eng.evaluate(0, down)
    eng.evaluate(int(1.5 * S), {"A": {"down": 1.0}, "B": {"down": 0.0}})  # B came back: the clock restarts
    assert eng.evaluate(int(2.5 * S), down) == []
    fired = eng.evaluate(int(4.5 * S), down)
    assert [(t.lane, t.since_ns) for t in fired] == [("B", int(2.5 * S))]  # never A: the rule watches B only
