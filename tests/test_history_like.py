"""History compares like with like and stores the workload's own result (issue 37 items 8 and 2): a row says
what makes it comparable, trends and shift flags compare only comparable rows, levels sort as numbers, every
figure has its unit, the usage probe is no workload row, and a bench row's figures are the bench's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from lanemon.measure.summary import LaneSummary, comparable_key, format_figure, trend_groups

SAMPLES = Path(__file__).resolve().parents[1] / "sample_sessions"


@pytest.fixture(scope="module")
def decode_rows():
    from lanemon.monitor.history import summarize_recording

    return summarize_recording(SAMPLES / "decode.jsonl")


def test_the_usage_probe_and_calibration_are_no_workload_rows(decode_rows):
    from lanemon.monitor.history import summarize_recording

    assert {r.workload for r in decode_rows} == {"decode"}
    assert all(r.level != "calibrate" for r in summarize_recording(SAMPLES / "prefill.jsonl"))
    assert {r.workload for r in summarize_recording(SAMPLES / "races.jsonl")} == {"race"}


def test_decode_rows_carry_the_benchs_own_figures(decode_rows):
    from lanemon.reports.analyse import analyze

    decode = analyze(SAMPLES / "decode.jsonl", benches=["decode"]).decode
    seen = 0
    for r in decode_rows:
        cell = decode.lanes[r.lane].levels[r.level]
        assert r.tok_s == pytest.approx(cell.aggregate_tok_s, abs=0.01)
        assert r.steady_tok_s == pytest.approx(cell.steady_tok_s, abs=0.01) if cell.steady_tok_s \
            else r.steady_tok_s is None
        assert r.ttft_p50 == pytest.approx(cell.ttft_p50_s, abs=1e-6)
        assert r.decode_tok_s_p50 == pytest.approx(cell.per_stream_tok_s_p50, abs=0.01)
        assert r.requests == cell.requests  # the level's requests, not the C1 category phase's too
        assert r.basis == "decode results"
        seen += 1
    assert seen == 12


def test_a_row_records_what_makes_it_comparable(decode_rows):
    r = decode_rows[0]
    assert r.api == "completions" and r.prompt_set == "lanemon-bench@1" and r.simulated
    assert r.time_scale is not None
    k = comparable_key(r)
    assert k == comparable_key(msgspec.structs.replace(r, session="other.jsonl", started_s=1.0))
    assert k != comparable_key(msgspec.structs.replace(r, time_scale=1.0 if r.time_scale != 1.0 else 0.1))
    assert k != comparable_key(msgspec.structs.replace(r, max_tokens=(r.max_tokens or 0) + 1))
    assert k != comparable_key(msgspec.structs.replace(r, simulated=not r.simulated))


def _row(session, level="C1", ttft=0.1, time_scale=1.0, t=0.0):
    return LaneSummary(session=session, lane="A", workload="decode", level=level, started_s=t, ttft_p50=ttft,
                       time_scale=time_scale, api="completions")


def test_the_shift_flag_compares_only_comparable_rows():
    from lanemon.cli.history import render

    rows = [_row(f"s{i}", t=i) for i in range(4)] + [_row("fast", ttft=0.9, time_scale=0.1, t=9)]
    text = render(rows, "ttft_p50")
    assert "SHIFT" not in text  # the 0.1-time-scale run is its own series, not a shift of the real-time ones
    assert len(trend_groups(rows)) == 2
    same = rows[:4] + [_row("slow", ttft=0.9, t=9)]
    assert "SHIFT" in render(same, "ttft_p50")


def test_levels_sort_as_numbers_and_figures_have_units():
    from lanemon.cli.history import render

    rows = [_row("s", level=lv) for lv in ("2000", "32000", "64000", "8000")]
    assert [k[2] for k in trend_groups(rows)] == ["2000", "8000", "32000", "64000"]
    text = render(rows, "ttft_p50")
    trend = text.split("trend of")[1]
    assert trend.index(" 8000") < trend.index(" 32000")
    assert "latest 100 ms" in trend
    assert format_figure("tok_s", 1558.7) == "1,559 tok/s"
    assert format_figure("goodput_rps", 4.24) == "4.24 req/s"
    assert format_figure("slo_attainment", 0.5) == "50 %"
    assert format_figure("requests", 72) == "72 requests"


def test_load_rows_are_the_measured_window_not_the_warmup(tmp_path):
    from lanemon.monitor.history import summarize_recording

    rec = tmp_path / "load.jsonl"
    cmd = [sys.executable, "-m", "lanemon", "bench", "load", "--demo", "--time-scale", "0.02", "--lanes", "A",
           "--arrival", "constant", "--rate", "10", "--duration", "3", "--warmup", "1", "--seed", "3",
           "--output-len", "fixed:8", "--slo", "ttft=5", "--workers", "1", "--json", "--record", str(rec)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)["lanes"]["A"]["reps"][0]
    (row,) = summarize_recording(rec)
    assert row.workload == "load" and row.basis == "load results"
    assert row.measured == rep["measured"] < 30  # the measured window: the warm-up's requests are not in it
    assert row.requests == rep["requests"] > rep["measured"]  # the rep's own requests: the warm-up's too
    assert row.complete == rep["ok"] and row.error == rep["errors"]  # over the measured window, as the rep's
    assert row.ttft_p50 == pytest.approx(rep["ttft_s"]["p50"], abs=1e-6)
    assert row.tok_s == pytest.approx(rep["output_tok_s"], abs=0.01)
    assert row.goodput_rps == pytest.approx(rep["slo"]["goodput_rps"], abs=1e-6)
    assert row.level == "10 req/s"
