"""Per-request timeline: a pure fold of the event stream into request bars (no Textual, no IO).

Every request becomes one :class:`Bar` -- sent, first token, end, error -- with the bench cell or
race it belongs to.  The timeline screen draws them as horizontal bars over time, one row per
request, grouped by lane and coloured by phase:

* **wait** (queue + prefill): request sent -> first token-carrying chunk;
* **decode**: first token -> end of stream;
* an error ends the bar with a mark.

The same fold serves a live session, a bench run and a replay (it only reads events), and
:func:`layout` turns bars into character cells for a given width, so the drawing is testable
without a terminal.
"""

from __future__ import annotations

from dataclasses import dataclass

from lanemon import events as schema
from lanemon.events import Event

ALL = None
"""Scope of the whole session (every request)."""


@dataclass(slots=True)
class Bar:
    lane: str
    req: str
    sent_ns: int
    first_ns: int | None = None
    end_ns: int | None = None
    error: str | None = None
    """The error class when the request failed."""
    cell: str | None = None
    """The bench cell id (``A/C3/r0``) or ``race N``; None for other requests (probes, ...)."""
    purpose: str = ""

    @property
    def finished(self) -> bool:
        return self.end_ns is not None


class RequestTimeline:
    """Every request of an event stream as a :class:`Bar`, in sending order."""

    MAX_BARS = 20_000

    def __init__(self) -> None:
        self.bars: dict[str, Bar] = {}
        self.cells: list[str] = []
        """Bench cells and races in the order they started (the scopes one can pick)."""
        self.version = 0
        self.last_t = 0

    def apply(self, ev: Event) -> None:
        kind = ev.kind
        if kind not in schema.REQUEST_KINDS or ev.req is None:
            return
        self.last_t = max(self.last_t, ev.t)
        bar = self.bars.get(ev.req)
        if kind == schema.REQUEST:
            d = ev.data
            cell = d.get("cell")
            if cell is None and d.get("bench") == "race" and d.get("race") is not None:
                cell = f"race {d['race']}"
            bar = Bar(lane=ev.lane or "?", req=ev.req, sent_ns=ev.t, cell=cell, purpose=str(d.get("purpose", "")))
            self.bars[ev.req] = bar
            if cell is not None and cell not in self.cells:
                self.cells.append(cell)
            if len(self.bars) > self.MAX_BARS:  # keep memory bounded on very long sessions
                self.bars.pop(next(iter(self.bars)))
            self.version += 1
            return
        if bar is None:
            return
        if kind == schema.TOKEN:
            if bar.first_ns is None:
                bar.first_ns = ev.t
                self.version += 1
        elif kind == schema.DONE:
            bar.end_ns = ev.t
            self.version += 1
        elif kind == schema.ERROR:
            bar.end_ns = ev.t
            bar.error = str(ev.data.get("cls", "error"))
            self.version += 1

    # -- queries ---------------------------------------------------------------------------
    def select(self, cell: str | None = ALL) -> list[Bar]:
        """The bars of one cell (or race), or of the whole session; grouped by lane (lanes in order
        of first appearance), each lane's bars in sending order."""
        bars = [b for b in self.bars.values() if cell is None or b.cell == cell]
        lanes: list[str] = []
        for b in bars:
            if b.lane not in lanes:
                lanes.append(b.lane)
        return sorted(bars, key=lambda b: (lanes.index(b.lane), b.sent_ns, b.req))


WAIT, DECODE, ERROR, EMPTY = "wait", "decode", "error", "empty"


def span(bars: list[Bar], now_ns: int | None = None) -> tuple[int, int]:
    """(start, end) of the time axis: first send -> last end (or ``now`` for running requests)."""
    if not bars:
        return 0, 1
    t0 = min(b.sent_ns for b in bars)
    ends = [b.end_ns or b.first_ns or b.sent_ns for b in bars]
    if now_ns is not None and any(not b.finished for b in bars):
        ends.append(now_ns)
    t1 = max(ends)
    return t0, max(t1, t0 + 1)


def layout(bar: Bar, t0: int, t1: int, width: int, now_ns: int | None = None) -> list[str]:
    """One row of ``width`` cells for ``bar`` on the axis ``t0..t1``: each cell is ``wait``,
    ``decode``, ``error`` (the last cell of a failed request) or ``empty``.  A running request
    extends to ``now_ns`` (or its latest known time)."""
    width = max(1, width)
    scale = width / (t1 - t0)

    def col(t: int) -> int:
        return min(width - 1, max(0, int((t - t0) * scale)))

    cells = [EMPTY] * width
    end = bar.end_ns if bar.end_ns is not None else (now_ns if now_ns is not None else (bar.first_ns or bar.sent_ns))
    end = max(end, bar.sent_ns)
    first = bar.first_ns if bar.first_ns is not None else end
    a, f, e = col(bar.sent_ns), col(first), col(end)
    for i in range(a, f + 1 if bar.first_ns is None else f):
        cells[i] = WAIT
    if bar.first_ns is not None:
        for i in range(f, e + 1):
            cells[i] = DECODE
    if bar.first_ns is None:
        cells[a] = WAIT
    if bar.error is not None:
        cells[e] = ERROR
    return cells
