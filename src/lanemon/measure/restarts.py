"""The one restart rule (pure): did an engine restart between two of its ``/metrics`` scrapes?

An engine's counters (``*_total``) and histogram sums and counts (``*_sum``, ``*_count``) only ever rise while it
runs; when it restarts they begin again from zero.  Counters alone cannot always see it: if the engine counted
more after the restart than it had before, every counter ends above its old value (issue 38).  So the rule reads
three things, and any one of them ends the interval: a fall in any counter, in any histogram sum or count (also
per finish reason and per data-parallel rank), or a changed ``process_start_time_seconds`` (mapped as
``process_start_s``; vLLM and SGLang export it through prometheus_client).  An interval in which the engine
restarted is not used: what it counted before the restart is gone, so neither side's figures over it are the
run's.

The server view (measure/server.py), the run-scoped counters of a cell, rep, race or session
(measure/counters.py) and the live session row (folds/dashboard.py) all ask :func:`restart_reason`.
"""

from __future__ import annotations

import math
from typing import Any

from lanemon.untrusted import inert

START_KEY = "process_start_s"
"""The mapped key of ``process_start_time_seconds`` (client/prom.py)."""
CUMULATIVE = ("_total", "_sum", "_count")
"""Suffixes of the mapped keys that only rise while the engine runs."""
START_SLACK_S = 0.01
"""``process_start_time_seconds`` of one process reads the same at every scrape (prometheus_client derives it
from /proc: boot time plus the start in clock ticks); a change beyond rounding is a new process."""


def _num(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _fell(before: Any, after: Any, prefix: str = "", every: bool = False) -> str | None:
    """The first cumulative key of *before* that is lower in *after* (``every``: each number is a counter, as
    in the map of finish reasons), looking one level into the maps by finish reason (``requests_by_finish``) and by rank (``by_engine``); bounded (256 keys a level)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return None
    for key, b in list(before.items())[:256]:
        a = after.get(key)
        if isinstance(b, dict):
            if key == "requests_by_finish" and not prefix:
                fell = _fell(b, a, f"{key}.", every=True)
            elif key == "by_engine" and not prefix and isinstance(a, dict):
                fell = next((f for r in list(b)[:64] if (f := _fell(b[r], a.get(r), f"{key}.{r}.")) is not None),
                            None)
            else:
                fell = None
            if fell:
                return fell
            continue
        if not (every or (isinstance(key, str) and key.endswith(CUMULATIVE))):
            continue
        va, vb = _num(a), _num(b)
        if va is not None and vb is not None and va < vb:
            return inert(f"{prefix}{key}", 96)  # a recording's key: untrusted
    return None


def restart_reason(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """Why the engine restarted between two mapped scrapes (``"process_start_time_seconds changed"``, or
    ``"<key> fell"`` naming the first counter or histogram sum that went down), or None when it did not."""
    sa, sb = _num(after.get(START_KEY)), _num(before.get(START_KEY))
    if sa is not None and sb is not None and abs(sa - sb) > START_SLACK_S:
        return "process_start_time_seconds changed"
    fell = _fell(before, after)
    return f"{fell} fell" if fell else None
