"""The gauntlet screen's fold: gauntlet events -> per-lane views (pure, cheap per event; no Textual)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.gauntlet_defaults import DEFAULT_HOPS, DEFAULT_REPS  # noqa: F401 (re-exported)
from lanemon.results.gauntlet import GauntletConfigInfo, config_info

BENCH = "gauntlet"

# ---------------------------------------------------------------------------
# The live fold the TUI renders
# ---------------------------------------------------------------------------


@dataclass
class TurnView:
    turn: int
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    ttft_s: float | None = None
    decode_s: float | None = None
    tool: str | None = None
    ok: bool | None = None


def _number(value: object) -> float:
    """A recorded number (untrusted) as a float; 0 when it is none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value)


@dataclass(frozen=True)
class RepEnd:
    """A finished rep as its ``rep_end`` mark says (workloads/gauntlet/run.py): what the lane card shows of it."""

    correct: bool
    wall_s: float
    tool_calls: int
    stopped: str

    @classmethod
    def of(cls, d: Mapping[str, object]) -> RepEnd:
        """The mark's data (untrusted: a recording) as a :class:`RepEnd`; a value of the wrong type reads as none."""
        stopped = d.get("stopped", "failed")
        return cls(correct=bool(d.get("correct")), wall_s=_number(d.get("wall_s")),
                   tool_calls=int(_number(d.get("tool_calls"))), stopped=str(stopped))


@dataclass
class LaneView:
    name: str
    model: str | None = None
    rep: int = -1
    """Index of the rep in progress (or the last one); -1 before the first."""
    hops_done: int = 0
    """Tool calls answered with a file of the chain in the current rep."""
    tool_calls: int = 0
    current_file: str | None = None
    phase: str = "waiting"
    """waiting | prefill | decode | tool | done | failed | error"""
    rep_start_ns: int | None = None
    rep_end_ns: int | None = None
    turns: list[TurnView] = field(default_factory=list)
    results: list[RepEnd] = field(default_factory=list)
    """Every finished rep."""
    cells: list[str] = field(default_factory=list)
    """One cell per tool call of the current rep: "ok" | "error" | "malformed"."""

    def elapsed_s(self, now_ns: int) -> float:
        if self.rep_start_ns is None:
            return 0.0
        end = self.rep_end_ns if self.rep_end_ns is not None else now_ns
        return max(0.0, (end - self.rep_start_ns) / 1e9)


class GauntletState:
    """Pure fold of gauntlet events into per-lane views (cheap per event; no Textual)."""

    def __init__(self, lanes: Sequence[str] = ()) -> None:
        self.lanes: dict[str, LaneView] = {n: LaneView(n) for n in lanes}
        self.config = GauntletConfigInfo()
        self.version = 0
        self.last_t = 0
        self.started = False
        self.ended = False
        self._open: dict[str, tuple[str, int]] = {}  # req -> (lane, turn)
        self._sent: dict[str, int] = {}
        self._first: dict[str, int] = {}

    def lane(self, name: str) -> LaneView:
        if name not in self.lanes:
            self.lanes[name] = LaneView(name)
        return self.lanes[name]

    @property
    def hops(self) -> int:
        return DEFAULT_HOPS if self.config.hops is None else self.config.hops

    @property
    def reps(self) -> int:
        return DEFAULT_REPS if self.config.reps is None else self.config.reps

    def apply_token(self, ev: Event) -> None:
        """:meth:`apply` for a ``token`` event: the clock, and a gauntlet turn's first token."""
        if ev.t > self.last_t:
            self.last_t = ev.t
        if ev.req is not None and ev.req in self._open:
            self.apply(ev)

    def apply(self, ev: Event) -> None:
        self.last_t = max(self.last_t, ev.t)
        kind, d = ev.kind, ev.data
        if kind == schema.MARK:
            if d.get("bench") != BENCH:
                return
            self.version += 1
            self._mark(ev)
            return
        if ev.req is None:
            return
        if kind == schema.REQUEST:
            if d.get("bench") != BENCH or not ev.lane:
                return
            lv = self.lane(ev.lane)
            turn = int(d.get("turn", 0))
            self._open[ev.req] = (ev.lane, turn)
            self._sent[ev.req] = ev.t
            lv.turns.append(TurnView(turn))
            lv.phase = "prefill"
            self.version += 1
            return
        opened = self._open.get(ev.req)
        if opened is None:
            return
        lv = self.lane(opened[0])
        view = lv.turns[-1] if lv.turns else None
        if kind == schema.TOKEN:
            if ev.req not in self._first:  # only the first token changes what is drawn
                self._first[ev.req] = ev.t
                if view is not None:
                    view.ttft_s = (ev.t - self._sent[ev.req]) / 1e9
                lv.phase = "decode"
                self.version += 1
        elif kind == schema.USAGE:
            if view is not None:
                view.prompt_tokens = d.get("prompt_tokens")
                view.cached_tokens = d.get("cached_tokens")
        elif kind in (schema.DONE, schema.ERROR):
            first = self._first.pop(ev.req, None)
            sent = self._sent.pop(ev.req, ev.t)
            self._open.pop(ev.req, None)
            if view is not None:
                if first is not None:
                    view.decode_s = (ev.t - first) / 1e9
                if kind == schema.ERROR:
                    view.ok = False
            lv.phase = "tool" if kind == schema.DONE else "error"
            if first is None and view is not None and kind == schema.DONE:
                view.ttft_s = (ev.t - sent) / 1e9
            self.version += 1

    def _mark(self, ev: Event) -> None:
        d = ev.data
        phase = d.get("phase")
        if phase == "start":
            self.started = True
            self.config = config_info(d.get("config"))
            for name in self.config.lanes:
                self.lane(name)
            for info in d.get("lanes") or []:
                if isinstance(info, dict) and info.get("name"):
                    self.lane(info["name"]).model = info.get("model")
            return
        if phase == "end":
            self.ended = True
            return
        if not ev.lane:
            return
        lv = self.lane(ev.lane)
        if phase == "rep_start":
            lv.rep = int(d.get("rep", 0))
            lv.hops_done = lv.tool_calls = 0
            lv.current_file = d.get("first")
            lv.rep_start_ns, lv.rep_end_ns = ev.t, None
            lv.turns, lv.cells = [], []
            lv.phase = "prefill"
        elif phase == "tool":
            lv.tool_calls += 1
            ok = bool(d.get("ok"))
            lv.hops_done += ok
            lv.cells.append("ok" if ok else ("malformed" if d.get("malformed") else "error"))
            if d.get("path") is not None:
                lv.current_file = str(d["path"])
            if lv.turns:
                lv.turns[-1].tool = d.get("path") or d.get("name")
                lv.turns[-1].ok = ok
        elif phase == "rep_end":
            lv.rep_end_ns = ev.t
            lv.results.append(RepEnd.of(d))
            lv.phase = "done" if d.get("correct") else ("error" if d.get("stopped") == "error" else "failed")


