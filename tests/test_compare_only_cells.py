"""`compare REC --lanes A,C`: a cell counts as "only in A" when C has none of its figures, not when A measured
one figure more there (issue 40 item 2: a three-lane decode said `3 cells only in A, 0 only in C` and listed
`decode A C1, C2, C4`, the very cells its table compared -- A had GPU telemetry, C did not)."""

from __future__ import annotations

from lanemon.reports.compare import compare, compare_lanes
from lanemon.results.analysis import as_analysis
from lanemon.results.common import to_json_obj
from typed_cells import full_result


def _level(tok_s, tpj=None):
    c = {"aggregate_tok_s": tok_s, "reps": [tok_s], "ttft_p50_s": 0.1, "per_stream_tok_s_p50": tok_s}
    if tpj is not None:
        c["tokens_per_joule"] = tpj
    return c


def _analysis():
    return {"decode": full_result({"bench": "decode", "config": {}, "lanes": {
        "A": {"levels": {"1": _level(50, 3.1), "2": _level(90, 3.4), "4": _level(150, 3.6), "8": _level(200, 3.7)}},
        "B": {"levels": {"1": _level(48, 3.0), "2": _level(88, 3.3), "4": _level(140, 3.5)}},
        "C": {"levels": {"1": _level(40), "2": _level(70), "4": _level(120)}},
    }})}


def test_lanes_mode_lists_only_the_cells_the_other_lane_lacks():
    r = to_json_obj(compare_lanes(as_analysis(_analysis()), "A", "C"))
    compared = {(row["cell_kind"], row["cell"]) for row in r["rows"]}
    assert compared == {("level", "C1"), ("level", "C2"), ("level", "C4")}
    assert r["only_old"] == [{"bench": "decode", "lane": "A", "cell_kind": "level", "cell": "C8"}]
    assert r["only_new"] == []
    assert (r["summary"]["only_old"], r["summary"]["only_new"]) == (1, 0)


def test_sessions_mode_likewise():
    old = _analysis()
    new = _analysis()
    del new["decode"]["lanes"]["A"]["levels"]["1"]["tokens_per_joule"]  # the new run had no telemetry at C1
    r = to_json_obj(compare(as_analysis(old), as_analysis(new), lanes=["A"]))
    assert r["only_old"] == [] and r["only_new"] == []
