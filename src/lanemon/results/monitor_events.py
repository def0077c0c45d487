"""What a monitor writes about a lane, typed: an alert that fired or resolved (:class:`AlertEvent`, the ``alert``
event's data and an alert command's stdin) and a lane that went down or came back (:class:`LaneDown` /
:class:`LaneUp`, the ``lane_state`` event's data; :data:`LaneState` is either, told apart by ``state``).

The producers (measure/alerts.py ``Transition.event``, folds/monitor.py ``LaneChange.event``) build these; the event
carries :func:`event_data` of one, the JSON object recordings have always held (same keys, same values, same
order; docs/RECORDING.md, docs/MONITOR.md).  recording/schema.py makes the recording checker of both kinds from
these models, and the readers decode them here (the dashboard's alert log: :func:`read_alert_leniently`, a cut
alert shown too).  Here, below the measures, the folds,
the recording and the UI, so all of them read the same model.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

FIRING, RESOLVED = "firing", "resolved"
DOWN, UP = "down", "up"


class AlertEvent(msgspec.Struct, kw_only=True):
    """An alert rule fired or resolved on one lane (``alert`` event; every key always written)."""

    state: str
    """``firing`` or ``resolved``."""
    alert: str
    """The rule's label (its name, else its text with ``for``)."""
    rule: str
    """The rule's condition as written."""
    for_s: float
    """How long the condition must hold before it fires, s."""
    severity: str
    lane: str
    values: dict[str, float | None]
    """The rule's figures at this evaluation (None: not measured), rounded to 6 decimals."""
    since_s: float
    """Session time the condition started to hold (firing) / the alert had fired (resolved), s."""
    t_s: float
    """Session time of this transition, s."""


class LaneDown(msgspec.Struct, tag_field="state", tag=DOWN, kw_only=True):
    """A lane's health probe failed (``lane_state`` event, ``state`` ``down``)."""

    t_s: float
    cls: str | None
    """The probe's error class (connect, timeout, http, ...); null when it named none."""
    message: str
    """Why (the probe's error, escapes stripped, bounded)."""


class LaneUp(msgspec.Struct, tag_field="state", tag=UP, kw_only=True):
    """A lane that was down answered its health probe again (``lane_state`` event, ``state`` ``up``)."""

    t_s: float
    since_s: float
    """Session time it went down, s."""
    down_s: float | None
    """How long it was down, s."""


LaneState = LaneDown | LaneUp
"""A ``lane_state`` event's data, told apart by its ``state``."""

MODELS: dict[str, tuple[type[msgspec.Struct], ...]] = {"alert": (AlertEvent,), "lane_state": (LaneDown, LaneUp)}
"""kind -> the model(s) of its data (recording/schema.py makes the checkers from these)."""


def event_data(model: AlertEvent | LaneDown | LaneUp) -> dict[str, Any]:
    """The JSON object the event carries: every field in its order (a tagged model's ``state`` first)."""
    return msgspec.to_builtins(model)


def read_alert(data: dict[str, Any]) -> AlertEvent | None:
    """A recorded ``alert`` event's data as :class:`AlertEvent` (keys it does not name ignored), or None when it
    does not fit (a key missing, a value of the wrong type: a recording's or a publisher's bytes are untrusted)."""
    try:
        return msgspec.convert(data, AlertEvent)
    except msgspec.ValidationError:
        return None


def read_lane_state(data: dict[str, Any]) -> LaneDown | LaneUp | None:
    """A recorded ``lane_state`` event's data as :class:`LaneDown` / :class:`LaneUp`, or None when it does not fit."""
    try:
        return msgspec.convert(data, LaneState)
    except msgspec.ValidationError:
        return None


_STAND_IN = AlertEvent(state="?", alert="", rule="", for_s=math.nan, severity="warning", lane="", values={},
                       since_s=math.nan, t_s=math.nan)
"""What :func:`read_alert_leniently` puts for a field an alert's data lacks or holds of the wrong type: the shown
ones a placeholder, the times NaN (not known: the dashboard shows the event's own time, never these)."""


def read_alert_leniently(data: dict[str, Any]) -> AlertEvent:
    """A recorded ``alert`` event's data as :class:`AlertEvent` whatever it holds, for a view that shows every alert:
    :func:`read_alert`'s when it fits; else (a cut or odd recording: a key missing, a value of the wrong type) each
    field that fits taken and the others at their stand-in (:data:`_STAND_IN`)."""
    alert = read_alert(data)
    if alert is not None:
        return alert
    alert = msgspec.structs.replace(_STAND_IN, values={})
    for f in msgspec.structs.fields(AlertEvent):
        if f.name in data:
            try:
                setattr(alert, f.name, msgspec.convert(data[f.name], f.type))
            except msgspec.ValidationError:
                pass
    return alert
