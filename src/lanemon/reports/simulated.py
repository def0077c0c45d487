"""Which lanes of a recording are lanemon's simulator (pure): reports, compare and exports say so at the top.

A lane counts as simulated when any of these holds:

* its ``/models`` answer said ``owned_by: "lanemon-sim"`` (the client records ``simulated: true`` on the
  ``probe`` event; :mod:`lanemon.client.http`);
* the recording header or a ``lane`` event marks it ``simulated``;
* the session was a ``demo`` (header ``command``), or a bench was run with ``--demo`` (its start mark's
  config carries the simulator's ``time_scale``) -- then every lane of the session is.

The simulator's figures are its profile's model of the write-up's two lanes, some of them scripted to
reproduce the write-up exactly (docs/SIMULATOR.md, "Scripted, not modelled"): a report from them
describes the simulator, not any hardware.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lanemon import events as schema
from lanemon.events import Event

OWNER = "lanemon-sim"
"""``owned_by`` of every model the simulator lists on ``/models``."""

BANNER = ("SIMULATED: {lanes} lanemon's simulator, not a real server. Every figure here shows the simulator's "
          "model of the write-up's lanes (some of it scripted to reproduce the write-up), not any hardware.")


class SimulatedWatch:
    """The rules above, one event at a time: what a live screen reads to say its lanes are simulated (the
    dashboard's and bench's header chips), and what :func:`simulated_lanes` reads a whole recording with."""

    __slots__ = ("names", "marked", "whole")

    def __init__(self, header: dict[str, Any] | None = None) -> None:
        header = header or {}
        self.names: list[str] = []
        self.marked: set[str] = set()
        self.whole = str(header.get("command") or "").split(" ")[0] == "demo" or bool(header.get("demo"))
        """Every lane of the session is simulated (a demo, a ``--demo`` bench)."""
        for lane in header.get("lanes") or []:
            if isinstance(lane, dict) and lane.get("name"):
                self.names.append(str(lane["name"]))
                if lane.get("simulated"):
                    self.marked.add(str(lane["name"]))

    def apply(self, ev: Event) -> bool:
        """One event; True when it changed what :meth:`lanes` answers."""
        changed = False
        if ev.lane is not None and ev.lane not in self.names:
            self.names.append(ev.lane)
            changed = self.whole
        d = ev.data or {}
        if ev.kind in (schema.PROBE, schema.LANE) and ev.lane and d.get("simulated") is True:
            if ev.lane not in self.marked:
                self.marked.add(ev.lane)
                changed = True
        elif (ev.kind == schema.MARK and not self.whole and d.get("label") == "bench" and d.get("phase") == "start"
              and isinstance(d.get("config"), dict) and d["config"].get("time_scale") is not None):
            self.whole = changed = True
        return changed

    def lanes(self) -> list[str]:
        """The simulated lanes, in first-seen order."""
        return list(self.names) if self.whole else [n for n in self.names if n in self.marked]


def simulated_lanes(header: dict[str, Any] | None, events: Iterable[Event]) -> list[str]:
    """Names of the simulated lanes of one recording, in first-seen order."""
    watch = SimulatedWatch(header)
    for ev in events:
        watch.apply(ev)
    return watch.lanes()


def chip_note(simulated: list[str], lanes: Iterable[str]) -> str:
    """What a header chip adds for simulated lanes: ``" · SIM"`` when every lane is, ``" · SIM B"``
    when some are, ``""`` when none is."""
    if not simulated:
        return ""
    if set(lanes) <= set(simulated):
        return " · SIM"
    return " · SIM " + ",".join(simulated)


def banner(lanes: Iterable[str]) -> str | None:
    """The one-line warning for the top of a report / compare / export (None when nothing is simulated)."""
    names = list(lanes)
    if not names:
        return None
    who = f"lane{'s' if len(names) > 1 else ''} {', '.join(names)} {'are' if len(names) > 1 else 'is'}"
    return BANNER.format(lanes=who)


__all__ = ["BANNER", "OWNER", "SimulatedWatch", "banner", "chip_note", "simulated_lanes"]
