"""Everything a recording measured, as one JSON-able dict (pure, no Textual).

:func:`analyze` takes a :class:`~lanemon.record.replay.Recording`, a path, a
``(header, events)`` pair or a plain list of events and returns::

    {"environment": {...},            # from the header (and lane/probe events)
     "decode": {...}, "prefill": {...}, "needles": {...}, "race": {...},
     "warnings": [...]}

Only the benches the recording holds appear.  Each bench dict is exactly what
that bench's own results function returns for the same events
(:func:`lanemon.workloads.ladder.decode_results`,
:func:`lanemon.workloads.prefill.prefill_results`,
:func:`lanemon.workloads.needles.needle_results`,
:func:`lanemon.workloads.race.race_results`), so a report built from a
recording says what ``--json`` said when the run finished.  Reports
(:mod:`lanemon.record.report`) render this dict.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lanemon import __version__
from lanemon.record import schema
from lanemon.record.replay import Recording
from lanemon.record.schema import Event

BENCHES = ("decode", "prefill", "needles", "race")
"""Bench names in report order."""

RESULT_FUNCTIONS: dict[str, tuple[str, str]] = {
    "decode": ("lanemon.workloads.ladder", "decode_results"),
    "prefill": ("lanemon.workloads.prefill", "prefill_results"),
    "needles": ("lanemon.workloads.needles", "needle_results"),
    "race": ("lanemon.workloads.race", "race_results"),
}


def benches_in(events: Iterable[Event]) -> list[str]:
    """The benches whose requests or markers appear in ``events``, in report order."""
    seen: set[str] = set()
    for ev in events:
        if ev.kind in (schema.REQUEST, schema.MARK):
            bench = ev.data.get("bench")
            if bench in RESULT_FUNCTIONS:
                seen.add(bench)
    return [b for b in BENCHES if b in seen]


def results_function(bench: str):
    """The results function for ``bench``, or None when that workload is not available."""
    module_name, attr = RESULT_FUNCTIONS[bench]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, attr, None)


def environment(header: dict[str, Any] | None, events: Sequence[Event] = ()) -> dict[str, Any]:
    """Lanes, versions, date, command and host of a session (from its header and lane events)."""
    header = header or {}
    lanes: dict[str, dict[str, Any]] = {}
    for lane in header.get("lanes") or []:
        if isinstance(lane, dict) and lane.get("name"):
            lanes[lane["name"]] = {"name": lane["name"], "url": lane.get("url"), "model": lane.get("model")}
    for ev in events:
        if ev.lane is None:
            continue
        if ev.kind == schema.LANE:
            info = lanes.setdefault(ev.lane, {"name": ev.lane, "url": None, "model": None})
            info["url"] = info.get("url") or ev.data.get("url")
            info["model"] = info.get("model") or ev.data.get("model")
        elif ev.kind in (schema.PROBE, schema.REQUEST):
            info = lanes.setdefault(ev.lane, {"name": ev.lane, "url": None, "model": None})
            if not info.get("model") and ev.data.get("model"):
                info["model"] = ev.data["model"]
    duration = None
    if events:
        duration = round(max(ev.t for ev in events) / 1e9, 3)
    return {
        "lanes": list(lanes.values()),
        "lanemon": header.get("lanemon"),
        "reported_by": __version__,
        "schema": header.get("version"),
        "created": header.get("created"),
        "command": header.get("command"),
        "host": dict(header.get("host") or {}),
        "duration_s": duration,
        "events": len(events),
    }


def _load(source: Any) -> tuple[dict[str, Any] | None, list[Event], list[str], str | None]:
    if isinstance(source, (str, Path)):
        source = Recording(source)
    if isinstance(source, Recording):
        events = list(source.events())
        return source.header, events, list(source.warnings), str(source.path)
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[0], (dict, type(None))):
        return source[0], list(source[1]), [], None
    return None, list(source), [], None


def analyze(source: Any, *, benches: Sequence[str] | None = None) -> dict[str, Any]:
    """Results of every bench in ``source`` plus the session's environment.

    ``source`` is a Recording, a path (``RecordingError`` if it is not a
    recording), a ``(header, events)`` pair or an iterable of events.
    ``benches`` restricts the analysis (default: whatever the events hold).
    """
    header, events, warnings, path = _load(source)
    out: dict[str, Any] = {"environment": environment(header, events)}
    if path is not None:
        out["environment"]["recording"] = path
    for bench in benches or benches_in(events):
        fn = results_function(bench)
        if fn is None:
            warnings.append(f"the recording holds {bench} data but this lanemon cannot analyse it")
            continue
        try:
            out[bench] = fn(events)
        except Exception as exc:  # one broken bench must not hide the others
            warnings.append(f"{bench}: results could not be computed ({type(exc).__name__}: {exc})")
    out["warnings"] = warnings
    return out
