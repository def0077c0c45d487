"""The bench screen's folds: bench events -> progress and results (pure, no Textual, no IO).

:class:`BenchTracker` holds the cheap part (cell in progress, cells ended per
lane, errors, planned cells from the recorded config).  :class:`BenchResults`
holds the results: it files every request event under its *group* (a lane's
level, category or prompt length, all reps together) and, when asked after a
cell ended, recomputes only the groups that changed with the workload's own
pure results function.  The work at a cell end is proportional to that cell's
group, never to the history: the same figures as ``BenchRun.results()`` (which
re-assembles every event so far), at a flat cost per cell.

Both are fed from the bus, live and replay alike; neither reads the run.
"""

from __future__ import annotations

import copy
import importlib
from collections import Counter
from typing import Any

import msgspec
from msgspec import UNSET

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.load import ClientLoad
from lanemon.results.decode import DecodeLane, DecodeResult, with_category_ratios
from lanemon.results.needles import NeedleLane, NeedleResult
from lanemon.results.common import BenchConfig, lenient
from lanemon.results.prefill import PrefillLane, PrefillResult

__all__ = ["BenchResults", "BenchTracker", "cell_label", "length_label", "planned_cells"]

START_PHASES = frozenset({"start", "cell_start", "cell-start", "begin"})
END_PHASES = frozenset({"end", "cell_end", "cell-end", "done"})
CELL_KEYS = ("level", "length")
BENCH_KINDS = ("decode", "prefill", "needles")
CLIENT_LOAD = getattr(schema, "CLIENT_LOAD", "client_load")
_RESULTS = {"decode": ("lanemon.workloads.bench.decode", "decode_results"),
            "prefill": ("lanemon.workloads.bench.prefill", "prefill_results"),
            "needles": ("lanemon.workloads.bench.needles", "needle_results")}


BenchResult = DecodeResult | PrefillResult | NeedleResult
BenchLane = DecodeLane | PrefillLane | NeedleLane


def _key(k: Any) -> float:
    try:
        return float(k)
    except (TypeError, ValueError):
        return float("inf")


def length_label(n: Any) -> str:
    """``2,000`` / ``64K``: a prompt length as the charts and tables show it."""
    x = _key(n) if not isinstance(n, bool) else float("inf")
    if x == float("inf"):
        return str(n)
    return f"{x / 1000:.0f}K" if x >= 10_000 else f"{x:,.0f}"


def cell_label(kind: str, cell: dict[str, Any], lane: str | None = None) -> str:
    """``C4 r0`` (decode level), ``coding C1 r0`` (category), ``12K tok r1`` (prefill, needles), ``calibrate``;
    ``A C4 r0`` with ``lane``.  The one cell label of the bench screen, its log and the headless progress
    (``r0`` is the first rep, as in the cell ids of docs/JSON.md)."""
    if cell.get("part") == "calibrate":
        text = "calibrate"
    else:
        if cell.get("category") is not None:
            text = f"{cell['category']} C{cell.get('level', 1)}"
        elif cell.get("level") is not None:
            text = f"C{cell['level']}"
        elif cell.get("length") is not None:
            text = f"{length_label(cell['length'])} tok"
        elif isinstance(cell.get("part"), str) and cell["part"]:
            text = cell["part"]  # `load`, not the id `A:load:r0` (the lane and the rep are said apart)
        else:
            text = str(cell.get("cell") or "cell")
        rep = cell.get("rep")
        if rep is not None:
            text += f" r{rep}"
    return text if lane is None else f"{lane} {text}"


def planned_cells(kind: str, config: BenchConfig) -> int | None:
    """Cells per lane the bench-start ``config`` plans (None when the config does not say).

    decode: every level × reps, plus every category × reps when ``per_category`` (unsaid: true);
    prefill / needles: one calibration cell plus every length × reps.
    """
    reps = config.reps
    if not isinstance(reps, int) or reps < 1:
        return None
    if kind == "decode":
        if not isinstance(config.levels, list):
            return None
        cats = config.categories if config.per_category is UNSET or config.per_category else []
        return len(config.levels) * reps + len(cats if isinstance(cats, list) else []) * reps
    if not isinstance(config.lengths, list):
        return None
    return 1 + len(config.lengths) * reps


class BenchTracker:
    """A pure fold of one bench's events: cell in progress, cells ended per lane, errors, plan size."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.version = 0
        self.cells_version = 0
        """Bumped when a cell ends: the signal to recompute results."""
        self.current: dict[str, str] = {}
        self.done_by_lane: Counter[str] = Counter()
        self.errors: list[tuple[int, str, str, str]] = []
        self.t_start: int | None = None
        self.last_t = 0
        self.started = False
        self.bench_ended = False
        self.interrupted = False
        self.config = BenchConfig()
        self.lanes: list[str] = []
        """Lanes in the order the bench names them (config), then as first seen."""
        self.plan_weights: dict[str, float] = {}
        """Cell id -> its planned weight (the start mark's plan; requests the cell sends)."""
        self.done_weight = 0.0

    def apply(self, ev: Event) -> None:
        kind = ev.kind
        if kind == schema.TOKEN:  # the hot path: nothing the progress shows changes per token
            self.last_t = ev.t if ev.t > self.last_t else self.last_t
            return
        self.version += 1
        self.last_t = max(self.last_t, ev.t)
        if self.t_start is None and kind in (schema.MARK, schema.REQUEST):
            self.t_start = ev.t
        d = ev.data
        if kind == schema.MARK:
            if d.get("bench") not in (None, self.kind):
                return
            phase = d.get("phase")
            lane = ev.lane or d.get("lane")
            is_cell = d.get("label") != "bench" and ("cell" in d or any(d.get(k) is not None for k in CELL_KEYS)
                                                     or d.get("part") is not None)
            if lane and is_cell and lane not in self.lanes:
                self.lanes.append(lane)
            if phase in START_PHASES:
                if is_cell and lane:
                    self.current[lane] = cell_label(self.kind, d)
                elif not is_cell:
                    self.started = True
                    if "config" in d:
                        self.t_start = ev.t
                        raw = d.get("config")
                        self.config = lenient(raw if isinstance(raw, dict) else {}, BenchConfig)
                        self.plan_weights = {str(p["cell"]): _weight(p.get("weight")) for p in d.get("plan") or []
                                             if isinstance(p, dict) and p.get("cell") is not None}
                        named = self.config.lanes or []
                        for name in named:
                            if name not in self.lanes:
                                self.lanes.insert(len([n for n in self.lanes if n in named]), name)
            elif phase in END_PHASES:
                if is_cell:
                    if lane:
                        self.done_by_lane[lane] += 1
                        self.current.pop(lane, None)
                    self.done_weight += self.plan_weights.get(str(d.get("cell")), 1.0)
                    self.cells_version += 1
                else:
                    self.bench_ended = True
                    self.interrupted = bool(d.get("interrupted"))
                    self.current.clear()
                    self.cells_version += 1
        elif kind == schema.ERROR:
            cell = self.current.get(ev.lane or "", "")
            msg = str(d.get("message", ""))
            self.errors.append((ev.t, f"{ev.lane or '?'}{' ' + cell if cell else ''}", str(d.get("cls", "error")),
                                msg))

    @property
    def elapsed_ns(self) -> int:
        return max(0, self.last_t - (self.t_start or 0))

    def eta_s(self) -> float | None:
        """Seconds left at the pace so far, weighting each cell by its planned requests (as the headless
        progress does); None before the first cell ends, after the run, or without a plan."""
        total = sum(self.plan_weights.values())
        if self.bench_ended or not total or not 0 < self.done_weight < total or not self.elapsed_ns:
            return None
        elapsed = self.elapsed_ns / 1e9
        return elapsed * total / self.done_weight - elapsed

    @property
    def cells_done(self) -> int:
        return sum(self.done_by_lane.values())

    def cells_total(self) -> int:
        """Planned cells over all lanes (0 when the config does not say)."""
        per_lane = planned_cells(self.kind, self.config) or 0
        return per_lane * len(self.lanes)

    def progress_rows(self) -> list[tuple[str, int, int, str | None]]:
        """(lane, cells done, cells planned, cell in progress) per lane."""
        per_lane = planned_cells(self.kind, self.config) or 0
        return [(lane, min(self.done_by_lane.get(lane, 0), per_lane) if per_lane else self.done_by_lane.get(lane, 0),
                 per_lane, self.current.get(lane)) for lane in self.lanes]


def _weight(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 else 1.0


def _group(lane: str | None, d: dict[str, Any]) -> tuple:
    """The results group a cell (or a request's meta) belongs to: all reps of one lane's level,
    category or prompt length (a calibration cell is its own group)."""
    part = d.get("part")
    if part == "calibrate" or d.get("run") == "calibrate":
        return (lane, "calibrate")
    if part == "category" or (part is None and d.get("category") is not None):
        return (lane, "category", str(d.get("category")))
    if d.get("level") is not None and d.get("length") is None:
        return (lane, "level", str(d.get("level")))
    return (lane, "length", str(d.get("length")))


class BenchResults:
    """The bench's typed result, kept up to date from the bus at a flat cost per cell end.

    ``apply`` files each event (O(1)); lanemon's own ``client_load`` windows are folded once, as they come, into
    one :class:`~lanemon.measure.load.ClientLoad` that every call of the workload's function is handed (every
    group is judged against them: a cell that ran while lanemon was starved is ``unreliable``; no call
    re-reads every window so far), and a starved window reported after a cell ended re-opens that cell's
    group.  :meth:`results` recomputes only the groups a cell ended in (or a starved window touched) since
    the last call, by running the workload's pure results function on the bench's marks plus that group's
    events, and merges them into the cached result.  It returns the very object it returned last when the
    result is equal to it: a screen redraws its figures when that object changes, once per change, however
    often it asks.
    """

    def __init__(self, kind: str) -> None:
        if kind not in _RESULTS:
            raise ValueError(f"unknown bench {kind!r}")
        self.kind = kind
        self.version = 0
        """Bumped whenever :meth:`results` would return something new."""
        self.computed = 0
        """How many groups were recomputed in all (tests check this stays per cell, not per event)."""
        self._head: list[Event] = []  # lane events and this bench's marks: O(cells)
        self._load = ClientLoad()  # lanemon's own client_load windows so far, folded once each
        self._events: dict[tuple, list[Event]] = {}
        self._cell_group: dict[str, tuple] = {}
        self._req_cell: dict[str, tuple[str, tuple]] = {}  # open request -> (cell id, group)
        self._ended: set[str] = set()
        self._ended_at: list[tuple[int, tuple]] = []  # (end mark's t, group) of every ended cell, in time order
        self._dirty: set[tuple] = set()
        self._lanes: dict[str, BenchLane] = {}
        self._cached: BenchResult | None = None
        self._cached_at: tuple = (-1, None)

    def _module(self) -> Any:
        return importlib.import_module(_RESULTS[self.kind][0])

    def apply(self, ev: Event) -> None:
        req = ev.req
        if req is not None:
            opened = self._req_cell.get(req)
            if opened is not None:
                cell, group = opened
                self._events[group].append(ev)
                if ev.kind in (schema.DONE, schema.ERROR):
                    del self._req_cell[req]
                    if cell in self._ended:  # finished after its cell's end mark: still that cell's figure
                        self._dirty.add(group)
                        self.version += 1
                return
            if ev.kind == schema.REQUEST and ev.data.get("bench") == self.kind:
                d = ev.data
                cell = str(d.get("cell"))
                group = self._cell_group.get(cell) or _group(ev.lane, d)
                self._req_cell[req] = (cell, group)
                self._events.setdefault(group, []).append(ev)
            return
        if ev.kind == schema.LANE:
            self._head.append(ev)
            return
        if ev.kind == CLIENT_LOAD:  # lanemon's own loop lag: which cells ran while it was starved
            self._load.apply(ev)
            self.version += 1
            d = ev.data or {}
            if d.get("bound"):  # published as soon as seen: it may fall in cells that already ended
                t0 = d.get("t0") if isinstance(d.get("t0"), int) and not isinstance(d.get("t0"), bool) else ev.t
                for end_t, group in reversed(self._ended_at):
                    if end_t < t0:
                        break
                    self._dirty.add(group)
            return
        if ev.kind != schema.MARK or ev.data.get("bench") != self.kind:
            return
        self._head.append(ev)
        d = ev.data
        self.version += 1
        if d.get("label") == "cell" and isinstance(d.get("cell"), str):
            if d.get("phase") == "start":
                self._cell_group[d["cell"]] = _group(ev.lane, d)
            elif d.get("phase") == "end":
                self._ended.add(d["cell"])
                group = self._cell_group.get(d["cell"])
                if group is not None:
                    self._dirty.add(group)
                    self._ended_at.append((ev.t, group))

    def results(self, *, in_progress: bool = True) -> BenchResult:
        """The bench's typed result for every cell ended so far (same figures as the workload's results
        function); the object returned last when nothing in it changed."""
        if self._cached is not None and not self._dirty and self._cached_at == (self.version, in_progress):
            return self._cached
        module = self._module()
        fn = getattr(module, _RESULTS[self.kind][1])
        head = self._head
        for group in sorted(self._dirty, key=str):
            partial = fn(head + self._events.get(group, []), in_progress=in_progress, load=self._load)
            self.computed += 1
            for lane, body in partial.lanes.items():
                self._merge(lane, body)
        self._dirty.clear()
        out = fn(head, in_progress=in_progress, load=self._load)  # run state and config: the marks alone
        order = [n for n in (out.config.lanes or []) if isinstance(n, str)]
        order += [lane for lane in self._lanes if lane not in order]
        # copies: a result handed out never changes when a later cell is merged into the fold's lanes
        out.lanes = {lane: _copy_lane(self._lanes[lane]) for lane in order if lane in self._lanes}
        if isinstance(out, DecodeResult):
            # categories in the plan's order, as decode_results gives them: merged as their groups were
            # recomputed, their order followed the redraw timing (the bars panel changed from run to run)
            rank = {c: i for i, c in enumerate(c for c in (out.config.categories or []) if isinstance(c, str))}
            for body in out.lanes.values():
                if len(body.categories) > 1:
                    body.categories = dict(sorted(body.categories.items(),
                                                  key=lambda kv: (rank.get(kv[0], len(rank)), str(kv[0]))))
            out.crossover = module.crossover(out.lanes, list(out.lanes))
            with_category_ratios(out)
        elif isinstance(out, PrefillResult):
            names = list(out.lanes)
            if len(names) >= 2:
                out.ratios = module.ratios(out.lanes, names[0], names[1])
        if out == self._cached:  # nothing changed (a cell started, a window that starved nothing): the same object
            out = self._cached
        self._cached, self._cached_at = out, (self.version, in_progress)
        return out

    def _merge(self, lane: str, body: BenchLane) -> None:
        """``body`` (one group's lane, recomputed) into the cached lane: its cells join the cached ones (in key
        order where the keys are numbers), a figure of the lane itself is kept unless ``body`` has one."""
        cached = self._lanes.get(lane)
        if cached is None:
            self._lanes[lane] = _copy_lane(body)
            return
        for name in body.__struct_fields__:
            value = getattr(body, name)
            if isinstance(value, dict):
                section = dict(getattr(cached, name))
                section.update(value)
                if all(_key(k) != float("inf") for k in section):
                    section = dict(sorted(section.items(), key=lambda kv: _key(kv[0])))
                setattr(cached, name, section)
            elif value is not None:
                setattr(cached, name, value)

    # A replay's backward seek snapshots and restores the folds.  Events never change, so the
    # lists are copied but the events in them are shared (a deep copy would copy every token).
    def snapshot(self) -> BenchResults:
        return self._copy()

    def restore(self, state: BenchResults) -> None:
        self.__dict__.clear()
        self.__dict__.update(state._copy().__dict__)  # copied again: one snapshot can be restored twice

    def _copy(self) -> BenchResults:
        """A copy of the fold that shares no container with it (the events and cells in them are shared)."""
        out = BenchResults(self.kind)
        out.version, out.computed = self.version, self.computed
        out._head = list(self._head)
        out._load = copy.deepcopy(self._load)
        out._events = {g: list(evs) for g, evs in self._events.items()}
        out._cell_group, out._req_cell = dict(self._cell_group), dict(self._req_cell)
        out._ended, out._dirty = set(self._ended), set(self._dirty)
        out._ended_at = list(self._ended_at)
        out._lanes = {lane: _copy_lane(body) for lane, body in self._lanes.items()}
        return out  # its cache empty: recomputed on the next results()


def _copy_lane(body: BenchLane) -> BenchLane:
    """A lane of the fold's cache, its sections copied (the cells in them are shared: never changed in place)."""
    out = msgspec.structs.replace(body)
    for name in body.__struct_fields__:
        value = getattr(body, name)
        if isinstance(value, dict):
            setattr(out, name, dict(value))
    return out
