"""What a ``mark`` event's data may hold, typed: the keys every bench's marks share (:class:`MarkKeys`), the keys
that name a bench cell (:class:`CellKeys`), its start (:class:`CellStart`) and end (:class:`CellEnd`), and a plan
entry of a bench's start mark (:class:`PlanMark`).

Marks are written free-form (``harness.mark(label, lane, **data)``); these Structs are the one model of what they
carry.  workloads/bench/marks.py reads a bench's marks back with them; recording/schema.py makes the recording
checker of the ``mark`` kind from :data:`MARK_MODELS`, so a key added here is checked in recordings too.  Here,
below the workloads and the recording, so both read the same model.
"""

from __future__ import annotations

import msgspec

Key = str | int | float | bool | None
"""An identifier-like value: any scalar, never a list or an object."""


class MarkKeys(msgspec.Struct, kw_only=True):
    """The keys of any mark (every bench's, the race's, qeval's, gauntlet's ...): its label, which bench, which
    phase, and the counts a bench's marks carry (each bench's own keys beyond these are kept unchecked)."""

    label: str | None = None
    bench: Key = None
    phase: Key = None
    cell: Key = None
    """A bench cell's id (a string in lanemon's benches; :class:`CellStart` reads only those)."""
    errors: float | None = None
    interrupted: bool | None = None
    race: Key = None
    requests: float | None = None
    tasks: float | None = None
    total: float | None = None
    hops: float | None = None
    turn: float | None = None
    turns: float | None = None
    calls: float | None = None
    tool_calls: float | None = None
    malformed_calls: float | None = None
    wall_s: float | None = None


class PlanMark(msgspec.Struct):
    """A plan entry of a recorded start mark: only ``cell`` is read back (what an interrupted run never ran)."""

    cell: str


class CellKeys(msgspec.Struct, kw_only=True):
    """The keys that name a bench cell: its id, its lane, the part of the bench, its level, length or category, its
    rep and how many requests it sends.  One definition for a cell a bench plans (workloads/bench/marks.PlannedCell,
    every plan sets ``lane``, ``cell``, ``part`` and ``rep``) and a cell's start mark read back
    (:class:`CellStart`)."""

    cell: str = ""
    lane: str | None = None
    part: str | None = None
    level: int | None = None
    length: int | None = None
    category: str | None = None
    rep: int | None = None
    requests: int | None = None


class CellStart(CellKeys, kw_only=True):
    """A cell's start mark, read back: its lane (the event's) and the keys the results group it by."""

    span_s: float | None = None
    """The open-loop schedule's span, s (``bench load``)."""


class CellEnd(msgspec.Struct, kw_only=True):
    """A cell's end mark, read back: why it failed or was skipped, and the calibration's findings (prefill,
    needles)."""

    error: str | None = None
    skipped: bool = False
    tokens_per_char: float | None = None
    counted_from: str | None = None
    calibration_prompt_tokens: int | None = None
    max_context: int | None = None
    max_context_source: str | None = None


MARK_MODELS: tuple[type[msgspec.Struct], ...] = (MarkKeys, CellStart, CellEnd)
"""Every model of a mark's data, the first naming a key deciding its type (``cell``: any scalar in a mark,
a string in a bench cell's)."""
