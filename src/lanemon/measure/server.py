"""Where the time goes: a lane's own latency histograms beside lanemon's figures (pure).

An engine that exports vLLM's or SGLang's latency histograms says, for the
requests that *ended* between two ``/metrics`` scrapes, how long they queued,
how long prefill and decode took, and its own TTFT and end-to-end time.  Over
the same interval lanemon measured TTFT and E2E at the client.  The difference
is what neither side alone shows: HTTP, the API server, detokenising and the
network.

:func:`server_view` takes a run's events and one lane: every pair of successive
successful ``server_metrics`` scrapes of that lane (the loop's, and one at every
cell edge) is an interval; the server side is :func:`server_timings` summed over
them; the client side is every request of that lane recorded as finished inside
them (the same requests, give or take one at the edges, which the block reports
as ``requests`` vs ``client_requests``).  An interval in which a counter fell (a
restart: measure/restarts.py, the rule the run-scoped counters and the live session row use too) is compared
on neither side; when the engine counted requests lanemon
did not send (another client), the gaps are withheld with the reason.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from lanemon import events as schema
from lanemon.results.readings import EngineMetrics, engine_metrics
from lanemon.events import Event
from lanemon.measure.metrics import request_metrics
from lanemon.measure.records import iter_records, reiterable
from lanemon.measure.restarts import restart_reason
from lanemon.results.common import to_json_obj
from lanemon.results.server import ServerReset, ServerTimings, ServerView

#: How each /metrics dialect (``client/prom.map_engine``) is written for a person.
DIALECT_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}
_SIM_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,47}")


def sim_name(value: Any) -> str | None:
    """The simulator profile a lane said it simulates (``/models`` ``simulates``, carried on the probe), or
    None: a name of lower-case letters, digits, ``.``, ``_`` and ``-`` only (it comes from the lane or a
    recording: untrusted)."""
    return value if isinstance(value, str) and _SIM_NAME.fullmatch(value) else None


def engine_label(dialect: str | None, simulates: str | None) -> str | None:
    """What a lane's engine is called in history rows and reports: the engine lanemon's simulator simulates
    and whose /metrics names it speaks (``tensorfold-exl3 (simulated; vLLM /metrics names)``), else the
    dialect its /metrics spoke (``vllm``), else None."""
    if simulates is None:
        return dialect
    if dialect is None:
        return f"{simulates} (simulated)"
    return f"{simulates} (simulated; {DIALECT_NAMES.get(dialect, dialect)} /metrics names)"

SERVER_KEYS = ("ttft_s", "queue_s", "prefill_s", "decode_s", "itl_s", "tpot_s", "e2e_s", "inference_s")
HISTOGRAMS = ("ttft", "itl", "tpot", "e2e", "queue", "prefill", "decode", "inference")
"""The engine's latency histograms a mapped scrape may carry (``<key>_sum`` / ``<key>_count``)."""
TOKENS = ("prompt_tokens", "generation_tokens", "prompt_tokens_computed", "prompt_tokens_hit", "preemptions")
"""The engine's counters a mapped scrape may carry (``<key>_total``)."""



def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _r(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(float(x), digits)


def _increase(before: EngineMetrics, after: EngineMetrics, key: str) -> float | None:
    """How far ``key`` rose between two scrapes (a counter that went down was reset, so its new value is the
    increase); None when the later scrape lacks it."""
    a = getattr(after, key)
    if a is None:
        return None
    a, b = float(a), float(getattr(before, key) or 0.0)
    return a - b if a >= b else a


def server_timings(before: EngineMetrics, after: EngineMetrics) -> ServerTimings:
    """The server's own view between two mapped scrapes: mean seconds per histogram (``ttft_s``,
    ``itl_s``, ``tpot_s``, ``e2e_s``, ``queue_s``, ``prefill_s``, ``decode_s``, ``inference_s``) over the
    requests that ended in between (deltas of ``_sum`` / ``_count``; a counter that went down was reset,
    so its new value is the increase), ``requests`` (the E2E count, else TTFT), and the token counter
    increases (``prompt_tokens``, ``generation_tokens``, ``prompt_tokens_computed``, ``prompt_tokens_hit``,
    ``preemptions``).  A histogram that did not move is None."""
    means: dict[str, float | None] = {}
    for key in HISTOGRAMS:
        n, total = _increase(before, after, key + "_count"), _increase(before, after, key + "_sum")
        means[key + "_s"] = total / n if n and total is not None else None
    ttft_n, e2e_n = _increase(before, after, "ttft_count"), _increase(before, after, "e2e_count")
    ttft_count = int(ttft_n) if ttft_n is not None else None
    e2e_count = int(e2e_n) if e2e_n is not None else None
    tokens = {key: _increase(before, after, key + "_total") for key in TOKENS}
    return ServerTimings(**means, ttft_count=ttft_count, e2e_count=e2e_count,
                         requests=e2e_count if e2e_count is not None else ttft_count,
                         **{k: int(v) if v is not None else None for k, v in tokens.items()})


def _num(x: Any) -> float:
    """A non-negative duration from a recording (anything else is 0: a file's bytes are untrusted)."""
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x < 3600 else 0.0


class _Seen(NamedTuple):
    """What :func:`server_view` reads of one request lanemon saw finish (not its record: a recording holds
    tens of thousands)."""

    prompt_tokens: int | None
    ttft_s: float | None
    e2e_s: float | None
    tpot_s: float | None
    generated_tokens: Any
    tokens_estimated: bool

    @classmethod
    def of(cls, rec: Any) -> "_Seen":
        m = request_metrics(rec)
        return cls(rec.prompt_tokens, m.ttft_s, m.e2e_s, m.tpot_s, m.generated_tokens, m.tokens_estimated)


class _TimingSums:
    """Per-interval :func:`server_timings` added up one interval at a time: means weighted by their counts,
    counters summed (nothing held per interval)."""

    def __init__(self) -> None:
        self.parts = 0
        self.n = dict.fromkeys(HISTOGRAMS, 0.0)
        self.weighted = dict.fromkeys(HISTOGRAMS, 0.0)
        self.sums: dict[str, int] = {}  # "requests" and the token counters seen in at least one interval

    def add(self, before: EngineMetrics, after: EngineMetrics) -> None:
        """Add the interval between two successive scrapes (the engine did not restart in it)."""
        t = server_timings(before, after)
        self.parts += 1
        for key in HISTOGRAMS:
            a, b = getattr(after, key + "_count"), getattr(before, key + "_count")
            c = a - (b or 0.0) if a is not None else None
            mean = getattr(t, key + "_s")
            if c and mean is not None:
                self.n[key] += c
                self.weighted[key] += mean * c
        for key in ("requests",) + TOKENS:
            v = getattr(t, key)
            if v is not None:
                self.sums[key] = self.sums.get(key, 0) + v

    def total(self) -> ServerTimings:
        means = {key + "_s": self.weighted[key] / self.n[key] if self.n[key] else None for key in HISTOGRAMS}
        return ServerTimings(**means, **{key: int(self.sums[key]) if key in self.sums else None
                                         for key in ("requests",) + TOKENS})


NEGATIVE_GAP_S = 0.005
NEGATIVE_GAP_SHARE = 0.05
"""A client mean below the engine's by more than 5 ms + 5 % is not the same requests (a gap is never
negative: the client sends before the engine receives and reads after it writes)."""
EDGE_SLACK = 1
"""Requests either side may place in the neighbouring interval at each end of the compared span (a request
that ends while a scrape is in flight): a difference beyond this is not an edge effect."""


def server_view(events: Iterable[Event], lane: str) -> ServerView | None:
    """The server-vs-client block of one lane (None without two histogram scrapes of it).

    Every pair of successive scrapes is one interval.  An interval in which the engine restarted
    (:func:`~lanemon.measure.restarts.restart_reason`: a counter or histogram sum fell, or the process's start
    time changed; detected between *any* two scrapes, not only the first and the last) is left out
    on both sides: the engine lost what it had counted, so the requests that ended in it are compared on
    neither side (``restarts``, ``excluded_s``).  When the engine counted more requests than lanemon saw
    finish over the compared intervals (another client used it, ``foreign_requests``), or fewer, the means
    are not the same requests: the gaps are withheld (null) and ``gap_reason`` says why."""
    events = reiterable(events)

    def read_at(ev: Event, sent: bool) -> int:
        # a scrape's snapshot is taken somewhere in its flight: from when it was sent (a request the client
        # saw end meanwhile was already counted) to when it was answered (``parse_s``: the parse off the loop)
        lag = _num(ev.data.get("parse_s")) + (_num(ev.data.get("latency_s")) if sent else 0.0)
        return ev.t - int(lag * 1e9)

    # one pass over the scrapes, each pair of successive ones an interval, holding only the one before
    # (a recording of hours holds tens of thousands of scrapes of ~40 figures each)
    spans: list[tuple[int, int]] = []
    resets: list[ServerReset] = []
    excluded_ns = 0
    sums = _TimingSums()
    n_scrapes = 0
    first = last = None
    first_m = last_m = None
    simulates = None
    for b in events:
        if b.kind == schema.PROBE and b.lane == lane and sim_name(b.data.get("simulates")):
            simulates = b.data["simulates"]
            continue
        if not (b.kind == schema.SERVER_METRICS and b.lane == lane):
            continue
        m = engine_metrics(b.data)  # decoded at the edge: a recording's figures are untrusted
        if m is None or (m.ttft_count is None and m.e2e_count is None):
            continue
        n_scrapes += 1
        a, last = last, b
        am, last_m = last_m, m
        if a is None or am is None:
            first, first_m = b, m
            continue
        why = restart_reason(a.data, b.data)
        if why:
            resets.append(ServerReset(t_s=_r(b.t / 1e9, 3), reason=why))
            excluded_ns += b.t - a.t
            continue
        sums.add(am, m)
        spans.append((read_at(a, True), read_at(b, False)))
    if n_scrapes < 2:
        return None
    timings = sums.total()
    if not timings.requests and not resets:
        return None
    starts = [a for a, _ in spans]  # in scrape order, so sorted

    def compared(t: int) -> bool:  # inside one of the compared intervals (a bisect: hours of scrapes stay cheap)
        i = bisect.bisect_right(starts, t) - 1
        return any(spans[j][0] <= t <= spans[j][1] for j in (i, i - 1) if 0 <= j < len(spans))

    recs = [_Seen.of(r) for r in iter_records((e for e in events if e.lane == lane), keep_text=False)
            if r.ok and r.end_ns is not None and compared(r.end_ns)]  # the figures read below, not the records
    ms = recs
    client_ttft = _mean([m.ttft_s for m in ms if m.ttft_s is not None])
    client_e2e = _mean([m.e2e_s for m in ms if m.e2e_s is not None])
    server_n = timings.requests or 0
    slack = EDGE_SLACK * (1 + len(resets))
    foreign = server_n - len(recs)
    reason = None
    if foreign > slack:
        reason = (f"the engine counted {foreign} more requests than lanemon saw finish ({server_n} vs {len(recs)}): "
                  "another client used it, so its means mix in requests lanemon did not send")
    elif -foreign > slack:
        reason = (f"the engine counted {-foreign} fewer requests than lanemon saw finish ({server_n} vs {len(recs)}): "
                  "its counters do not cover lanemon's requests")
    elif not sums.parts:
        reason = "the engine restarted in every interval between scrapes: nothing to compare"
    gaps: dict[str, float | None] = {}
    said = reason  # what gap_reason says: the counts' reason, else a negative gap's (each gap judged on its own)
    for what, c, key in (("TTFT", client_ttft, "ttft"), ("E2E", client_e2e, "e2e")):
        sv = _r(getattr(timings, key + "_s"))
        gaps[key] = None
        if reason is not None or c is None or sv is None:
            continue
        if c < sv * (1 - NEGATIVE_GAP_SHARE) - NEGATIVE_GAP_S:  # the client cannot see a request before the engine
            said = (f"lanemon's mean {what} ({c * 1000:.1f} ms) is below the engine's ({sv * 1000:.1f} "
                    "ms): not the same requests, a gap cannot be negative")
            continue
        gaps[key] = _r(c - sv)
    prompt = [r.prompt_tokens for r in recs]
    gen = [m.generated_tokens for m in ms]
    return ServerView(
        engine=engine_label(first_m.engine if first_m is not None else None, simulates), interval_s=_r((last.t - first.t) / 1e9, 3),
        requests=timings.requests, client_requests=len(recs), scrapes=n_scrapes, restarts=len(resets),
        reset_at=resets[:8] if resets else None, excluded_s=_r(excluded_ns / 1e9, 3) if resets else None,
        **{key: _r(getattr(timings, key)) for key in SERVER_KEYS},
        client_ttft_s=_r(client_ttft), client_e2e_s=_r(client_e2e),
        client_tpot_s=_r(_mean([m.tpot_s for m in ms if m.tpot_s is not None])),
        foreign_requests=foreign if foreign > slack else 0, gap_reason=said, gap_ttft_s=gaps["ttft"],
        gap_e2e_s=gaps["e2e"], **{key: getattr(timings, key) for key in TOKENS},
        client_prompt_tokens=sum(prompt) if prompt and all(p is not None for p in prompt) else None,  # type: ignore[arg-type]
        client_generation_tokens=sum(gen) if gen and not any(m.tokens_estimated for m in ms) else None)


def attach_server_views(lanes: dict[str, Any], events: list[Event]) -> None:
    """Add ``server`` (:func:`server_view`) to every lane of a bench result's ``lanes`` that has one (in place;
    measure/views.py calls this only when some lane was scraped)."""
    for name, lane in lanes.items():
        if isinstance(lane, dict):
            view = server_view(events, name)
            if view is not None:
                lane["server"] = to_json_obj(view)
