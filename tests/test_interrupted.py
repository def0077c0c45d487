"""An interrupted run says so, naming what did not run: results, report, compare, export (issue 25 item 1)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from lanemon.cli.main import main
from lanemon.recording.reader import read_events as _read
from lanemon.reports.analyse import analyze
from lanemon.reports.compare import compare
from lanemon.reports.export import interruptions, request_rows
from lanemon.results.common import RunState, to_json_obj
from lanemon.workloads.bench.run import interruption_text, not_run, read_marks

SAMPLE = "sample_sessions/decode.jsonl"


def read_events(path):
    return _read(path)[1]


def _cut_recording(tmp_path, *, plan=True):
    """The sample decode session cut as Ctrl-C would cut it: A/C1 finished, A/C2 started and never ended,
    the end mark interrupted; the start mark given the plan a live run now records (A C1-C3, B C1-C3)."""
    lines = open(SAMPLE, encoding="utf-8").read().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        ev = json.loads(line)
        d = ev.get("data") or {}
        if ev["kind"] == "mark" and d.get("label") == "bench" and d.get("phase") == "start" and plan:
            d["plan"] = [{"lane": lane, "cell": f"{lane}/C{c}/r0"} for lane in "AB" for c in (1, 2, 3)]
        out.append(json.dumps(ev))
        if ev["kind"] == "mark" and d.get("label") == "cell" and d.get("phase") == "start" and d.get("cell") == "A/C2/r0":
            break
    end = {"t": json.loads(out[-1])["t"] + 1, "kind": "mark",
           "data": {"label": "bench", "bench": "decode", "phase": "end", "interrupted": True,
                    "cut": [{"cell": "A/C2/r0", "part": "level", "level": 2, "rep": 0, "lane": "A"}]}}
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(out + [json.dumps(end)]) + "\n", encoding="utf-8")
    return path


WORDS = "decode run interrupted after 1 of 6 cells: lane B never ran; cells 3–6 not run; cut mid-cell: A/C2/r0"


def test_not_run_names_lanes_cells_and_the_cut_one(tmp_path):
    marks = read_marks(read_events(_cut_recording(tmp_path)), "decode")
    nr = not_run(marks)
    assert to_json_obj(nr) == {"planned": 6, "finished": 1, "cut": ["A/C2/r0"],
                               "cells": ["A/C3/r0", "B/C1/r0", "B/C2/r0", "B/C3/r0"], "ranges": [[3, 6]], "lanes": ["B"]}
    assert interruption_text("decode", RunState(interrupted=True, cut=[], not_run=nr)) == WORDS
    assert interruption_text("decode", RunState(interrupted=False, cut=[], not_run=nr)) is None
    # a result read back as JSON (a report's analysis) says the same
    assert interruption_text("decode", {"interrupted": True, "not_run": to_json_obj(nr)}) == WORDS


def test_without_a_plan_it_still_names_the_lane_that_never_ran(tmp_path):
    a = analyze(_cut_recording(tmp_path, plan=False))
    assert a.warnings[0] == "decode run interrupted after 1 finished cell: lane B never ran; cut mid-cell: A/C2/r0"


def test_report_leads_with_it_in_every_format(tmp_path, capsys):
    rec = _cut_recording(tmp_path)
    a = analyze(rec)
    assert a.decode.interrupted and a.warnings[0] == WORDS
    for fmt in ("md", "html"):
        assert main(["report", str(rec), "--format", fmt]) == 0
        out = capsys.readouterr().out
        first_verdict = out.index("Decode run interrupted")
        assert first_verdict < out.index("Decode on A"), fmt  # before any figure's sentence
    assert main(["report", str(rec), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows and all(r["run_interrupted"] == "true" for r in rows if r["bench"] == "decode")


def test_compare_and_export_say_so(tmp_path, capsys):
    rec = _cut_recording(tmp_path)
    r = compare(analyze(rec), analyze(SAMPLE))
    assert r.interrupted == ["old: " + WORDS] and not any("interrupted" in w for w in r.warnings)
    assert r.lead[0] == "INTERRUPTED old: " + WORDS
    assert main(["compare", str(rec), SAMPLE]) == 0
    assert capsys.readouterr().out.lstrip().startswith("SIMULATED")  # then the headline
    events = read_events(rec)
    assert interruptions(events) == [WORDS]
    rows = request_rows(events)
    bench_rows = [row for row in rows if row["bench"] == "decode"]
    assert bench_rows and all(row["run_interrupted"] for row in bench_rows)
    assert all(row["server_request_id"] for row in rows)  # the simulator sends one for every request
    assert main(["export", str(rec)]) == 0  # --requests is the default
    err = capsys.readouterr().err
    assert WORDS in err


def test_a_whole_run_says_nothing():
    a = analyze(SAMPLE)
    assert not a.decode.interrupted and a.decode.not_run is None
    assert not any("interrupted" in w for w in a.warnings)
    assert interruptions(read_events(SAMPLE)) == []
