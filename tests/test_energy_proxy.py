"""Issue 38's done-when against the simulator: `bench decode` with the simulated lane's exporter behind a proxy
that does what real exporters do (tests/exporter_proxy.py) -- collects every 30 s, every 5 s, drops the energy
counter, resets it mid-cell, wraps it.  Every cell's energy is within 10 % of the simulator's exact energy
(and within the uncertainty it states) or withheld with a reason, never 0.0 J; the level called most efficient
is the most efficient in truth."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from exporter_proxy import ExporterProxy
from lanemon.measure.energy import cell_windows
from lanemon.measure.records import assemble
from lanemon.reports.sections.efficiency import best_levels
from typed_cells import typed_levels
from lanemon.sim.gpu import energy_between

NS = 1_000_000_000

MODES = {  # mode: (proxy arguments, what every cell must show)
    "30s": ({"every": 30.0}, "withheld"),
    "5s": ({"every": 5.0}, None),
    "power-only": ({"counter": "drop"}, None),
    "reset": ({"counter": "reset"}, "counter+power"),
    "wrap": ({"counter": "wrap"}, "counter+power"),
}


def _run_mode(mode: str, base) -> tuple:
    """One mode's `bench decode` behind its proxy: (the CLI's result, the simulator's GPU history, its trace by
    request id, when the proxy reset or wrapped the counter, the recording)."""
    from lanemon.sim.server import SimThread

    kw, _ = MODES[mode]
    rec = base / f"{mode}.jsonl"
    with SimThread("tensorfold-exl3", time_scale=0.5, gpu_telemetry_port=0) as sim, \
            ExporterProxy(sim.telemetry_url, **kw) as proxy:
        out = subprocess.run(
            [sys.executable, "-m", "lanemon", "bench", "decode", "--lane", f"A={sim.base_url}",
             "--telemetry", f"A={proxy.url}", "--levels", "1,4", "--categories", "coding,prose,reasoning", "--no-categories",
             "--max-tokens", "160", "--json", "--record", str(rec)], capture_output=True, text=True, timeout=300)
        truth = httpx.get(sim.root_url + "/sim/gpu").json()
        trace = {r["id"]: r for r in httpx.get(sim.root_url + "/sim/trace").json()["requests"]}
    return out, truth, trace, proxy.triggered_at, rec


TOGETHER = [("30s", "5s", "power-only"), ("reset",), ("wrap",)]
"""Modes run side by side.  30s, 5s and power-only check that a cell shorter than the exporter's update is
withheld with its reason (their cells are, alone or side by side: 2.5 and 5.2 s against updates 5-30 s apart;
measured alone on a quiet machine their uncertainty is +-50-80 J of 64-257 J).  The counter faults are measured
to about 2.5 J alone; side by side (even two) their C1 cell was withheld (+-10 J), so each runs alone."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple]:
    """Every mode's run: each its own simulator, proxy and lanemon process, judged against its own simulator's
    truth.  Each mostly waits on its simulator's token pacing and its proxy's real cadence, so the modes of a
    group run at once (about as long as one)."""
    base = tmp_path_factory.mktemp("energy")
    out: dict[str, tuple] = {}
    for group in TOGETHER:
        with ThreadPoolExecutor(len(group)) as pool:
            out.update(zip(group, pool.map(lambda m: _run_mode(m, base), group)))
    return out


@pytest.mark.slow
@pytest.mark.timeout(300)  # the first test also waits for the module's runs
@pytest.mark.parametrize("mode", list(MODES))
def test_bench_decode_energy_behind_a_real_exporters_cadence_and_faults(mode, runs):
    from lanemon.recording.reader import read_events

    _, expect = MODES[mode]
    out, truth, trace, triggered_at, rec = runs[mode]
    assert out.returncode == 0, out.stderr
    levels = json.loads(out.stdout)["lanes"]["A"]["levels"]
    _, events, _ = read_events(rec)
    # the session clock against the simulator's (both perf_counter on this machine): a request's send as lanemon
    # stamped it and its arrival in the trace are the same instant within a loopback hop
    offsets = sorted(trace[r.server_request_id]["t_arrival_mono"] - r.sent_ns / NS
                     for r in assemble(events) if r.server_request_id in trace and r.sent_ns is not None)
    offset = offsets[len(offsets) // 2]
    cells = {str(c.level): c for c in cell_windows(events).values()}
    true_tpj = {}
    for level, cell in levels.items():
        c = cells[level]
        true_j = energy_between(truth["history"], c.t0 / NS + offset, c.t1 / NS + offset)
        true_tpj[int(level)] = cell["output_tokens"] / true_j
        if cell["energy_j"] is None:
            assert cell["energy_reason"] and cell["tokens_per_joule"] is None, (mode, level, cell)
            continue
        assert expect != "withheld", (mode, level, cell)
        assert cell["energy_j"] > 0 and cell["energy_j"] == pytest.approx(true_j, rel=0.10), (mode, level, cell, true_j)
        assert abs(cell["energy_j"] - true_j) <= cell["energy_uncertainty_j"] + 0.5, (mode, level, cell, true_j)
        if expect == "counter+power" and triggered_at is not None \
                and c.t0 / NS + offset < triggered_at < c.t1 / NS + offset:
            assert cell["energy_source"] == "counter+power" and cell["energy_note"], cell
    if expect == "withheld":
        assert all("update" in cell["energy_reason"] and "-c 1000" in cell["energy_reason"] for cell in levels.values()), levels
    best, _ = best_levels(typed_levels({int(k): v for k, v in levels.items()}))
    # the claim is about the levels lanemon judged: a starved (unreliable, client-bound) cell is not judged
    # (best_levels), so the truth is read over the judged levels too.  Under heavy load a cell marked client-bound
    # left the judgement while its truth stayed in this comparison, so the one level judged was held against the
    # starved level's truth.  With every cell judged (a quiet machine) this is the whole comparison, as before.
    judged = {lvl: tpj for lvl, tpj in true_tpj.items() if not levels[str(lvl)].get("unreliable")}
    if best is not None:
        assert best in judged and max(judged, key=judged.get) == best, (mode, best, true_tpj, levels)
    if expect == "counter+power":
        assert triggered_at is not None  # the counter did fall during the run
