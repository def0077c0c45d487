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


def simulated_lanes(header: dict[str, Any] | None, events: Iterable[Event]) -> list[str]:
    """Names of the simulated lanes of one recording, in first-seen order."""
    header = header or {}
    names: list[str] = []
    marked: list[str] = []
    whole = str(header.get("command") or "").split(" ")[0] == "demo" or bool(header.get("demo"))
    for lane in header.get("lanes") or []:
        if isinstance(lane, dict) and lane.get("name"):
            names.append(str(lane["name"]))
            if lane.get("simulated"):
                marked.append(str(lane["name"]))
    for ev in events:
        if ev.lane is not None and ev.lane not in names:
            names.append(ev.lane)
        d = ev.data or {}
        if ev.kind in (schema.PROBE, schema.LANE) and ev.lane and d.get("simulated") is True:
            marked.append(ev.lane)
        elif (ev.kind == schema.MARK and d.get("label") == "bench" and d.get("phase") == "start"
              and isinstance(d.get("config"), dict) and d["config"].get("time_scale") is not None):
            whole = True
    if whole:
        return names
    return [n for n in names if n in set(marked)]


def banner(lanes: Iterable[str]) -> str | None:
    """The one-line warning for the top of a report / compare / export (None when nothing is simulated)."""
    names = list(lanes)
    if not names:
        return None
    who = f"lane{'s' if len(names) > 1 else ''} {', '.join(names)} {'are' if len(names) > 1 else 'is'}"
    return BANNER.format(lanes=who)


__all__ = ["BANNER", "OWNER", "banner", "simulated_lanes"]
