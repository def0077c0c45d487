"""``export --requests`` flags a request ``client_bound`` by the rule the bench counts its cell's ``client_bound``
with (issue 37: 0 of 74 rows flagged on recordings whose bench counted 56 of 72): summed per cell, the export's
flags are the bench's own count."""

from __future__ import annotations

import csv
import json
import io
import subprocess
import sys
from collections import Counter
from pathlib import Path

from lanemon.reports.analyse import analyze

SAMPLE = Path(__file__).resolve().parents[1] / "sample_sessions" / "decode.jsonl"


def _export_csv(path: Path) -> list[dict[str, str]]:
    out = subprocess.run([sys.executable, "-m", "lanemon", "export", "--requests", str(path), "--format", "csv"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return list(csv.DictReader(io.StringIO(out.stdout)))


def test_export_flags_client_bound_requests_as_the_bench_counts_them():
    rows = _export_csv(SAMPLE)
    flagged: Counter[tuple[str, str]] = Counter()
    for r in rows:
        cell = json.loads(r["meta"]).get("cell") if r["meta"] else None
        if "client_bound" in r["flags"].split() and cell:
            lane, kind, _rep = cell.split("/")
            flagged[(lane, kind)] += 1
    decode = analyze(SAMPLE).decode
    assert decode is not None
    bench: Counter[tuple[str, str]] = Counter()
    for lane, d in decode.lanes.items():
        for level, c in d.levels.items():
            bench[(lane, f"C{level}")] += int(c.client_bound or 0)
        for cat, c in d.categories.items():
            bench[(lane, f"cat:{cat}")] += int(c.client_bound or 0)
    bench = +bench  # the cells with any
    assert sum(bench.values()) > 0  # the sample was recorded while lanemon was starved at one level
    assert flagged == bench
