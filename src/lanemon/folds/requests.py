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

from collections import deque
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


SHOWN = 400
"""Bars the timeline screen draws for one scope (the latest; ui/screens/timeline.render_rows)."""


class RequestTimeline:
    """The requests of an event stream as :class:`Bar` objects, in sending order: of each lane in each scope
    (a bench cell or race, or the requests outside any) the latest :data:`SHOWN` finished ones and every
    running one -- all the timeline screen can draw of a scope or of the whole session (it draws the last
    ``SHOWN`` of the bars sorted by lane, then sending time: each of those is among the latest ``SHOWN`` of its
    lane in its scope).  What a scope ever held is counted (:meth:`totals`)."""

    MAX_BARS = 20_000
    """A hard cap over every scope (a bench of many cells), dropping the oldest bars."""

    def __init__(self, shown: int = SHOWN) -> None:
        self.bars: dict[str, Bar] = {}
        self.cells: list[str] = []
        """Bench cells and races in the order they started (the scopes one can pick)."""
        self.version = 0
        self.last_t = 0
        self.shown = shown
        self.scopes: dict[tuple[str | None, str], deque[str]] = {}
        """Per (scope, lane) (scope: the cell, or None for requests outside any), its kept requests' ids in
        sending order."""
        self.lanes: list[str] = []
        """Lanes in order of their first request (the screen's grouping, whatever was dropped since)."""
        self.counts: dict[str | None, list[int]] = {}
        """Per scope: [requests ever sent, of which failed]."""

    def apply_token(self, ev: Event) -> None:
        """:meth:`apply` for a ``token`` event: only a bar's first token is drawn."""
        req = ev.req
        if req is None:
            return
        t = ev.t
        if t > self.last_t:
            self.last_t = t
        bar = self.bars.get(req)
        if bar is not None and bar.first_ns is None:
            bar.first_ns = t
            self.version += 1

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
            if ev.req in self.bars:  # an id used again: the old bar leaves its scope's count of kept bars
                self._forget(ev.req)
            self.bars[ev.req] = bar
            if cell is not None and cell not in self.cells:
                self.cells.append(cell)
            self.counts.setdefault(cell, [0, 0])[0] += 1
            if bar.lane not in self.lanes:
                self.lanes.append(bar.lane)
            ids = self.scopes.setdefault((cell, bar.lane), deque())
            ids.append(ev.req)
            self._trim(ids)
            if len(self.bars) > self.MAX_BARS:  # keep memory bounded on very long sessions
                self._forget(next(iter(self.bars)))
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
            if bar.error is None:
                self.counts.setdefault(bar.cell, [0, 0])[1] += 1
            bar.error = str(ev.data.get("cls", "error"))
            self.version += 1

    def _trim(self, ids: deque[str]) -> None:
        """Drop a scope's oldest finished bars beyond :attr:`shown` (running ones stay: they are drawn)."""
        extra = len(ids) - self.shown
        while extra > 0 and ids:
            bar = self.bars.get(ids[0])
            if bar is not None and not bar.finished:
                break  # the oldest still runs: kept, and with it the ones after it (checked again later)
            ids.popleft()
            if bar is not None:
                del self.bars[bar.req]
            extra -= 1

    def _forget(self, req: str) -> None:
        bar = self.bars.pop(req, None)
        if bar is not None:
            ids = self.scopes.get((bar.cell, bar.lane))
            if ids is not None:
                try:
                    ids.remove(req)
                except ValueError:
                    pass

    def totals(self, cell: str | None = ALL) -> tuple[int, int]:
        """(requests sent, of which failed) in one scope or the whole session, kept or not."""
        if cell is not None:
            sent, failed = self.counts.get(cell, (0, 0))
            return sent, failed
        return sum(c[0] for c in self.counts.values()), sum(c[1] for c in self.counts.values())

    # -- queries ---------------------------------------------------------------------------
    def select(self, cell: str | None = ALL) -> list[Bar]:
        """The bars kept of one cell (or race), or of the whole session; grouped by lane (lanes in order
        of their first request in the session), each lane's bars in sending order."""
        bars = [b for b in self.bars.values() if cell is None or b.cell == cell]
        order = {lane: i for i, lane in enumerate(self.lanes)}  # of the session (first bars may be dropped)
        return sorted(bars, key=lambda b: (order[b.lane], b.sent_ns, b.req))


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
