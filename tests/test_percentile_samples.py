"""Percentiles say how many samples they rest on (issue 28, row 7): a p99 needs 100 samples, a p90 ten.

Over fewer, every table, chart and report shows the largest sample labelled ``max`` with the count, never an
interpolation between the two largest values presented as a p99 (llama.cpp C1, 8 requests: "TTFT p99 0.38 s").
"""

from __future__ import annotations

from lanemon.folds.series import _pcts
from lanemon.measure.metrics import TAIL_MIN_SAMPLES, percentile, summarize, tail_ok
from lanemon.reports.format import pct, secs
from lanemon.reports.sections.decode import decode_sections
from typed_cells import typed_decode
from lanemon.ui.widgets.lane_stats import triple

EIGHT = [0.10, 0.11, 0.12, 0.12, 0.13, 0.14, 0.30, 0.40]


def test_the_rule():
    assert TAIL_MIN_SAMPLES == {90: 10, 99: 100}
    assert not tail_ok(99, 8) and not tail_ok(99, 99) and tail_ok(99, 100)
    assert not tail_ok(90, 9) and tail_ok(90, 10) and tail_ok(50, 1)


def test_a_p99_of_eight_samples_is_shown_as_their_max_with_n():
    s = summarize(EIGHT)
    assert 0.38 < s.p99 < 0.40  # what the report used to print as "TTFT p99 0.38 s"
    assert pct(s.p99, 99, s.n, s.max) == f"max {secs(0.40)} (n=8)"
    assert pct(s.p90, 90, s.n, s.max) == f"max {secs(0.40)} (n=8)"
    many = [i / 1000 for i in range(200)]
    s2 = summarize(many)
    assert pct(s2.p99, 99, s2.n, s2.max) == secs(s2.p99)
    assert pct(0.38, 99, None) == secs(0.38)  # older results without n: as they were


def test_live_window_and_screen_say_max():
    p50, p90, p99 = _pcts(list(EIGHT))
    assert p90 == p99 == 0.40 and p50 == percentile(EIGHT, 50)
    text = triple((p50, p90, p99), n=8)
    assert "max 400" in text and text.count("max") == 1
    many = [i / 1000 for i in range(150)]
    assert "max" not in triple(_pcts(list(many)), n=150)


def test_report_decode_ttft_table_and_chart_use_the_max_under_100_samples():
    level = {"ttft_p50_s": 0.125, "ttft_p90_s": 0.33, "ttft_p99_s": 0.391, "ttft_n": 8, "ttft_max_s": 0.40,
             "per_stream_tok_s_p50": 50.0, "requests": 8, "errors": 0, "aggregate_tok_s": 40.0,
             "reps": [40.0], "min": 40.0, "median": 40.0, "max": 40.0}
    decode = {"bench": "decode", "lanes": {"L": {"levels": {"1": level}, "categories": {}}}}
    sections = {s.key: s for s in decode_sections(typed_decode(decode), ["L"])}
    ttft = sections["ttft"]
    row = ttft.rows[0]
    assert row[3] == f"max {secs(0.40)} (n=8)" and row[2] == f"max {secs(0.40)} (n=8)"
    assert "0.39" not in " ".join(row)
    assert ttft.chart.x[2] == "p99 (max)" and ttft.chart.series["L"][2] == 0.40
