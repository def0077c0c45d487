"""What a bench's ``mark`` events say, typed: its plan, its config, the start and end of every cell.

A bench writes (workloads/bench/run.py ``BenchRun.run`` and each bench's ``run``): a ``label="bench"`` start mark
with the run's ``config`` (:class:`~lanemon.results.common.BenchConfig`) and its ``plan`` (``lane``, ``cell``,
``weight`` of every :class:`PlannedCell`); ``label="cell"`` start/end marks around every cell; a ``label="bench"``
end mark.  :func:`read_marks` reads them back from events (a recording's: untrusted) into :class:`BenchMarks`: a
value of the wrong type is left out rather than failing the results (``results.common.lenient``).  The events themselves stay JSON on disk.
The mark models themselves (:class:`CellStart`, :class:`CellEnd`, :class:`PlanMark`) are results/marks.py's: the
recording checker is made from them too.

Never imports Textual.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import msgspec

from lanemon import events as schema
from lanemon.events import Event
from lanemon.results.common import BenchConfig, lenient
from lanemon.results.marks import CellEnd, CellKeys, CellStart, PlanMark

__all__ = ["PlannedCell", "PlanMark", "CellStart", "CellEnd", "CellMarks", "BenchMarks", "cell_keys", "read_marks"]


class PlannedCell(CellKeys, kw_only=True, frozen=True):
    """One cell a bench plans to run (each bench's ``plan``), in run order: its keys (results/marks.CellKeys: every
    plan sets its lane, id, part and rep) and a rough cost ``weight`` (the headless progress weights its ETA by
    it)."""

    weight: float


class CellMarks(NamedTuple):
    """One cell's marks: the start (typed, and its event), the end (None while the cell runs or when it was cut)."""

    start: CellStart
    start_event: Event
    end: CellEnd | None = None
    end_event: Event | None = None


@dataclass
class BenchMarks:
    """What the ``mark`` events of one bench say."""

    config: BenchConfig
    started: bool
    ended: bool
    interrupted: bool
    cells: dict[str, CellMarks]  # cell id -> its marks, in start order
    lanes: list[str]
    plan: list[PlanMark] = field(default_factory=list)  # the start mark's plan, in run order

    def finished(self, cell: str) -> bool:
        c = self.cells.get(cell)
        return bool(c and c.end is not None)

    def open_cells(self) -> list[dict[str, Any]]:
        """Cells that started but never ended, as the keys of their start marks (what ``cut`` and ``running``
        publish)."""
        return [cell_keys(c.start_event) for c in self.cells.values() if c.end is None]


_CELL_META = {"label", "phase", "end", "bench", "errors", "requests", "ok"}


def cell_keys(ev: Event) -> dict[str, Any]:
    """A cell mark's own keys as recorded (``cell``, ``part``, ``level`` ..., then ``lane``): the free-form cell of
    ``cut`` and ``running`` (docs/JSON.md)."""
    return {k: v for k, v in {**ev.data, "lane": ev.lane}.items() if k not in _CELL_META}


def read_marks(events: Iterable[Event], bench: str) -> BenchMarks:
    config = BenchConfig()
    started = ended = False
    interrupted = False
    plan: list[PlanMark] = []
    cells: dict[str, CellMarks] = {}
    lanes: list[str] = []
    for ev in events:
        if ev.kind == schema.LANE and ev.lane and ev.lane not in lanes:
            lanes.append(ev.lane)
        if ev.kind != schema.MARK or ev.data.get("bench") != bench:
            continue
        d = ev.data
        label, phase = d.get("label"), d.get("phase")
        if label == "bench":
            if phase == "start":
                started = True
                raw = d.get("config")  # the typed config its results echo: a key this lanemon does not know, or a
                config = lenient(raw if isinstance(raw, dict) else {}, BenchConfig)  # wrong value, left out
                plan = []
                for p in d.get("plan") or []:
                    try:
                        plan.append(msgspec.convert(p, PlanMark, strict=False))
                    except msgspec.ValidationError:
                        continue
            elif phase == "end":
                ended = True
                interrupted = bool(d.get("interrupted"))
        elif label == "cell" and isinstance(d.get("cell"), str):
            if phase == "start":
                start = msgspec.structs.replace(lenient(d, CellStart), cell=d["cell"], lane=ev.lane)
                cells[d["cell"]] = CellMarks(start, ev)
            elif phase == "end" and d["cell"] in cells:
                cells[d["cell"]] = cells[d["cell"]]._replace(end=lenient(d, CellEnd), end_event=ev)
    if config.lanes:
        lanes = list(config.lanes)
    return BenchMarks(config, started, ended, interrupted, cells, lanes, plan)
