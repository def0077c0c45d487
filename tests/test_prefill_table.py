"""The prefill ladder is one table model (reports/prefill_table.prefill_table) that `bench prefill` prints, the bench
screen draws and the report shows (issue 25 items 3 and 10): at the bench screen's width whole columns go
(named: '+N in report'), never part of a cell -- the replay of sample_sessions/prefill.jsonl at 100x30 cut the
cache hit to 'hit 12,49' before."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from lanemon.cli.bench import render
from lanemon.reports.analyse import analyze
from lanemon.results.common import as_result, to_json_obj
from lanemon.results.prefill import PrefillResult
from lanemon.reports.sections.prefill import prefill_section
from lanemon.reports.prefill_table import prefill_table
from lanemon.ui.app import make_app
from lanemon.ui.widgets.bench_table import BenchTable
from test_replay_snapshots import played_out
from typed_cells import full_result

SAMPLE = Path(__file__).resolve().parents[1] / "sample_sessions" / "prefill.jsonl"


@pytest.fixture(autouse=True)
def _isolated_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))


def cell(tps, ttft, *, hit=None, repeat=None, reps=None, **kw):
    reps = reps or [tps]
    return {"prompt_tokens": 2013, "prefill_tok_s": tps, "ttft_s": ttft, "cache_hit_tok_s": hit,
            "repeat_tok_s": repeat if repeat is not None else hit, "cache_hit_source": "cached_tokens" if hit else None,
            "reps": reps, "min": min(x for x in reps if x is not None) if any(reps) else None,
            "max": max(x for x in reps if x is not None) if any(reps) else None, "unstable": False,
            "requests": 2, "errors": 0, "error": None, "unreliable": False, **kw}


def result() -> PrefillResult:
    """A hand-made prefill result, typed (the keys it leaves out neutral: typed_cells)."""
    return as_result(full_result(_result()), PrefillResult)


def _result():
    return {"bench": "prefill", "interrupted": False, "config": {},
            "ratios": {"compared": ["A", "B"], "by_length": {"2000": 1.343, "64000": None}},
            "lanes": {"A": {"lengths": {"2000": cell(2591, 0.777, repeat=2593, reps=[2500, 2591, 2700]),
                                        "64000": cell(None, None, errors=1, requests=1, skipped=True,
                                                      error="64000 tokens is beyond the lane's context")}},
                      "B": {"lengths": {"2000": cell(3480, 0.573, hit=12491.35, unreliable=True),
                                        "64000": cell(4998, 12.8, hit=12526, unstable=True)}}}}


def rows_by(t):
    """``{"2,000/A": {label: text}}``."""
    out, length = {}, None
    for row in t.text_rows():
        length = row[0] or length
        out[f"{length}/{row[1]}"] = dict(zip(t.labels(), row))
    return out


def test_one_row_per_length_and_lane_with_the_cache_hit_apart():
    t = prefill_table(result(), ["A", "B"])
    assert t.labels() == ["length", "lane", "prefill tok/s", "TTFT", "cache hit tok/s", "B/A ratio", "err",
                          "prompt tokens", "requests", "prefill min", "prefill max", "repeat tok/s"]
    r = rows_by(t)
    assert [r["2,000/A"][k] for k in ("prefill tok/s", "TTFT", "cache hit tok/s", "B/A ratio", "prefill min",
                                      "prefill max", "repeat tok/s")] \
        == ["2,591", "777 ms", "—", "", "2,500", "2,700", "2,593"]  # no hit: not measured, never a word
    # the catalogue's label (prefill_ratio), the ratio beside the lane it divides
    assert [r["2,000/B"][k] for k in ("prefill tok/s", "cache hit tok/s", "B/A ratio")] \
        == ["3,480?", "12,491", "1.34×"]
    assert r["64K/A"]["prefill tok/s"] == "not sent" and r["64K/A"]["err"] == "1" and r["64K/B"]["B/A ratio"] == "—"
    assert r["64K/B"]["prefill tok/s"] == "4,998†"
    assert t.legend == "? starved · † unstable" and t.group_ends == {1, 3}
    assert any("A 64K: 64000 tokens is beyond the lane's context" in n for n in t.notes)
    assert any(n.startswith("cache hit:") and "cached_tokens" in n for n in t.notes)


@pytest.mark.parametrize("width", [40, 46, 49, 60, 80, 100])
def test_fit_drops_whole_columns_and_keeps_the_cache_hit(width):
    t = prefill_table(result(), ["A", "B"])
    f = t.fit(width, pad=2)
    assert f.width(2) <= width
    full = {c for row in t.text_rows() for c in row}
    assert all(c in full for row in f.text_rows() for c in row)  # every cell whole
    if width < 45:  # narrower than the bench screen's table: the cache hit goes whole, and is named
        assert f.labels() == ["length", "lane", "tok/s", "TTFT"] and "cache hit tok/s" in f.hidden
        return
    assert [c.short or c.label for c in f.columns][:5] == ["length", "lane", "tok/s", "TTFT", "hit tok/s"]
    assert "12,491" in [row[4] for row in f.text_rows()]
    kept = set(f.labels())
    assert set(f.hidden) == {c.label for c in t.columns if not c.detail and c.label not in kept
                             and (c.short or c.label) not in kept}  # every column that went is named


@pytest.mark.parametrize("width", [80, 100, 160])
def test_the_cli_prints_the_model_fitted_to_its_width(width):
    buf = io.StringIO()
    render(analyze(SAMPLE).prefill, Console(file=buf, width=width, force_terminal=False))
    out = buf.getvalue()
    assert all(len(line) <= width for line in out.splitlines())
    table = [line for line in out.splitlines() if line.startswith("│")]
    assert len(table) == 8 and "12,491" in table[3] and table[3].split("│")[2].strip() == "B"
    assert ("prefill tok/s" in out) == (width >= 160) and "cache hit" in out and "B/A" in out
    assert "same prompt again" not in out  # the old CLI table's own column


def test_the_report_shows_the_same_model_whole():
    pre = analyze(SAMPLE).prefill
    sec = prefill_section(pre, ["A", "B"])
    model = prefill_table(pre, ["A", "B"])
    assert sec.headers == model.labels() and sec.rows == model.text_rows() and sec.model is not None
    assert "cache hit tok/s" in sec.headers and "repeat tok/s" in sec.headers  # the detail columns stay


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_prefill_replay_draws_the_model_with_no_cell_cut(size):
    from lanemon.sessions.sources import ReplaySession

    app = make_app(ReplaySession(SAMPLE, speed=float("inf")))
    async with app.run_test(size=size) as pilot:
        await played_out(pilot)
        table = app.screen.query_one(BenchTable)
        labels = [str(c.label) for c in table.columns.values()]
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        model = prefill_table(analyze(SAMPLE).prefill, ["A", "B"])
        fitted = model.fit(table.size.width + 1, pad=2)
        assert labels == fitted.labels() and rows == fitted.text_rows()
        assert table.virtual_size.width <= table.scrollable_content_region.width  # drawn whole, nothing cut
        assert "hit tok/s" in labels and "12,491" in [r[labels.index("hit tok/s")] for r in rows]
        if fitted.hidden:  # 100x30; at 160x45 the panel widens to the table (screens/bench.panel_width)
            assert f"+{len(fitted.hidden)} in report" in str(table.border_subtitle)
        else:
            assert "in report" not in str(table.border_subtitle)


@pytest.mark.parametrize("width", [41, 60, 101, 140])
def test_a_cache_hit_note_on_the_bars_is_whole_beside_its_bar_or_under_it(width):
    """At 160x45 the bars panel drew '◀ cache hit 12,…' beside B's 8,000 bar (cut to the room left)."""
    from lanemon.ui.widgets.bench_chart import render_bars

    text = render_bars(["2,000", "8,000"], {"A": [2591.0, 2618.0], "B": [3480.0, 3893.0]}, {}, width, "tok/s",
                       [("B cache hit 8,900", "2,000", 3480.0), ("B cache hit 12,491", "8,000", 3893.0)]).plain
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines) and "…" not in text
    assert sum("◀ cache hit 8,900" in line for line in lines) == 1
    assert sum("◀ cache hit 12,491" in line for line in lines) == 1


def test_a_result_made_before_ratios_shows_the_ratio_the_bench_would_have_carried():
    """``ratios`` missing (a result from before it was carried): the table reads the ratio through the one
    function that makes ``ratios`` (results/prefill.prefill_ratios), not a division of its own."""
    from lanemon.results.prefill import prefill_ratios, ratios_of

    old = result()
    old.ratios = None
    made = prefill_ratios(old.lanes, "A", "B")
    assert made.by_length == {"2000": round(3480 / 2591, 3), "64000": None} and ratios_of(old) == made
    r = rows_by(prefill_table(old, ["A", "B"]))
    assert r["2,000/B"]["B/A ratio"] == f"{made.by_length['2000']:.2f}×" == "1.34×" and r["64K/B"]["B/A ratio"] == "—"
    one = result()
    one.ratios, one.lanes = None, {"A": one.lanes["A"]}
    assert ratios_of(one) is None and "B/A ratio" not in prefill_table(one, ["A"]).labels()
