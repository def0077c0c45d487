"""The versioned event vocabulary shared by live sessions, recordings and replay.

Everything lanemon shows or reports is built from a stream of :class:`Event`.
A live session produces them from sockets; a replay produces the very same
objects from a recording file.  Screens and reports never know which.

Recording format (JSON lines, see docs/RECORDING.md; the typed schema readers check is
lanemon/recording/schema.py):

* line 1 -- a header object: ``{"schema": "lanemon.recording", "version": "1.0", ...}``
* every further line -- one event: ``{"t": NS, "kind": KIND, "lane": NAME, "req": ID, "data": {...}}``
  where ``t`` is nanoseconds since the session started (client monotonic clock).
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

SCHEMA_NAME = "lanemon.recording"
SCHEMA_VERSION = (1, 0)
SCHEMA_VERSION_STR = f"{SCHEMA_VERSION[0]}.{SCHEMA_VERSION[1]}"

# Event kinds.  Lane-level:
PROBE = "probe"  # GET /v1/models health: ok, latency_s, models, model, error, message
LANE = "lane"  # lane identity became known/changed: url, model
SERVER_METRICS = "server_metrics"  # one scrape of the lane's Prometheus /metrics, mapped (docs/SERVER_METRICS.md)
# Request-level (``req`` is set):
REQUEST = "request"  # request sent: endpoint, purpose, model, max_tokens, prompt_chars, prompt?
FIRST_BYTE = "first_byte"  # first byte of the response body
TOKEN = "token"  # a token-carrying chunk: text, reasoning (bool, optional), n (tokens, when known)
USAGE = "usage"  # server usage block: prompt_tokens, completion_tokens, cached_tokens?, reasoning_tokens?
DONE = "done"  # stream complete: finish_reason, status
ERROR = "error"  # request failed: cls, message, status?
# Session-level (lane may be None):
MARK = "mark"  # a marker (bench cell, race): label
NOTE = "note"  # a free-text note / warning for the log: level, message
HOST = "host"  # a sample of this machine (psutil): cpu_pct, mem_*, net_*_Bps, proc_* (lanes/host.py)
CLIENT_LOAD = "client_load"  # lanemon's own event-loop lag over a window: t0, lag_ms, cpu_pct, bound (measure/load.py)
GPU = "gpu"  # one reading of a lane's GPU telemetry (dcgm-exporter or NVML): power_w, energy_mj, gpus (docs/GPU.md)
ALERT = "alert"  # an alert rule fired or resolved (lane set): state, alert, rule, severity, values (measure/alerts.py)
LANE_STATE = "lane_state"  # a lane went down or came back (lane set): state, t_s, cls, message | since_s, down_s

REQUEST_KINDS = frozenset({REQUEST, FIRST_BYTE, TOKEN, USAGE, DONE, ERROR})
ALL_KINDS = frozenset({PROBE, LANE, MARK, NOTE, SERVER_METRICS, HOST, CLIENT_LOAD, GPU, ALERT, LANE_STATE}) | REQUEST_KINDS

# Error classes (``data.cls`` on ERROR events and probe failures).
ERR_CONNECT = "connect"  # connection refused / DNS / unreachable
ERR_TIMEOUT = "timeout"  # connect, read or stall timeout
ERR_STALLED = "stalled"  # bytes kept coming (keep-alive comments, a drip) but no data for the stall window
ERR_HTTP = "http"  # HTTP status >= 400 (status + server message)
ERR_MALFORMED = "malformed"  # response was not valid SSE / JSON
ERR_CUT = "cut"  # stream ended before [DONE]
ERR_CANCELLED = "cancelled"  # cancelled by lanemon (quit, Ctrl-C)
ERR_OTHER = "other"


class Event(msgspec.Struct, gc=False):
    """One thing that happened, stamped with nanoseconds since session start.

    A ``msgspec.Struct`` with ``gc=False`` (constructed, compared, copied and pickled like the slotted dataclass it
    was): an event is never tracked by Python's cyclic collector, so the events a sink or a window keeps (a
    client's token events: hundreds of thousands) are not walked by every collection.  That is sound because an
    event never refers to itself: nothing puts an event into its own ``data`` (JSON values: a recording's), and a
    ``data`` dict that holds containers is tracked on its own (held while its event lives, collected after).
    Subclasses (measure/records.py) inherit it; none may hold anything that leads back to the event."""

    t: int
    kind: str
    lane: str | None = None
    req: str | None = None
    data: dict[str, Any] = msgspec.field(default_factory=dict)

    def to_json_obj(self) -> dict[str, Any]:
        obj: dict[str, Any] = {"t": self.t, "kind": self.kind}
        if self.lane is not None:
            obj["lane"] = self.lane
        if self.req is not None:
            obj["req"] = self.req
        if self.data:
            obj["data"] = self.data
        return obj


class Clock:
    """Session clock: integer nanoseconds since the session started (monotonic)."""

    __slots__ = ("t0",)

    def __init__(self, t0: int | None = None) -> None:
        self.t0 = time.perf_counter_ns() if t0 is None else t0

    def now(self) -> int:
        return time.perf_counter_ns() - self.t0


def parse_version(text: str) -> tuple[int, int]:
    """Parse ``"MAJOR.MINOR"``; raises ValueError for anything else."""
    major, _, minor = str(text).partition(".")
    return int(major), int(minor or 0)
