"""What is attached to every bench result beside lanemon's own figures, in one place.

The engine's own view (``/metrics`` over the same interval), the GPU's energy and cost, and the engine's
run-scoped counters per cell.  A live run's ``results()``, every report and every replay call this one
function, so a recording gives back exactly the figures the run printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_type_hints

import msgspec

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.counters import attach_counters
from lanemon.measure.energy import attach_energy
from lanemon.measure.records import reiterable
from lanemon.measure.server import attach_server_views
from lanemon.results.common import Result, to_json_obj

__all__ = ["attach_engine_views"]


def attach_engine_views(result: Any, events: Sequence[Event]) -> Any:
    """``result`` (a bench's typed result, or its JSON dict) with the server view, energy/cost and engine counters
    attached (in place; a result without ``lanes`` is returned as it is; the engine's views only where some lane
    was scraped).  A typed result's lanes are attached as their JSON and read back as their own types: a key the
    attachment adds that its Struct does not name fails loudly (msgspec.ValidationError)."""
    if isinstance(result, Result):
        lanes_obj = getattr(result, "lanes", None)
        if not isinstance(lanes_obj, dict):
            return result
        lanes = {name: to_json_obj(lane) for name, lane in lanes_obj.items()}
        _attach(lanes, reiterable(events))
        result.lanes = msgspec.convert(lanes, get_type_hints(type(result))["lanes"], strict=False)
        return result
    lanes = result.get("lanes")
    if not isinstance(lanes, dict):
        return result
    _attach(lanes, reiterable(events))
    return result


def _attach(lanes: dict[str, Any], events: Sequence[Event]) -> None:
    attach_energy(lanes, events)  # joules, tokens per joule, USD per 1M tokens (docs/GPU.md)
    if any(ev.kind == schema.SERVER_METRICS for ev in events):
        attach_server_views(lanes, events)  # the engine's own view beside ours (docs/SERVER_METRICS.md)
        attach_counters(lanes, events)  # what the engine did in each cell and load rep (docs/GPU.md)
