"""What is attached to every bench result beside lanemon's own figures, in one place.

The engine's own view (``/metrics`` over the same interval), the GPU's energy and cost, and the engine's
run-scoped counters per cell.  A live run's ``results()``, every report and every replay call this one
function, so a recording gives back exactly the figures the run printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.counters import attach_counters
from lanemon.measure.energy import attach_energy
from lanemon.measure.records import reiterable
from lanemon.measure.server import attach_server_views

__all__ = ["attach_engine_views"]


def attach_engine_views(result: Any, events: Sequence[Event]) -> Any:
    """``result`` (a bench's results) with the server view, energy/cost and engine counters attached (in place
    for a dict; a typed result comes back as a new one of its type, the views in it; a result without ``lanes``
    is returned as it is; the engine's views only where some lane was scraped)."""
    from lanemon.results.common import Result, as_result, to_json_obj

    if isinstance(result, Result):  # the attach functions fill the JSON form; read back as the same type
        return as_result(attach_engine_views(to_json_obj(result), events), type(result))
    lanes = result.get("lanes")
    if not isinstance(lanes, dict):
        return result
    events = reiterable(events)
    attach_energy(lanes, events)  # joules, tokens per joule, USD per 1M tokens (docs/GPU.md)
    if any(ev.kind == schema.SERVER_METRICS for ev in events):
        attach_server_views(lanes, events)  # the engine's own view beside ours (docs/SERVER_METRICS.md)
        attach_counters(lanes, events)  # what the engine did in each cell and load rep (docs/GPU.md)
    return result
