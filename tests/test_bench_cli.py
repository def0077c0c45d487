"""`lanemon bench ...` from the command line: JSON, tables, bad input, lanes down, Ctrl-C."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from lanemon.recording.reader import Recording
from lanemon.workloads.bench.decode import decode_results

LEVEL_KEYS = {"aggregate_tok_s", "ttft_p50_s", "ttft_p90_s", "ttft_p99_s", "per_stream_tok_s_p50", "errors",
              "requests", "output_tokens", "tokens_estimated", "reps", "min", "median", "max", "unstable"}


def lanemon(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=timeout)


def test_decode_json_is_one_object_with_the_documented_keys():
    out = lanemon("bench", "decode", "--demo", "--time-scale", "0.05", "--levels", "1,2", "--categories",
                  "coding,prose", "--max-tokens", "24", "--json", "--no-record")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)  # exactly one JSON document, nothing else on stdout
    assert out.stdout.count("\n") == 1
    assert set(res) >= {"bench", "lanes", "crossover", "interrupted", "config"}
    assert res["bench"] == "decode" and res["interrupted"] is False
    for lane in ("A", "B"):
        levels = res["lanes"][lane]["levels"]
        assert set(levels) == {"1", "2"}
        assert set(levels["1"]) >= LEVEL_KEYS
        assert set(res["lanes"][lane]["categories"]) == {"coding", "prose"}
        assert set(res["lanes"][lane]["categories"]["coding"]) >= {"per_stream_tok_s", "requests", "errors"}
    assert res["config"]["levels"] == [1, 2] and res["config"]["time_scale"] == 0.05
    assert "recording" not in out.stderr


def test_prefill_and_needles_json():
    # two independent --demo runs (each its own simulators), run side by side: the test reads only their output
    with ThreadPoolExecutor(2) as pool:
        needles = pool.submit(lanemon, "bench", "needles", "--demo", "--time-scale", "0.02", "--lengths", "6000",
                              "--json", "--no-record", "--lanes", "B")
        out = lanemon("bench", "prefill", "--demo", "--time-scale", "0.02", "--lengths", "2k,4000", "--json",
                      "--no-record", "--parallel-lanes")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert res["bench"] == "prefill" and set(res["lanes"]["B"]["lengths"]) == {"2000", "4000"}
    assert set(res["lanes"]["A"]["lengths"]["2000"]) >= {"prompt_tokens", "prefill_tok_s", "ttft_s",
                                                         "cache_hit_tok_s", "reps", "min", "median", "max",
                                                         "unstable", "error"}
    assert res["lanes"]["A"]["lengths"]["2000"]["cache_hit_tok_s"] is None
    out = needles.result()
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    cell = res["lanes"]["B"]["lengths"]["6000"]
    assert set(cell) >= {"found", "key", "answer", "depth", "ttft_s", "prefill_tok_s", "error"}
    assert cell["found"] is True and list(res["lanes"]) == ["B"]


def test_headless_tables_and_recording(tmp_path):
    path = tmp_path / "run.jsonl"
    out = lanemon("bench", "decode", "--demo", "--time-scale", "0.05", "--levels", "1,2", "--categories",
                  "translation", "--max-tokens", "16", "--headless", "--record", str(path))
    assert out.returncode == 0, out.stderr
    assert "decode ladder" in out.stdout and "C2" in out.stdout and "translation" in out.stdout
    assert ("overtakes" in out.stdout) or ("no crossover" in out.stdout)
    assert f"recording saved: {path}" in out.stderr
    rec = Recording(path)
    assert rec.header["command"] == "bench-decode"
    res = decode_results(list(rec.events()))
    assert set(res.lanes) == {"A", "B"} and res.interrupted is False


@pytest.mark.parametrize("args, words", [
    (["decode", "--levels", "0"], "--levels"),
    (["decode", "--levels", "1,x"], "--levels"),
    (["decode", "--categories", "coding,nope"], "--categories: unknown category nope"),
    (["decode", "--reps", "0"], "--reps: must be a whole number in [1, "),
    (["decode", "--max-tokens", "many"], "--max-tokens"),
    (["prefill", "--lengths", "-5"], "--lengths"),
    ([], "choose one of decode, prefill, needles"),
])
def test_bad_input_is_one_line_and_exit_2(args, words, tmp_path):
    out = lanemon("bench", *args, "--demo", "--json", "--no-record") if args else lanemon("bench")
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert words in out.stderr and out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert out.stdout == ""


def test_bad_prompt_file_is_one_line(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('[[prompt]]\nid = "a"\ntext = "x"\n')
    out = lanemon("bench", "decode", "--prompts", str(f), "--demo", "--json", "--no-record")
    assert out.returncode == 2 and "missing field 'category'" in out.stderr and out.stderr.count("\n") == 1


def test_lane_down_at_start_is_one_line_and_exit_1(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = lanemon("bench", "decode", "--lane", f"Z=http://127.0.0.1:{port}/v1", "--json", "--no-record")
    assert out.returncode == 1, out.stderr
    assert out.stderr.count("\n") == 1 and "lane Z" in out.stderr and "refused" in out.stderr
    assert out.stdout == ""


def test_ctrl_c_keeps_finished_cells_and_exits_130(tmp_path):
    path = tmp_path / "cut.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "lanemon", "bench", "decode", "--demo", "--time-scale", "0.05",
                             "--levels", "1,2,3,4,5,6", "--categories", "coding,prose", "--headless",
                             "--record", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if path.exists() and '"phase":"end"' in path.read_text() and '"label":"cell"' in path.read_text():
                break
            time.sleep(0.1)
        else:
            pytest.fail("no cell finished in time")
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted" in stdout and "C1" in stdout  # partial results printed
    assert f"recording saved: {path}" in stderr
    events = list(Recording(path).events())
    res = decode_results(events)
    assert res.interrupted is True
    assert res.lanes["A"].levels["1"].requests == 2 and res.lanes["A"].levels["1"].errors == 0
    end = [e for e in events if e.kind == "mark" and e.data.get("label") == "bench" and e.data["phase"] == "end"]
    assert end and end[-1].data["interrupted"] is True
    assert all(c.get("cell") for c in res.cut)


def test_decode_table_judges_each_level_on_the_steady_figure_with_the_noise_band():
    """▲ only beyond the shared noise band, = for a tie inside it, nothing where lanemon was starved: the
    same judgement as the crossover sentence under the table (and the bench screen)."""
    from rich.console import Console

    from lanemon.cli.bench import render
    from test_ui_bench import steady_bench

    result = decode_results([ev for ev, _ in steady_bench().script()])
    console = Console(width=200, record=True, color_system=None)
    render(result, console)
    rows = {}
    level = None
    text = console.export_text()
    for line in text.splitlines():
        line = line.strip()
        cells = [c.strip() for c in line[1:-1].split("│")] if line.startswith("│") else []
        if len(cells) >= 4 and cells[1][:1] in ("A", "B"):
            level = cells[0] or level
            rows[(level, cells[1][0])] = cells
    assert rows[("C1", "A")][1] == "A ▲" and rows[("C1", "B")][1] == "B"
    assert rows[("C2", "A")][1] == "A =" and rows[("C2", "B")][1] == "B ="  # B +4.5 %: inside the 5 % band
    assert rows[("C3", "B")][1] == "B ▲"
    assert rows[("C4", "A")][1] == "A" and rows[("C4", "B")][1] == "B"  # B's C4 ran while lanemon was starved
    assert rows[("C4", "B")][2].endswith("?") and "? starved" in text  # the legend says what ? means
    b2 = result.lanes["B"].levels["2"]
    assert rows[("C2", "B")][2] == f"{b2.steady_tok_s:,.0f}" and rows[("C2", "B")][3] == f"{b2.aggregate_tok_s:,.0f}"
    assert "B overtakes A between C1 and C3" in text


@pytest.mark.parametrize("width", [80, 100, 160])
def test_result_tables_fit_the_width_and_never_drop_the_lane(width):
    """One table model (reports/tables.py) per result: at 80 and 100 columns every column keeps its width
    (nothing collapses to zero), the lane and the level are always there, every number has its label, and
    what was dropped is named."""
    from rich.console import Console

    from lanemon.cli.bench import render
    from test_ui_bench import steady_bench

    result = decode_results([ev for ev, _ in steady_bench().script()])
    console = Console(width=width, record=True, color_system=None)
    render(result, console)
    text = console.export_text()
    lines = text.splitlines()
    lines = lines[:next(i for i, ln in enumerate(lines) if ln.startswith("└"))]  # the ladder, not the categories
    table = [ln for ln in lines if ln.startswith(("┃", "│"))]
    assert table and all(len(ln) <= width for ln in table)
    head = [c.strip() for c in table[0][1:-1].split("┃")]
    assert head[:3] in (["C", "lane", "steady tok/s"], ["C", "lane", "steady"])
    body = [[c.strip() for c in ln[1:-1].split("│")] for ln in table[1:]]
    assert all(len(r) == len(head) for r in body)
    assert all(r[1] for r in body)  # the lane is never blank
    lead = head.index("Leader") if "Leader" in head else None  # the level's Leader: on its first row, as C
    assert all(c for r in body for j, c in enumerate(r[2:], 2) if j != lead)  # no zero-width (empty) number cell
    assert ("hidden at this width:" in text) == (len(head) < 9)  # 9 columns without --slo, reasoning, chunks
