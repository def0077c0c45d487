"""reports/tables.py: one table model per result; fit() shortens labels, then drops by rank, never the lane."""

from __future__ import annotations

import pytest

from lanemon.reports.tables import Cell, Column, ResultTable, load_table, sweep_table
from load_sweep_results import load_result, rep_json, sweep_result


def _load_result(slo=True):
    rep = rep_json(measured=40, ok=39, errors=1, scheduled_rate_rps=4.0, sent_rate_rps=4.0, completed_rate_rps=3.9,
                   output_tok_s=812.0, ttft_s={"p50": 0.2, "p99": 0.4}, tpot_s={"p50": 0.02}, e2e_s={"p99": 3.1},
                   send_lag_s={"p99": 0.001}, client_behind=False, lane_behind=False,
                   slo={"goodput_rps": 3.2, "good": 32, "total": 40, "share": 0.8, "duration_s": 10.0, "held": False,
                        "targets": {"ttft": {"attainment": 0.95, "held": True},
                                    "tpot": {"attainment": 0.8, "held": False}}})
    return load_result({"A-very-long-lane": [rep], "B": [dict(rep, slo={**rep["slo"], "held": True, "targets": {}})]},
                       {"load": {"arrival": "poisson", "rate": 4},
                        **({"slo": {"ttft": 0.5, "tpot": 0.03}} if slo else {})})


@pytest.mark.parametrize("width", [60, 80, 100, 250])
def test_load_table_fits_keeps_lane_and_main_figures_and_names_what_it_hid(width):
    t = load_table(_load_result())
    f = t.fit(width)
    assert f.width() <= width or [c.drop for c in f.columns] == [0] * len(f.columns)
    labels = f.labels()
    assert labels[0] == "lane" and all(r[0].text in ("A-very-long-lane", "B") for r in f.rows)
    for must in ("served", "tok/s"):
        assert any(lab.startswith(must) or lab.endswith(must) for lab in labels)
    assert all(len(r) == len(labels) for r in f.rows)
    assert len(f.hidden) + len(labels) == len(t.columns)
    if width >= 250:
        assert not f.hidden and "goodput req/s" in labels and "TTFT≤0.5s met" in labels
    else:
        assert f.hidden and "hidden at this width" in f.hidden_note()


def test_slo_cells_say_held_or_which_target_broke():
    t = load_table(_load_result())
    i, j = t.labels().index("SLO"), t.labels().index("goodput req/s")
    assert [r[i].text for r in t.rows] == ["broke TPOT", "held"]
    assert t.rows[0][j].text == "3.2"
    assert t.rows[0][t.labels().index("TPOT≤0.03s met")].text == "80 %"
    assert any("vLLM" in n for n in t.notes)
    assert "SLO" not in load_table(_load_result(slo=False)).labels()


def test_fit_drops_the_highest_rank_first_and_never_rank_0():
    t = ResultTable("x", "t", [Column("lane", 0, "left"), Column("aaaa", 1), Column("bbbbbbbb", 2, short="b")],
                    [[Cell("A"), Cell("1"), Cell("2")]])
    assert t.fit(100) is t
    assert t.fit(20).labels() == ["lane", "aaaa", "b"]  # shortened, nothing dropped
    f = t.fit(16)
    assert f.labels() == ["lane", "aaaa"] and f.hidden == ["bbbbbbbb"]
    assert t.fit(1).labels() == ["lane"]


def test_sweep_table_rows_per_level_and_lane_with_goodput_and_held():
    level = {"aggregate_tok_s": 200.0, "steady_tok_s": 210.0, "ttft_p90_s": 0.3, "per_stream_tok_s_p50": 50.0,
             "errors": 0, "goodput": {"rate_rps": 2.5, "share": 0.9, "held": True, "targets": {}}}
    broke = dict(level, tpot_p50_s=0.0213, goodput={"rate_rps": 1.0, "share": 0.4, "held": False,
                                 "targets": {"ttft": {"held": False}}})
    res = sweep_result({"A": {"levels": {"1": level, "2": broke}, "gain_per_doubling": {"1": None, "2": 0.05},
                              "stopped": "slo", "slo_holds_to": 1, "max_aggregate_tok_s": 200.0,
                              "slo_held": {"1": True, "2": False}}}, slo={"ttft": 0.5}, knee_gain=0.1)
    t = sweep_table(res)
    assert [r[0].text for r in t.rows] == ["C1", "C2"]
    s = t.labels().index("SLO")
    assert [r[s].text for r in t.rows] == ["held", "broke TTFT"]
    # the cell's own tpot_p50_s, never 1 / per-stream tok/s of the table's own (a result made before it: —)
    assert [r[t.labels().index("TPOT p50")].text for r in t.rows] == ["—", "21 ms"]
    assert t.notes[0].startswith("A: SLO held up to C1")


def test_a_sweeps_levels_are_judged_on_its_slo(tmp_path):
    """A sweep records its decode cells under its own start mark (bench sweep): the levels' goodput and held
    must come from that mark's SLO (they were missing, so every level read 'broke')."""
    from lanemon.events import Event
    from lanemon.workloads.bench.sweep import sweep_results
    from test_ui_bench import steady_bench

    events = [ev for ev, _ in steady_bench().script()]
    for i, ev in enumerate(events):  # make it a sweep's recording: the start mark is the sweep's, with an SLO
        if ev.kind == "mark" and ev.data.get("label") == "bench" and ev.data.get("phase") == "start":
            cfg = dict(ev.data.get("config") or {}, slo={"ttft": 10.0})
            events[i] = Event(ev.t, ev.kind, ev.lane, ev.req, {**ev.data, "bench": "sweep", "config": cfg})
    res = sweep_results(events)
    lanes = res.lanes
    assert lanes and all(d.slo_held and all(d.slo_held.values()) for d in lanes.values())
    assert all(c.goodput and c.goodput.rate_rps for d in lanes.values() for c in d.levels.values() if not c.errors)
