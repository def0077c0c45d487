"""The report's decode table and chart judge each level as the ladder does: the steady-state figure with
the shared noise band (workloads/bench/decode.level_leads), the span beside it, starved cells not judged."""

from __future__ import annotations

import copy
import csv
import io
import re
from pathlib import Path

from lanemon.reports.analyse import analyze
from lanemon.results.decode import DecodeResult
from lanemon.reports.charts import svg_chart
from lanemon.reports.data import crossover, level_leads
from lanemon.reports.render import render_csv, render_markdown
from lanemon.reports.sections.decode import decode_sections
from lanemon.results.common import as_result
from lanemon.workloads.bench.decode import crossover as ladder_crossover
from lanemon.workloads.bench.decode import level_leads as ladder_level_leads
from typed_cells import full_result

SAMPLE = Path(__file__).resolve().parents[1] / "sample_sessions" / "decode.jsonl"


def cell(steady, span, steady_reps=None, reps=None, unreliable=False):
    steady_reps = steady_reps or ([steady] if steady is not None else [])
    reps = reps or [span]
    c = {"aggregate_tok_s": span, "reps": reps, "min": min(reps), "max": max(reps), "unstable": False,
         "ttft_p50_s": 0.2, "ttft_p90_s": 0.2, "ttft_p99_s": 0.2, "per_stream_tok_s_p50": 50.0, "errors": 0,
         "requests": 8, "output_tokens": 1000, "tokens_estimated": False, "unreliable": unreliable}
    if steady is not None:
        c.update(steady_tok_s=steady, steady_reps=steady_reps, steady_unstable=False, steady_min=min(steady_reps),
                 steady_max=max(steady_reps))  # as the bench's spread() gives them
    return c


def decode(a: dict, b: dict) -> dict:
    return {"bench": "decode", "lanes": {"A": {"levels": a}, "B": {"levels": b}}, "interrupted": False,
            "config": {}}


def typed(dec: dict) -> DecodeResult:
    """The hand-made result as the bench's typed result: every key it leaves out neutral (typed_cells), its
    crossover the ladder's own (as the bench fold sets it: folds/bench.py)."""
    result = as_result(full_result(copy.deepcopy(dec)), DecodeResult)
    result.crossover = ladder_crossover(result.lanes, list(result.lanes))
    return result


def table(dec: dict) -> dict:
    """The report's throughput table by ``C1`` (the level's Leader) and ``C1/A`` (a lane's row as a dict of
    header -> text, the lane cell with its mark under ``lane``)."""
    s = decode_sections(typed(dec), ["A", "B"])[0]
    out: dict = {"_headers": s.headers, "_caption": [s.caption], "_notes": s.notes}
    level = None
    for row in s.rows:
        level = row[0] or level
        d = dict(zip(s.headers, row))
        out[f"{level}/{d['lane'].split()[0]}"] = d
        if row[0] and "Leader" in d:
            out[level] = d["Leader"]
    return out


def test_leader_is_judged_on_the_steady_figure_with_the_noise_band_not_the_span():
    # C1: the span says B by 8 % (ramp-up), steady inside the band -> tie.
    # C2: the span is inside the band, steady B +12 % -> B leads.
    dec = decode({"1": cell(100, 100), "2": cell(100, 100)},
                 {"1": cell(103, 108), "2": cell(112, 103)})
    t = table(dec)
    assert t["_headers"] == ["C", "lane", "steady tok/s", "span tok/s", "TTFT p50", "TTFT p90", "per-stream tok/s",
                             "err", "requests", "Leader"]
    assert [t[k][h] for k in ("C1/A", "C1/B") for h in ("lane", "steady tok/s", "span tok/s")] == \
        ["A =", "100", "100", "B =", "103", "108"]
    assert t["C1"] == "tie"
    assert [t[k][h] for k in ("C2/A", "C2/B") for h in ("lane", "steady tok/s", "span tok/s")] == \
        ["A", "100", "100", "B ▲", "112", "103"]
    assert t["C2"] == "B (1.12×)"
    assert "steady:" in t["_caption"][0] and "span:" in t["_caption"][0] and "noise band (5 %" in t["_caption"][0]
    # the chart draws the steady figures
    chart = decode_sections(typed(dec), ["A", "B"])[0].chart
    assert chart.series == {"A": [100, 100], "B": [103, 112]} and "steady" in chart.y_title


def test_a_band_widened_by_the_reps_turns_a_lead_into_a_tie_and_says_the_band():
    # B's steady reps spread 12 %: a 10 % gap is inside that band
    dec = decode({"1": cell(100, 100, steady_reps=[99, 100, 101])},
                 {"1": cell(110, 110, steady_reps=[104, 110, 117.2])})
    t = table(dec)
    assert t["C1"] == "tie (band 12.0 % from the reps)"
    # the reps' range, shown whole in the report (a detail column: the CLI drops it where the width is short)
    assert [t[k][h] for k in ("C1/A", "C1/B") for h in ("steady min", "steady max")] == ["99.0", "101", "104", "117"]
    dec["lanes"]["B"]["levels"]["1"] = cell(130, 130, steady_reps=[124, 130, 139.6])
    assert table(dec)["C1"] == "B (1.30×, band 12.0 % from the reps)"


def test_a_starved_cell_is_marked_not_judged_and_left_out_of_the_chart():
    dec = decode({"1": cell(100, 100), "2": cell(150, 150), "3": cell(180, 180)},
                 {"1": cell(80, 80), "2": cell(300, 300, unreliable=True), "3": cell(200, 200)})
    t = table(dec)
    assert t["C2"] == "not judged (starved)"
    assert t["C2/B"]["steady tok/s"] == "300?" and t["C2/B"]["span tok/s"] == "300?"  # both figures are flagged
    assert t["C2/B"]["lane"] == "B" and t["C2/A"]["lane"] == "A"  # no mark: nobody leads a level not judged
    assert any(n.startswith("? lanemon itself was starved") for n in t["_notes"])
    s = decode_sections(typed(dec), ["A", "B"])[0]
    assert s.chart.series["B"] == [80, None, 200]
    # the line breaks at the starved point instead of bridging it: B draws no polyline (two one-point runs)
    svg = svg_chart(s.chart, ["A", "B"])
    assert len(re.findall(r'<polyline class="line s0"', svg)) == 1
    assert len(re.findall(r'<polyline class="line s1"', svg)) == 0
    # and the judgement is the ladder's own
    assert level_leads(typed(dec), ["A", "B"])[2].leader is None
    assert [x.leader for x in ladder_level_leads(typed(dec).lanes, "A", "B")] == ["A", None, "B"]


def test_old_recordings_without_steady_figures_report_the_span_labelled_and_judged_with_the_band():
    dec = decode({"1": cell(None, 100), "2": cell(None, 100)}, {"1": cell(None, 104), "2": cell(None, 110)})
    t = table(dec)
    assert t["_headers"][:4] == ["C", "lane", "span tok/s", "TTFT p50"]  # no column of dashes for steady
    assert t["C1"] == "tie"  # 4 % is inside the 5 % band (the old 3 % TIE called it a lead)
    assert t["C2"] == "B (1.10×)" and t["C2/B"]["span tok/s"] == "110" and t["C2/B"]["lane"] == "B ▲"
    assert "predates the steady-state figure" in t["_caption"][0]
    s = decode_sections(typed(dec), ["A", "B"])[0]
    assert s.chart.series == {"A": [100, 100], "B": [104, 110]} and "span" in s.chart.title
    assert all(line.endswith("(span)") for line in s.spark)


def test_the_crossover_is_the_ladders_judged_with_the_noise_band():
    # leadership flips by 2 % at C2: inside the band, no crossover; by 20 % at C3: a crossover from C1 to C3
    dec = decode({"1": cell(110, 110), "2": cell(100, 100), "3": cell(100, 100)},
                 {"1": cell(100, 100), "2": cell(102, 102), "3": cell(100, 100)})
    assert crossover(typed(dec), ["A", "B"]) is None
    dec["lanes"]["B"]["levels"]["3"] = cell(120, 120)
    x = crossover(typed(dec), ["A", "B"])
    assert x is not None and (x.leader_before, x.leader_after, x.between) == ("A", "B", [1, 3])
    t = table(dec)  # the caption says it
    assert "A leads up to C1, B from C3." in t["_caption"][0]


def test_csv_level_rows_lead_with_the_judged_figure_and_keep_the_span():
    dec = decode({"1": cell(120, 100, steady_reps=[118, 122])}, {"1": cell(None, 90)})
    rows = list(csv.DictReader(io.StringIO(render_csv({"environment": {}, "decode": full_result(dec)}))))
    a = next(r for r in rows if r["lane"] == "A" and r["cell_kind"] == "level")
    b = next(r for r in rows if r["lane"] == "B" and r["cell_kind"] == "level")
    assert (a["tok_s"], a["tok_s_basis"], a["span_tok_s"], a["min_tok_s"], a["max_tok_s"], a["reps"]) == \
        ("120", "steady", "100", "118", "122", "2")
    assert (b["tok_s"], b["tok_s_basis"], b["span_tok_s"]) == ("90", "span", "90")


def test_the_sample_session_table_agrees_with_the_ladder_and_the_verdict():
    analysis = analyze(SAMPLE)
    md = render_markdown(analysis)
    d = analysis.decode
    judged = {x.level: x.leader for x in d.crossover.levels}
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| C(\d+) \|.*\| ([^|]+) \|$", md, re.M)}
    assert set(int(k) for k in rows) == set(judged)
    for lvl, leader in judged.items():
        text = rows[str(lvl)]
        assert text.startswith("tie") if leader == "tie" else text.startswith(f"{leader} (")
    # the crossover the caption states is where the Leader column changes
    x = d.crossover
    assert rows[str(x.between[0])].startswith(x.leader_before)
    assert rows[str(x.between[1])].startswith(x.leader_after)
    # steady leads, span beside it, the Leader last
    assert "| C | lane | steady tok/s | span tok/s | TTFT p50 | TTFT p90 | per-stream tok/s | err | requests | Leader |" in md
    # copying the analysis and starving one cell changes only that level's judgement
    a2 = copy.deepcopy(analysis)
    a2.decode.lanes["B"].levels["6"].unreliable = True
    a2.decode.crossover = None
    assert "| not judged (starved) |" in render_markdown(a2)


def test_the_report_draws_the_decode_table_the_cli_prints_one_model():
    """reports/tables.decode_table is the table `bench decode` prints (fitted to the console) and the report
    draws (whole): same columns, same rows, same values, for the sample session."""
    from rich.console import Console

    from lanemon.cli.bench import render
    from lanemon.reports.tables import decode_table

    d = analyze(SAMPLE).decode  # the typed result the report's section and the CLI both read
    s = decode_sections(d, ["A", "B"])[0]
    model = decode_table(d, ["A", "B"])
    assert s.model is not None and (s.headers, s.rows) == (model.labels(), model.text_rows())
    # the CLI, wide enough for every column, prints exactly these cells
    console = Console(width=400, record=True, color_system=None)
    render(analyze(SAMPLE).decode, console)
    lines = console.export_text().splitlines()
    table = [ln for ln in lines[:next(i for i, ln in enumerate(lines) if ln.startswith("└"))]
             if ln.startswith(("┃", "│"))]
    head = [c.strip() for c in table[0][1:-1].split("┃")]
    body = [[c.strip() for c in ln[1:-1].split("│")] for ln in table[1:]]
    assert head == s.headers and body == s.rows
    # at 100 columns the CLI keeps its table: the detail column (Leader) goes first, silently, the rest as before
    fitted = model.fit(100)
    assert "Leader" not in fitted.labels() and fitted.labels()[:3] == ["C", "lane", "steady"]
    assert fitted.hidden == [] and [r[:3] for r in fitted.text_rows()] == [r[:3] for r in s.rows]


def test_the_report_keeps_the_reps_range_and_the_kinds_of_errors():
    a = cell(100, 98, steady_reps=[96, 104], reps=[95, 101])
    a.update(errors=3, truncated=1, empty=1, bursts=2)
    dec = decode({"1": a}, {"1": cell(90, 90)})
    t = table(dec)
    # one figure per column, the result's own (steady_min / steady_max); the span's range where there is no steady
    assert [t["C1/A"][h] for h in ("steady min", "steady max")] == ["96.0", "104"] and "span min" not in t["C1/A"]
    span_only = decode({"1": cell(None, 98, reps=[95, 101])}, {"1": cell(None, 90)})
    assert [table(span_only)["C1/A"][h] for h in ("span min", "span max")] == ["95.0", "101"]
    assert [t["C1/B"][h] for h in ("steady min", "steady max")] == ["90.0", "90.0"]  # one rep: itself
    assert t["C1/A"]["err"] == "3" and t["C1/A"]["error kinds"] == "3 err (1 truncated, 1 empty), 2 burst"
    assert t["C1/B"]["error kinds"] == "—"
    # the TTFT table says the same words
    ttft = decode_sections(typed(dec), ["A", "B"])[1]
    assert ttft.rows[0][-1] == "3 err (1 truncated, 1 empty), 2 burst"
