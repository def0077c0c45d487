"""The app's small helpers: the empty source of a static screen, which screen a source's run
showed, what a marker marks, and the copy of a fold a replay's snapshot keeps (no widgets here)."""

from __future__ import annotations

import copy
from typing import Any

from lanemon.bus import EventBus, FixedPace
from lanemon.public_lane import PublicLane
from lanemon.events import Event
from lanemon.folds.bench import BENCH_KINDS, cell_label

__all__ = ["NoSource", "copy_fold", "marker_text", "workload_of"]


class NoSource(FixedPace):
    """The source of a static screen (compare): nothing runs, nothing arrives."""

    mode = "static"
    lanes: list[PublicLane] = []
    recording_path = None
    finished = True

    def __init__(self) -> None:
        self.bus = EventBus()

    async def run(self) -> None:
        return None

    def stop(self) -> None:
        return None


def workload_of(source: Any) -> tuple[str | None, str | None]:
    """(screen, bench kind) the run behind ``source`` showed: from a bench run's ``kind`` or a
    recording's header (``bench``: decode / prefill / needles / gauntlet / race; ``command`` agree / kl /
    qeval: the result screen, kind = the command)."""
    if getattr(source, "mode", None) == "bench" and getattr(source, "kind", None) in BENCH_KINDS:
        return "bench", source.kind
    if getattr(source, "mode", None) == "bench" and getattr(source, "kind", None) in ("load", "sweep"):
        return "result", source.kind  # their table as reps / levels end (the result screen, from the run's events)
    header = getattr(getattr(source, "recording", None), "header", None)
    bench = header.get("bench") if isinstance(header, dict) else None
    if bench in BENCH_KINDS:
        return "bench", bench
    if bench in ("gauntlet", "race"):
        return bench, None
    if bench in ("load", "sweep"):  # their tables are the report's (reports/tables.py): the result screen
        return "result", bench
    command = header.get("command") if isinstance(header, dict) else None
    if command in ("agree", "kl", "qeval"):  # headless workloads: their results screen
        return "result", command
    return None, None


def marker_text(ev: Event) -> str:
    """What a mark marks, short: ``C4 · B``, ``coding C1 · A``, ``12K tok · B ✓`` (a cell's end),
    ``race 3``, ``rep 2 · A``; else its label."""
    d = ev.data
    label = str(d.get("label", "mark"))
    lane = f" · {ev.lane}" if ev.lane else ""
    end = " ✓" if d.get("phase") in ("end", "rep_end") and ev.lane else ""
    if label == "cell" or d.get("part") is not None:
        text = cell_label(str(d.get("bench", "")), {k: v for k, v in d.items() if k != "rep"})
        return f"{text}{lane}{end}"
    if d.get("phase") in ("rep_start", "rep_end") and d.get("rep") is not None:
        return f"rep {int(d['rep']) + 1}{lane}{end}"
    if d.get("race") is not None:
        return f"race {d['race']}{' end' if d.get('phase') == 'end' else ''}"
    return f"{label}{lane}"


def copy_fold(fields: dict[str, Any]) -> dict[str, Any]:
    """A copy of a fold's fields for a replay snapshot: deep, except the request timeline's
    ``bars`` (400 per cell and lane, folds/requests.py): a finished bar never changes again, so it is shared, not copied."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "bars" and isinstance(value, dict):
            out[key] = {req: (bar if getattr(bar, "finished", False) else copy.copy(bar)) for req, bar in value.items()}
        else:
            out[key] = copy.deepcopy(value)
    return out
