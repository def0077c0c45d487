"""Where the time goes: each lane's own latency histograms beside lanemon's, per bench (measure/server.py)."""

from __future__ import annotations

from lanemon.measure.catalogue import NOT_MEASURED, label
from lanemon.reports.format import clip, secs
from lanemon.reports.sections.section import Section
from lanemon.results.analysis import Analysis
from lanemon.results.common import as_result
from lanemon.results.server import ServerView

BENCHES = ("decode", "prefill", "needles", "load", "sweep")
FIGURES = ("engine_requests", "view_requests", "engine_restarts", "server_queue", "server_prefill", "server_decode",
           "server_ttft", "view_ttft", "gap_ttft", "server_e2e", "view_e2e", "gap_e2e")
"""The table's figures, in order: catalogue entries, each a key of the lane's ``server`` block (ServerView)."""


def _count(n: int | None) -> str:
    return NOT_MEASURED if n is None else str(n)


def server_section(analysis: Analysis, lanes: list[str]) -> Section | None:
    """One row per bench and lane whose results carry a ``server`` block; None when none does."""
    rows = []
    reasons: list[str] = []
    for bench in BENCHES:
        result = analysis.bench(bench)
        if result is None:
            continue
        by_lane = result.lanes
        for name in [n for n in lanes if n in by_lane] + [n for n in by_lane if n not in lanes]:
            if by_lane[name].server is None:
                continue
            s = as_result(by_lane[name].server, ServerView)  # the lane's block (a dict in a result not yet typed)
            rows.append([bench, name, str(s.engine or "?"), _count(s.requests), _count(s.client_requests),
                         _count(s.restarts), secs(s.queue_s), secs(s.prefill_s), secs(s.decode_s),
                         secs(s.ttft_s), secs(s.client_ttft_s), secs(s.gap_ttft_s),
                         secs(s.e2e_s), secs(s.client_e2e_s), secs(s.gap_e2e_s)])
            if s.gap_reason:
                reasons.append(f"{bench} {name}: gaps withheld: {clip(s.gap_reason, 240)}")
            if s.restarts:
                last = s.reset_at[-1].reason if s.reset_at else None
                reasons.append(f"{bench} {name}: the engine restarted {s.restarts} time(s) "
                               f"({last or 'a counter fell'}); "
                               f"the {secs(s.excluded_s)} between the scrapes around each restart are compared "
                               "on neither side")
    if not rows:
        return None
    headers = ["Bench", "Lane", "Engine", *(label(n) for n in FIGURES)]  # the catalogue's labels
    notes = ["Server figures are the engine's own histograms (mean = Δsum / Δcount over the intervals between "
             "successive /metrics scrapes, one taken at every cell edge); lanemon's are the requests it saw finish "
             "in the same intervals. Where both count the same requests, the gap is HTTP, the API server, "
             "detokenising and the network; where the engine counted requests lanemon did not send (another "
             "client) the gap is withheld (—)."] + reasons
    return Section("server", "Where the time goes: the engine's view beside lanemon's",
                   "Means per request over the same interval.", headers, rows, notes=notes)
