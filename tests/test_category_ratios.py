"""The per-category decode ratio (issue 37): computed once in the decode result (results/decode.category_ratios,
``category_ratios`` in ``--json``), shown by ``bench decode`` and the report under the catalogue's label
(``A/B per-stream ratio``), never divided again by a surface."""

from __future__ import annotations

import io

from rich.console import Console

from lanemon.cli.bench import render
from lanemon.measure.catalogue import label
from lanemon.reports.sections.decode import decode_sections
from lanemon.results.common import as_result, to_json_obj
from lanemon.results.decode import DecodeResult, category_ratios, ratios_of, with_category_ratios
from typed_cells import full_result


def result(coding=(300.0, 200.0), math=(100.0, None)) -> DecodeResult:
    cat = lambda v: {"per_stream_tok_s": v}  # noqa: E731
    return as_result(full_result({"bench": "decode", "lanes": {
        "A": {"levels": {"1": {"aggregate_tok_s": 100.0}}, "categories": {"coding": cat(coding[0]), "math": cat(math[0])}},
        "B": {"levels": {"1": {"aggregate_tok_s": 90.0}}, "categories": {"coding": cat(coding[1]), "math": cat(math[1])}},
    }}), DecodeResult)


def test_the_ratio_is_the_first_lanes_over_the_seconds_per_category_none_without_both():
    r = category_ratios(result().lanes, "A", "B")
    assert r.compared == ["A", "B"] and r.by_category == {"coding": 1.5, "math": None}
    assert category_ratios(result().lanes, "B", "A").by_category == {"coding": 0.667, "math": None}
    made = with_category_ratios(result())
    assert to_json_obj(made)["category_ratios"] == {"compared": ["A", "B"], "by_category": {"coding": 1.5,
                                                                                             "math": None}}
    old = result()  # a result from before the key: read through the same function
    assert old.category_ratios is None and ratios_of(old) == made.category_ratios
    one = result()
    one.lanes = {"A": one.lanes["A"]}
    assert ratios_of(one) is None and with_category_ratios(one).category_ratios is None


def test_the_report_and_the_headless_table_show_the_results_ratio_not_their_own():
    res = with_category_ratios(result())
    res.category_ratios.by_category["coding"] = 9.99  # a surface that divided again would still say 1.50×
    head = f"A/B {label('category_ratio')}"
    sec = next(s for s in decode_sections(res, ["A", "B"]) if s.key == "categories")
    assert sec.headers == ["Category", "A per-stream tok/s", "B per-stream tok/s", head]
    assert [row[-1] for row in sec.rows] == ["9.99×", "—"]
    buf = io.StringIO()
    render(res, Console(file=buf, width=200, color_system=None))
    text = buf.getvalue()
    assert head in text and "9.99×" in text and "1.50×" not in text
