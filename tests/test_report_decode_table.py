"""The report's decode table and chart judge each level as the ladder does: the steady-state figure with
the shared noise band (workloads/bench/decode.level_leads), the span beside it, starved cells not judged."""

from __future__ import annotations

import copy
import csv
import io
import re
from pathlib import Path

from lanemon.reports.analyse import analyze
from lanemon.reports.charts import svg_chart
from lanemon.reports.data import crossover, level_leads
from lanemon.reports.render import render_csv, render_markdown
from lanemon.reports.sections.decode import decode_sections
from lanemon.workloads.bench.decode import level_leads as ladder_level_leads

SAMPLE = Path(__file__).resolve().parents[1] / "sample_sessions" / "decode.jsonl"


def cell(steady, span, steady_reps=None, reps=None, unreliable=False):
    steady_reps = steady_reps or ([steady] if steady is not None else [])
    reps = reps or [span]
    c = {"aggregate_tok_s": span, "reps": reps, "min": min(reps), "max": max(reps), "unstable": False,
         "ttft_p50_s": 0.2, "ttft_p90_s": 0.2, "ttft_p99_s": 0.2, "per_stream_tok_s_p50": 50.0, "errors": 0,
         "requests": 8, "output_tokens": 1000, "tokens_estimated": False, "unreliable": unreliable}
    if steady is not None:
        c.update(steady_tok_s=steady, steady_reps=steady_reps, steady_unstable=False)
    return c


def decode(a: dict, b: dict) -> dict:
    return {"bench": "decode", "lanes": {"A": {"levels": a}, "B": {"levels": b}}, "interrupted": False,
            "config": {}}


def table(dec: dict) -> dict[str, list[str]]:
    s = decode_sections(dec, ["A", "B"])[0]
    return {row[0]: row for row in s.rows} | {"_headers": s.headers, "_caption": [s.caption], "_notes": s.notes}


def test_leader_is_judged_on_the_steady_figure_with_the_noise_band_not_the_span():
    # C1: the span says B by 8 % (ramp-up), steady inside the band -> tie.
    # C2: the span is inside the band, steady B +12 % -> B leads.
    dec = decode({"1": cell(100, 100), "2": cell(100, 100)},
                 {"1": cell(103, 108), "2": cell(112, 103)})
    t = table(dec)
    assert t["_headers"] == ["Concurrency", "A steady tok/s", "A span tok/s", "B steady tok/s", "B span tok/s",
                             "Leader"]
    assert t["C1"] == ["C1", "100", "100", "103", "108", "tie"]
    assert t["C2"] == ["C2", "100", "100", "112", "103", "B (1.12×)"]
    assert "steady:" in t["_caption"][0] and "span:" in t["_caption"][0] and "noise band (5 %" in t["_caption"][0]
    # the chart draws the steady figures
    chart = decode_sections(dec, ["A", "B"])[0].chart
    assert chart.series == {"A": [100, 100], "B": [103, 112]} and "steady" in chart.y_title


def test_a_band_widened_by_the_reps_turns_a_lead_into_a_tie_and_says_the_band():
    # B's steady reps spread 12 %: a 10 % gap is inside that band
    dec = decode({"1": cell(100, 100, steady_reps=[99, 100, 101])},
                 {"1": cell(110, 110, steady_reps=[104, 110, 117.2])})
    assert table(dec)["C1"][-1] == "tie (band 12.0 % from the reps)"
    dec["lanes"]["B"]["levels"]["1"] = cell(130, 130, steady_reps=[124, 130, 139.6])
    assert table(dec)["C1"][-1] == "B (1.30×, band 12.0 % from the reps)"


def test_a_starved_cell_is_marked_not_judged_and_left_out_of_the_chart():
    dec = decode({"1": cell(100, 100), "2": cell(150, 150), "3": cell(180, 180)},
                 {"1": cell(80, 80), "2": cell(300, 300, unreliable=True), "3": cell(200, 200)})
    t = table(dec)
    assert t["C2"][-1] == "not judged (starved)"
    assert t["C2"][3].startswith("300 ?") and t["C2"][4] == "300 ?"  # both of its figures are flagged
    assert any(n.startswith("? lanemon itself was starved") for n in t["_notes"])
    s = decode_sections(dec, ["A", "B"])[0]
    assert s.chart.series["B"] == [80, None, 200]
    # the line breaks at the starved point instead of bridging it: B draws no polyline (two one-point runs)
    svg = svg_chart(s.chart, ["A", "B"])
    assert len(re.findall(r'<polyline class="line s0"', svg)) == 1
    assert len(re.findall(r'<polyline class="line s1"', svg)) == 0
    # and the judgement is the ladder's own
    assert level_leads(dec, ["A", "B"])[2]["leader"] is None
    assert [x["leader"] for x in ladder_level_leads(dec["lanes"], "A", "B")] == ["A", None, "B"]


def test_old_recordings_without_steady_figures_report_the_span_labelled_and_judged_with_the_band():
    dec = decode({"1": cell(None, 100), "2": cell(None, 100)}, {"1": cell(None, 104), "2": cell(None, 110)})
    t = table(dec)
    assert t["_headers"] == ["Concurrency", "A span tok/s", "B span tok/s", "Leader"]
    assert t["C1"] == ["C1", "100", "104", "tie"]  # 4 % is inside the 5 % band (the old 3 % TIE called it a lead)
    assert t["C2"] == ["C2", "100", "110", "B (1.10×)"]
    assert "predates the steady-state figure" in t["_caption"][0]
    s = decode_sections(dec, ["A", "B"])[0]
    assert s.chart.series == {"A": [100, 100], "B": [104, 110]} and "span" in s.chart.title
    assert all(line.endswith("(span)") for line in s.spark)


def test_crossover_of_a_dict_without_one_uses_the_noise_band():
    # leadership flips by 2 % at C2: inside the band, no crossover; by 20 % at C3: a crossover from C1 to C3
    dec = decode({"1": cell(110, 110), "2": cell(100, 100), "3": cell(100, 100)},
                 {"1": cell(100, 100), "2": cell(102, 102), "3": cell(100, 100)})
    assert crossover(dec, ["A", "B"]) is None
    dec["lanes"]["B"]["levels"]["3"] = cell(120, 120)
    x = crossover(dec, ["A", "B"])
    assert x["leader_before"] == "A" and x["leader_after"] == "B" and x["between"] == [1, 3]


def test_csv_level_rows_lead_with_the_judged_figure_and_keep_the_span():
    dec = decode({"1": cell(120, 100, steady_reps=[118, 122])}, {"1": cell(None, 90)})
    rows = list(csv.DictReader(io.StringIO(render_csv({"environment": {}, "decode": dec}))))
    a = next(r for r in rows if r["lane"] == "A" and r["cell_kind"] == "level")
    b = next(r for r in rows if r["lane"] == "B" and r["cell_kind"] == "level")
    assert (a["tok_s"], a["tok_s_basis"], a["span_tok_s"], a["min_tok_s"], a["max_tok_s"], a["reps"]) == \
        ("120", "steady", "100", "118", "122", "2")
    assert (b["tok_s"], b["tok_s_basis"], b["span_tok_s"]) == ("90", "span", "90")


def test_the_sample_session_table_agrees_with_the_ladder_and_the_verdict():
    analysis = analyze(SAMPLE)
    md = render_markdown(analysis)
    d = analysis["decode"]
    judged = {x["level"]: x["leader"] for x in d["crossover"]["levels"]}
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| C(\d+) \|.*\| ([^|]+) \|$", md, re.M)}
    assert set(int(k) for k in rows) == set(judged)
    for lvl, leader in judged.items():
        text = rows[str(lvl)]
        assert text.startswith("tie") if leader == "tie" else text.startswith(f"{leader} (")
    # the crossover the caption states is where the Leader column changes
    x = d["crossover"]
    assert rows[str(x["between"][0])].startswith(x["leader_before"])
    assert rows[str(x["between"][1])].startswith(x["leader_after"])
    # steady leads each lane's pair of columns
    assert "| Concurrency | A steady tok/s | A span tok/s | B steady tok/s | B span tok/s | Leader |" in md
    # copying the analysis and starving one cell changes only that level's judgement
    a2 = copy.deepcopy(analysis)
    a2["decode"]["lanes"]["B"]["levels"]["6"]["unreliable"] = True
    del a2["decode"]["crossover"]
    assert "| not judged (starved) |" in render_markdown(a2)
