"""The speed benches' results are typed (issue 37 item 2): ``decode_results``, ``prefill_results`` and
``needle_results`` return their Structs (lanemon.results), and what ``--json`` prints is exactly that Struct's JSON:
it decodes strictly into the Struct and equals ``to_json_obj`` of the result computed again from the run's own
recording (with the engine views attached, as the run's ``results()`` does)."""

from __future__ import annotations

import json
import subprocess
import sys

import msgspec
import pytest

from lanemon.measure.views import attach_engine_views
from lanemon.recording.reader import Recording
from lanemon.results.common import UNSET, to_json_obj
from lanemon.results.decode import DecodeCategoryCell, DecodeCell, DecodeResult
from lanemon.results.needles import NeedleCell, NeedleResult
from lanemon.results.prefill import PrefillCell, PrefillResult
from lanemon.workloads.bench.decode import decode_results
from lanemon.workloads.bench.needles import needle_results
from lanemon.workloads.bench.prefill import prefill_results

LANEMON = [sys.executable, "-m", "lanemon"]

CASES = {
    "decode": (["--levels", "1,2", "--categories", "coding,prose", "--max-tokens", "16", "--slo", "ttft=1",
                "--cost", "A=3"], decode_results, DecodeResult),
    "prefill": (["--lengths", "256,1024,9000", "--max-context", "4096", "--reps", "2", "--seed", "3", "--slo",
                 "ttft=1", "--cost", "A=3"], prefill_results, PrefillResult),
    "needles": (["--lengths", "512,9000", "--max-context", "4096", "--seed", "3"], needle_results, NeedleResult),
}


@pytest.mark.parametrize("kind", list(CASES))
def test_json_is_the_typed_result_of_the_runs_own_recording(kind, tmp_path):
    args, fn, cls = CASES[kind]
    path = tmp_path / f"{kind}.jsonl"
    out = subprocess.run([*LANEMON, "bench", kind, "--demo", "--time-scale", "0.02", "--lanes", "A,B", *args,
                          "--json", "--record", str(path)], capture_output=True, text=True, timeout=240)
    assert out.returncode in (0, 1), out.stderr  # prefill/needles: a length beyond the context exits 1
    printed = json.loads(out.stdout)
    strict = msgspec.json.decode(out.stdout.encode(), type=cls, strict=True)  # every key named, every type right
    events = list(Recording(path).events())
    result = fn(events)
    assert type(result) is cls
    again = attach_engine_views(result, events)
    assert again is result and type(result) is cls
    assert to_json_obj(result) == printed
    assert strict == result  # the same Struct, field by field
    # the keys --json always carried are there even as null, and a cell beyond the context keeps its few keys
    if kind == "decode":
        cell = result.lanes["A"].levels["1"]
        assert isinstance(cell, DecodeCell) and cell.goodput is not None and cell.goodput.total == cell.requests
        assert isinstance(result.lanes["A"].categories["coding"], DecodeCategoryCell)
        assert "crossover" in printed and "error" in printed["lanes"]["A"]["levels"]["1"]
        assert "reasoning_tokens" in printed["lanes"]["B"]["categories"]["prose"]
        assert cell.energy_j is not UNSET and "energy_j" in printed["lanes"]["A"]["levels"]["1"]  # attached
        assert "energy_j" not in to_json_obj(decode_results(events).lanes["A"].levels["1"])  # not before
    elif kind == "prefill":
        cell = result.lanes["A"].lengths["9000"]
        assert isinstance(cell, PrefillCell) and cell.skipped is True and cell.prefill_tok_s is None
        assert "prefill_tok_s" in printed["lanes"]["A"]["lengths"]["9000"]  # null, but said
        assert result.ratios is not None and result.ratios.compared == ["A", "B"]
        assert len(result.lanes["B"].lengths["1024"].reps) == 2
    else:
        cell = result.lanes["B"].lengths["9000"]
        assert isinstance(cell, NeedleCell) and cell.skipped is True and cell.runs is UNSET
        said = printed["lanes"]["B"]["lengths"]["9000"]
        assert {"found", "skipped", "error", "runs_count", "found_count"} <= set(said) and said["found"] is None
        assert not {"key", "answer", "ttft_s", "reps", "median"} & set(said)  # a length not sent has no figures
        assert "runs" not in printed["lanes"]["B"]["lengths"]["9000"]
        assert result.lanes["B"].lengths["512"].runs[0].key == result.lanes["B"].lengths["512"].key
