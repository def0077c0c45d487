"""Where the time goes: each lane's own latency histograms beside lanemon's, per bench (measure/server.py)."""

from __future__ import annotations

from typing import Any

from lanemon.reports.format import clip, secs
from lanemon.reports.sections.section import Section

BENCHES = ("decode", "prefill", "needles", "load", "sweep")


def server_section(analysis: dict[str, Any], lanes: list[str]) -> Section | None:
    """One row per bench and lane whose results carry a ``server`` block; None when none does."""
    rows = []
    reasons: list[str] = []
    for bench in BENCHES:
        result = analysis.get(bench) or {}
        by_lane = result.get("lanes") if isinstance(result, dict) else None
        if not isinstance(by_lane, dict):
            continue
        for name in [n for n in lanes if n in by_lane] + [n for n in by_lane if n not in lanes]:
            s = (by_lane.get(name) or {}).get("server") if isinstance(by_lane.get(name), dict) else None
            if not isinstance(s, dict):
                continue
            def gap(key: str, s: dict = s) -> str:
                return "withheld" if s.get(key) is None and s.get("gap_reason") else secs(s.get(key))

            rows.append([bench, name, str(s.get("engine") or "?"),
                         f"{s.get('requests')} / {s.get('client_requests')}"
                         + (f" ({s['restarts']} restart{'s' if s['restarts'] != 1 else ''})" if s.get("restarts") else ""),
                         secs(s.get("queue_s")), secs(s.get("prefill_s")), secs(s.get("decode_s")),
                         secs(s.get("ttft_s")), secs(s.get("client_ttft_s")), gap("gap_ttft_s"),
                         secs(s.get("e2e_s")), secs(s.get("client_e2e_s")), gap("gap_e2e_s")])
            if s.get("gap_reason"):
                reasons.append(f"{bench} {name}: gaps withheld: {clip(str(s['gap_reason']), 240)}")
            if s.get("restarts"):
                reasons.append(f"{bench} {name}: the engine restarted {s['restarts']} time(s) "
                               f"({(s.get('reset_at') or [{}])[-1].get('reason') or 'a counter fell'}); "
                               f"the {secs(s.get('excluded_s'))} between the scrapes around each restart are compared "
                               "on neither side")
    if not rows:
        return None
    headers = ["Bench", "Lane", "Engine", "Requests (server / lanemon)", "Queue", "Prefill", "Decode",
               "Server TTFT", "lanemon TTFT", "TTFT gap", "Server E2E", "lanemon E2E", "E2E gap"]
    notes = ["Server figures are the engine's own histograms (mean = Δsum / Δcount over the intervals between "
             "successive /metrics scrapes, one taken at every cell edge); lanemon's are the requests it saw finish "
             "in the same intervals. Where both count the same requests, the gap is HTTP, the API server, "
             "detokenising and the network; where the engine counted requests lanemon did not send (another "
             "client) the gap is withheld."] + reasons
    return Section("server", "Where the time goes: the engine's view beside lanemon's",
                   "Means per request over the same interval.", headers, rows, notes=notes)
