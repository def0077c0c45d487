"""Numbers with their units and labels a person reads (issue 40 item 11): `served 1.6` / `goodput 1.6` (req/s),
`cache hit 81,297` (tok/s), alerts `(ttft_p50=1.021)` (s), progress `lanemon: A A:load:r0 r0 done`."""

from __future__ import annotations

from lanemon.folds.bench import cell_label
from lanemon.measure.alerts import AlertEngine, parse_rule
from lanemon.reports import tables


def test_short_column_labels_keep_their_unit():
    shorts = {c.label: c.short for c in tables.slo_columns({"ttft": 0.5})}
    assert shorts["goodput req/s"] == "good/s"
    for name, short in (("served_rps", "served/s"), ("sent_rps", "sent/s"), ("scheduled_rps", "sched/s"),
                        ("cache_hit_tok_s", "hit tok/s")):
        assert tables.fig(name, 0).short == short


def test_the_load_cell_label_is_not_its_id():
    assert cell_label("load", {"cell": "A:load:r0", "part": "load", "rep": 0}, "A") == "A load r0"
    assert cell_label("decode", {"cell": "A:C4:r0", "part": "level", "level": 4, "rep": 0}, "A") == "A C4 r0"
    assert cell_label("load", {"cell": "A:calibrate", "part": "calibrate", "rep": 0}, "A") == "A calibrate"


def test_an_alert_line_gives_the_unit():
    engine = AlertEngine([parse_rule("ttft_p50 > 0.05 for 0s")])
    fired = engine.evaluate(0, {"A": {"ttft_p50": 1.021}})
    assert fired and "(ttft_p50=1.021 s)" in fired[0].line()
