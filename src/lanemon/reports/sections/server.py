"""Where the time goes: each lane's own latency histograms beside lanemon's, per bench (measure/server.py)."""

from __future__ import annotations

from typing import Any

from lanemon.reports.format import secs
from lanemon.reports.sections.section import Section

BENCHES = ("decode", "prefill", "needles", "load", "sweep")


def server_section(analysis: dict[str, Any], lanes: list[str]) -> Section | None:
    """One row per bench and lane whose results carry a ``server`` block; None when none does."""
    rows = []
    for bench in BENCHES:
        result = analysis.get(bench) or {}
        by_lane = result.get("lanes") if isinstance(result, dict) else None
        if not isinstance(by_lane, dict):
            continue
        for name in [n for n in lanes if n in by_lane] + [n for n in by_lane if n not in lanes]:
            s = (by_lane.get(name) or {}).get("server") if isinstance(by_lane.get(name), dict) else None
            if not isinstance(s, dict):
                continue
            rows.append([bench, name, str(s.get("engine") or "?"),
                         f"{s.get('requests')} / {s.get('client_requests')}",
                         secs(s.get("queue_s")), secs(s.get("prefill_s")), secs(s.get("decode_s")),
                         secs(s.get("ttft_s")), secs(s.get("client_ttft_s")), secs(s.get("gap_ttft_s")),
                         secs(s.get("e2e_s")), secs(s.get("client_e2e_s")), secs(s.get("gap_e2e_s"))])
    if not rows:
        return None
    headers = ["Bench", "Lane", "Engine", "Requests (server / lanemon)", "Queue", "Prefill", "Decode",
               "Server TTFT", "lanemon TTFT", "TTFT gap", "Server E2E", "lanemon E2E", "E2E gap"]
    notes = ["Server figures are the engine's own histograms (mean = Δsum / Δcount between the first and the "
             "last /metrics scrape of the run); lanemon's are the requests it saw finish in the same interval. "
             "The gap is HTTP, the API server, detokenising and the network."]
    return Section("server", "Where the time goes: the engine's view beside lanemon's",
                   "Means per request over the same interval.", headers, rows, notes=notes)
