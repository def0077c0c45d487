"""The report's race margin (races without a verdict sentence) says a tie or the sign honestly, as the race's
own verdict does: never ``0 ms`` / ``-0 ms`` / ``-12 ms``."""

from __future__ import annotations

import re

import pytest

from lanemon.reports.render import render_markdown
from lanemon.reports.sections.race import margin_text, race_section
from lanemon.results.race import RaceMargin
from lanemon.workloads.race import TIE_S, race_results
from test_race_fixtures import typed_race


def margin(**kw):
    return RaceMargin(**{**dict.fromkeys(RaceMargin.__struct_fields__), **kw})


@pytest.mark.parametrize("delta, ratio, text", [
    (0.42, 1.18, "0.42 s (1.18×)"),
    (0.016, 1.23, "16 ms (1.23×)"),
    (0.0, 1.0, "tie (under 1 ms)"),
    (-0.0001, 0.9999, "tie (under 1 ms)"),   # was "-0 ms (1.00×)"
    (0.0004, 1.0001, "tie (under 1 ms)"),    # was "0 ms (1.00×)"
    (-0.012, 0.97, "first on the clock, 12 ms slower end to end (sent sooner)"),  # was "-12 ms (0.97×)"
    (-0.25, 0.8, "first on the clock, 0.25 s slower end to end (sent sooner)"),
    (None, None, "—"),
])
def test_margin_text_says_a_tie_or_the_sign(delta, ratio, text):
    assert margin_text(margin(runner_up="B", total_s_delta=delta, total_s_ratio=ratio)) == text
    assert margin_text(margin()) == margin_text(None) == "—"


def test_the_tie_threshold_is_the_race_verdicts():
    assert margin_text(margin(total_s_delta=TIE_S * 0.99)) == "tie (under 1 ms)"
    assert margin_text(margin(total_s_delta=TIE_S * 1.01)) == "1 ms"


def lane(total):
    return {"ttft_s": 0.2, "decode_tok_s": 100.0, "total_s": total, "generated_tokens": 100}


def test_a_report_of_races_without_verdicts_prints_no_negative_or_zero_margin():
    races = [typed_race("A", {"A": lane(1.0), "B": lane(1.0 + d)},
                        {"runner_up": "B", "total_s_delta": d, "total_s_ratio": (1.0 + d) / 1.0}, race=i + 1)
             for i, d in enumerate([-0.0002, 0.0, -0.03, 0.2])]
    result = race_results([])
    result.races = races
    s = race_section(result, ["A", "B"])
    margins = [row[-1] for row in s.rows]
    assert margins == ["tie (under 1 ms)", "tie (under 1 ms)",
                       "first on the clock, 30 ms slower end to end (sent sooner)", "0.20 s (1.20×)"]
    md = render_markdown({"environment": {}, "race": result})
    assert not re.search(r"-\s*\d+(\.\d+)? m?s\b", md) and not re.search(r"\| 0 ms", md)
