"""Output that is not a terminal is whole (issue 37 item 6): ``--headless`` to a file or a pipe prints every column
(``--width N`` cuts), and every table the report has for a run is printed by the headless command too."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

DEMO = [sys.executable, "-m", "lanemon", "bench"]


def _run(*args: str, record=None) -> str:
    cmd = [*DEMO, *args, "--demo", "--time-scale", "0.02", "--headless"]
    cmd += ["--record", str(record)] if record else ["--no-record"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)  # stdout is a pipe
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_output_console_is_wide_off_a_terminal_and_cut_with_width():
    from lanemon.cli.common import PIPE_WIDTH, output_console

    assert output_console(None, terminal=False).width == PIPE_WIDTH
    assert output_console(60, terminal=False).width == 60
    assert output_console(60, terminal=True).width == 60


@pytest.fixture(scope="module")
def load_out(tmp_path_factory):
    rec = tmp_path_factory.mktemp("load") / "load.jsonl"
    args = ["load", "--lanes", "A,B", "--cost", "A=3.5", "--rate", "8", "--duration", "2", "--output-len",
            "fixed:8", "--workers", "1"]
    with ThreadPoolExecutor(2) as pool:  # two independent --demo runs (each its own simulators), side by side
        cut = pool.submit(_run, *args, "--width", "60")
        return _run(*args, record=rec), cut.result(), rec


def test_load_to_a_pipe_prints_every_column_and_width_cuts(load_out):
    whole, cut, _ = load_out
    assert "hidden at this width" not in whole
    for label in ("sched req/s", "sent req/s", "$/1M tok", "send lag p99"):
        assert label in whole, label
    assert "hidden at this width" in cut


def test_sweep_headless_prints_the_reports_energy_and_cost_table(tmp_path):
    rec = tmp_path / "sweep.jsonl"
    out = _run("sweep", "--lanes", "A", "--cost", "A=3.5", "--max-level", "2", "--max-tokens", "16", record=rec)
    from lanemon.reports.analyse import analyze
    from lanemon.reports.sections import sections

    titles = {s.key: s for s in sections(analyze(rec))}
    assert "efficiency" in titles  # the report of the same recording has it
    assert "energy and cost per level" in out
    assert "A $/1M tok" in out


def test_decode_energy_table_header_is_whole():
    out = _run("decode", "--lanes", "A,B", "--cost", "A=3.5", "--cost", "B=2", "--levels", "1", "--no-categories",
               "--max-tokens", "16")
    assert "Concurrency" in out and "Conc…" not in out
