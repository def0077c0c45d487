"""Race state: a pure fold of the event stream into races (no Textual, no IO).

A race is bracketed by two ``mark`` events (``bench="race"``, ``phase="start"``
/ ``"end"``, ``race=<index>``) and its requests carry ``meta`` with
``{"bench": "race", "race": <index>, "prompt_id": ...}`` (see
:mod:`lanemon.workloads.race`).  :class:`RaceState` folds any event stream --
a live harness, a live dashboard session, or a replayed recording -- into
:class:`RaceView` objects; the race screen redraws from it on a timer and
:func:`lanemon.workloads.race.race_results` turns the same fold into the
``--json`` document, so the screen, the JSON and a report always agree.

Every figure comes from :func:`lanemon.measure.metrics.request_metrics` on the
request's :class:`~lanemon.measure.records.RequestRecord`; nothing here re-derives
TTFT or decode rates.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from lanemon.measure import metrics
from lanemon.measure.metrics import RequestMetrics
from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.records import Assembler, RequestRecord
from lanemon.results.requests import RequestError

BENCH = "race"


@dataclass
class RaceLane:
    """One lane's entry in one race."""

    name: str
    rec: RequestRecord | None = None
    """The request's record: open (streaming) until ``done``/``error``, then final."""
    rank: int | None = None
    """Finish order among the lanes that completed (1 = first); None while running, on error, and for a
    truncated or empty reply (those never win)."""
    _final: RequestMetrics | None = None

    @property
    def started(self) -> bool:
        return self.rec is not None and self.rec.sent_ns is not None

    @property
    def finished(self) -> bool:
        return self.rec is not None and self.rec.finished

    @property
    def ok(self) -> bool:
        """The request is complete (a finish_reason and at least one token; measure/records.py)."""
        return self.rec is not None and self.rec.ok

    @property
    def outcome(self) -> str | None:
        """``complete`` / ``truncated`` / ``empty`` / ``error``; None while running."""
        return self.rec.outcome if self.rec is not None else None

    @property
    def text(self) -> str:
        return self.rec.text if self.rec is not None else ""

    @property
    def reasoning_text(self) -> str:
        """The streamed reasoning (thinking models), kept apart from :attr:`text`."""
        return self.rec.reasoning_text if self.rec is not None else ""

    @property
    def error(self) -> RequestError | None:
        return self.rec.error if self.rec is not None else None

    def metrics(self, now_ns: int | None = None) -> RequestMetrics | None:
        """Final metrics once finished; while streaming, metrics as if it ended at the last token.

        The live figures are a progress view (``request_metrics`` on the
        record so far); the final ones replace them when the request ends.
        """
        rec = self.rec
        if rec is None or rec.sent_ns is None:
            return None
        if rec.finished:
            if self._final is None:
                self._final = metrics.request_metrics(rec)
            return self._final
        end = rec.token_ns[-1] if rec.token_ns else now_ns
        if end is None or end < rec.sent_ns:
            return None
        # a progress view of a stream still running: judged as if it had just completed (the final figures,
        # with the real outcome, replace these when it ends)
        return metrics.request_metrics(dataclasses.replace(rec, end_ns=end, finish_reason=rec.finish_reason or "…"))

    def elapsed_s(self, now_ns: int) -> float | None:
        """Seconds since the request was sent (up to its end once finished)."""
        rec = self.rec
        if rec is None or rec.sent_ns is None:
            return None
        end = rec.end_ns if rec.end_ns is not None else max(now_ns, rec.sent_ns)
        return (end - rec.sent_ns) / metrics.NS


@dataclass
class RaceView:
    """One race: its prompt, its lanes and their requests, in lane order."""

    index: int
    prompt: str = ""
    prompt_id: str | None = None
    category: str | None = None
    endpoint: str | None = None
    max_tokens: int | None = None
    start_t: int | None = None
    end_t: int | None = None
    stopped: bool = False
    """The end mark says the race was cancelled (Ctrl-C, quit) before every lane finished."""
    slo: dict[str, float] | None = None
    """``--slo`` targets recorded in the start mark (goodput), or None."""
    lanes: dict[str, RaceLane] = field(default_factory=dict)
    _finished_order: list[str] = field(default_factory=list)

    @property
    def ended(self) -> bool:
        """The end mark was seen (every lane finished or the race was stopped)."""
        return self.end_t is not None

    @property
    def finished(self) -> bool:
        """Every lane's request has finished (ok or error)."""
        return bool(self.lanes) and all(lane.finished for lane in self.lanes.values())

    @property
    def complete(self) -> bool:
        return self.ended or self.finished

    def lane(self, name: str) -> RaceLane:
        entry = self.lanes.get(name)
        if entry is None:
            entry = self.lanes[name] = RaceLane(name)
        return entry

    @property
    def ranking(self) -> list[str]:
        """Lanes that completed, in finish order."""
        return list(self._finished_order)

    @property
    def winner(self) -> str | None:
        return self._finished_order[0] if self._finished_order else None


class RaceState:
    """Every race seen in an event stream, rebuilt identically from live or replayed events."""

    def __init__(self) -> None:
        self.races: dict[int, RaceView] = {}
        self.version = 0
        self.last_t = 0
        self._asm = Assembler(keep_text=True)
        self._req_race: dict[str, int] = {}

    # -- queries ---------------------------------------------------------------
    @property
    def latest(self) -> RaceView | None:
        """The race with the highest index (the one running, or the last recorded)."""
        return self.races[max(self.races)] if self.races else None

    @property
    def running(self) -> bool:
        race = self.latest
        return race is not None and not race.complete

    def race(self, index: int) -> RaceView:
        view = self.races.get(index)
        if view is None:
            view = self.races[index] = RaceView(index)
        return view

    # -- the fold --------------------------------------------------------------
    def apply_token(self, ev: Event) -> None:
        """:meth:`apply` for a ``token`` event: nothing unless its request is a race's."""
        if ev.req is not None and ev.req in self._req_race:
            self.apply(ev)

    def apply(self, ev: Event) -> None:
        """Apply one event (cheap for events that are not part of a race)."""
        kind = ev.kind
        if kind == schema.MARK:
            d = ev.data
            if d.get("bench") != BENCH or not isinstance(d.get("race"), int):
                return
            self._mark(ev)
        elif kind in schema.REQUEST_KINDS and ev.req is not None:
            if kind == schema.REQUEST:
                d = ev.data
                if d.get("bench") != BENCH or not isinstance(d.get("race"), int):
                    return
                self._req_race[ev.req] = d["race"]
            index = self._req_race.get(ev.req)
            if index is None:
                return
            self._request_event(index, ev)
        else:
            return
        self.version += 1
        self.last_t = max(self.last_t, ev.t)

    def _mark(self, ev: Event) -> None:
        d = ev.data
        view = self.race(d["race"])
        if d.get("phase") == "start":
            view.start_t = ev.t
            view.prompt = str(d.get("prompt", view.prompt) or "")
            view.prompt_id = d.get("prompt_id", view.prompt_id)
            view.category = d.get("category", view.category)
            view.endpoint = d.get("endpoint", view.endpoint)
            view.max_tokens = d.get("max_tokens", view.max_tokens)
            view.slo = d.get("slo") or view.slo
            for name in d.get("lanes") or ():
                view.lane(str(name))
        elif d.get("phase") == "end":
            view.end_t = ev.t
            view.stopped = bool(d.get("stopped"))

    def _request_event(self, index: int, ev: Event) -> None:
        view = self.race(index)
        lane = view.lane(ev.lane or "?")
        if ev.kind == schema.REQUEST:
            self._asm.apply(ev)
            lane.rec = self._asm.open.get(ev.req)  # the record the assembler keeps filling
            if view.start_t is None:
                view.start_t = ev.t
            if view.endpoint is None:
                view.endpoint = ev.data.get("endpoint")
            if view.prompt_id is None:
                view.prompt_id = ev.data.get("prompt_id")
            return
        done = self._asm.apply(ev)
        if lane.rec is None:  # joined mid-request (e.g. a recording cut at the start)
            lane.rec = done or self._asm.open.get(ev.req)
        if done is not None:
            self._req_race.pop(ev.req, None)
            if done.ok:
                view._finished_order.append(lane.name)
                lane.rank = len(view._finished_order)
