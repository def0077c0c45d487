"""One figure, one definition, every surface (issue 37, "Done when"; the start: bench decode and load).

For one fresh simulator recording of each, every figure below is read from the headless table, the ``--json``
the run printed, the report's markdown and the history row, and each must equal the catalogue's value -- the
results key the catalogue names (measure/catalogue.py ``json_keys``) -- to the precision shown. A surface finds
its column by the catalogue's label: a table that labels a figure its own way, or a surface that computes it
its own way (history's old fold), fails here."""

from __future__ import annotations

import functools
import json
import subprocess
import sys

import pytest
from rich.console import Console

from lanemon.measure.catalogue import BY_NAME, label
from lanemon.measure.summary import format_figure
from lanemon.reports.tables import rate, secs


def _bench(tmp_path, *args):
    rec = tmp_path / "run.jsonl"
    cmd = [sys.executable, "-m", "lanemon", "bench", *args, "--demo", "--time-scale", "0.02", "--json",
           "--record", str(rec)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), rec


def _headless(result) -> str:
    """What ``--headless`` prints for ``result`` (its --json, read back as its Struct) off a terminal (cli/bench.py
    render on its output console)."""
    from lanemon.cli.bench import render
    from lanemon.cli.common import PIPE_WIDTH
    from lanemon.results.common import as_result
    from lanemon.results.decode import DecodeResult
    from lanemon.results.load import LoadResult

    console = Console(width=PIPE_WIDTH, record=True, color_system=None)
    render(as_result(result, {"decode": DecodeResult, "load": LoadResult}[result["bench"]]), console)
    return console.export_text()


def _rich_rows(text: str) -> list[dict[str, str]]:
    """The first Rich table of ``text`` as dicts by header (a blank cell under C carries the level down)."""
    lines = text.splitlines()
    head_i = next(i for i, ln in enumerate(lines) if ln.startswith("┃"))
    head = [c.strip() for c in lines[head_i][1:-1].split("┃")]
    rows, last = [], {}
    for ln in lines[head_i + 1:]:
        if ln.startswith("└"):
            break
        if ln.startswith("│"):
            row = dict(zip(head, (c.strip() for c in ln[1:-1].split("│"))))
            if "C" in row and not row["C"]:
                row["C"] = last.get("C", "")
            rows.append(row)
            last = row
    return rows


def _md_rows(md: str, must: str) -> list[dict[str, str]]:
    """The markdown table whose header holds ``must`` and ``lane``, as dicts by header."""
    lines = md.splitlines()
    for i, ln in enumerate(lines):
        cells = [c.strip() for c in ln.strip().strip("|").split("|")]
        if ln.startswith("|") and must in cells and "lane" in cells:
            rows, last = [], {}
            for body in lines[i + 2:]:
                if not body.startswith("|"):
                    break
                row = dict(zip(cells, (c.strip() for c in body.strip().strip("|").split("|"))))
                if "C" in row and not row["C"]:
                    row["C"] = last.get("C", "")
                rows.append(row)
                last = row
            return rows
    raise AssertionError(f"no markdown table with {must!r}")


def _find(rows, lane, level=None):
    for r in rows:
        if r["lane"].split()[0] == lane and (level is None or r.get("C") == f"C{level}"):
            return r
    raise AssertionError((lane, level, rows))


@functools.cache
def _report_md(rec) -> str:
    """``lanemon report --format md`` of ``rec``, run once per recording (the module's tests each read one
    figure of the same report)."""
    out = subprocess.run([sys.executable, "-m", "lanemon", "report", str(rec), "--format", "md"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _strip_marks(text: str) -> str:
    return text.replace("?", "").replace("†", "").strip()


@pytest.fixture(scope="module")
def decode_run(tmp_path_factory):
    return _bench(tmp_path_factory.mktemp("decode"), "decode", "--lanes", "A,B", "--levels", "1,2",
                  "--no-categories", "--max-tokens", "32")


@pytest.mark.parametrize("name,stat,key,fmt", [
    ("steady_tok_s", None, "steady_tok_s", rate), ("aggregate_tok_s", None, "aggregate_tok_s", rate),
    ("ttft", "p50", "ttft_p50_s", secs), ("per_stream_tok_s", None, "per_stream_tok_s_p50", rate)])
def test_decode_figures_agree_on_every_surface(decode_run, name, stat, key, fmt):
    from lanemon.monitor.history import summarize_recording

    result, rec = decode_run
    assert key in BY_NAME[name].json_keys  # the catalogue names the key every surface reads
    col = label(name, stat)
    shown = _rich_rows(_headless(result))
    md = _md_rows(_report_md(rec), col)
    history = {(r.lane, r.level): r for r in summarize_recording(rec)}
    hist_field = {"steady_tok_s": "steady_tok_s", "aggregate_tok_s": "tok_s", "ttft": "ttft_p50",
                  "per_stream_tok_s": "decode_tok_s_p50"}[name]
    for lane in ("A", "B"):
        for level in (1, 2):
            value = result["lanes"][lane]["levels"][str(level)][key]
            want = fmt(value)
            assert _strip_marks(_find(shown, lane, level)[col]).split(" est.")[0] == want, ("headless", lane, level)
            assert _strip_marks(_find(md, lane, level)[col]).split(" est.")[0] == want, ("report", lane, level)
            row = history[(lane, str(level))]
            assert format_figure(hist_field, getattr(row, hist_field)).startswith(want), ("history", lane, level)


@pytest.fixture(scope="module")
def load_run(tmp_path_factory):
    return _bench(tmp_path_factory.mktemp("load"), "load", "--lanes", "A", "--arrival", "constant", "--rate", "10",
                  "--duration", "3", "--warmup", "1", "--seed", "2", "--output-len", "fixed:8", "--workers", "1")


@pytest.mark.parametrize("name,stat,key,fmt,hist_field", [
    ("served_tok_s", None, ("output_tok_s",), rate, "tok_s"),
    ("ttft", "p50", ("ttft_s", "p50"), secs, "ttft_p50"),
    ("tpot", "p50", ("tpot_s", "p50"), secs, "tpot_p50"),
    ("measured", None, ("measured",), str, "measured")])
def test_load_figures_agree_on_every_surface(load_run, name, stat, key, fmt, hist_field):
    from lanemon.monitor.history import summarize_recording

    result, rec = load_run
    assert key[0] in BY_NAME[name].json_keys
    col = label(name, stat)
    value = result["lanes"]["A"]["reps"][0]
    for k in key:
        value = value[k]
    want = fmt(value)
    assert _find(_rich_rows(_headless(result)), "A")[col] == want
    assert _find(_md_rows(_report_md(rec), col), "A")[col] == want
    (row,) = summarize_recording(rec)
    got = getattr(row, hist_field)
    assert (str(got) if hist_field == "measured" else format_figure(hist_field, got)).startswith(want)
    assert row.requests == result["lanes"]["A"]["reps"][0]["requests"]  # the rep's own: warm-up included


def test_tokens_per_joule_counts_the_same_tokens_in_decode_load_and_race_on_a_thinking_lane(tmp_path):
    """Issue 37: on a thinking lane decode counted answer tokens only and load counted reasoning too, both
    labelled "output tokens". The catalogue's rule (tokens_per_joule): every generated token, reasoning
    included -- what the simulator's usage.completion_tokens and vLLM's generation_tokens count."""
    from lanemon.sim.server import SimThread

    with SimThread("sglang-native", time_scale=0.2, gpu_telemetry_port=0, thinking=True,
                   reasoning_tokens=32) as sim:
        lane = ["--lane", f"A={sim.base_url}", "--telemetry", f"A={sim.telemetry_url}", "--cost", "A=3.5",
                "--json", "--no-record", "--thinking", "on"]
        runs = {
            "decode": ["bench", "decode", "--levels", "2", "--no-categories", "--max-tokens", "64", *lane],
            "load": ["bench", "load", "--arrival", "constant", "--rate", "4", "--duration", "3", "--seed", "1",
                     "--output-len", "fixed:48", *lane],
            "race": ["race", "--max-tokens", "64", *lane]}
        out = {}
        for name, args in runs.items():
            p = subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True,
                               timeout=180)
            assert p.returncode == 0, (name, p.stderr)
            out[name] = json.loads(p.stdout)
    cell = out["decode"]["lanes"]["A"]["levels"]["2"]
    rep = out["load"]["lanes"]["A"]["reps"][0]
    race = out["race"]["races"][0]["lanes"]["A"]
    # the lane thought: answer tokens alone are fewer than the generated ones
    assert cell["reasoning_tokens"] and race["generated_tokens"] > race["output_tokens"]
    assert rep["reasoning_tok_s"] and rep["reasoning_tok_s"] > 0
    for name, entry, generated in (("decode", cell, cell["output_tokens"] + cell["reasoning_tokens"]),
                                   ("load", rep, rep["served_tokens"]),
                                   ("race", race, race["generated_tokens"])):
        # $/1M needs no energy (never withheld for a busy machine's sparse readings): the same token count
        # (--json rounds the window to the millisecond: a race's window of ~0.2 s is 0.25 % off by that alone)
        seconds = entry["energy_window_s"]
        assert entry["usd_per_1m_output_tokens"] == pytest.approx(3.5 * seconds / 3600 / generated * 1e6,
                                                                  rel=2e-3 + 5e-4 / seconds), name
        if entry["energy_j"] is not None:  # withheld when the readings were too sparse for its window
            assert entry["tokens_per_joule"] == pytest.approx(generated / entry["energy_j"], rel=2e-3), name
    assert "reasoning included" in BY_NAME["tokens_per_joule"].definition
    assert "reasoning included" in BY_NAME["usd_per_1m"].definition
