"""What is attached to every bench result beside lanemon's own figures, in one place.

The engine's own view (``/metrics`` over the same interval), the GPU's energy and cost, and the engine's
run-scoped counters per cell.  A live run's ``results()``, every report and every replay call this one
function, so a recording gives back exactly the figures the run printed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lanemon.events import Event
from lanemon.measure.counters import attach_counters
from lanemon.measure.energy import attach_energy
from lanemon.measure.server import attach_server_views

__all__ = ["attach_engine_views"]


def attach_engine_views(result: dict[str, Any], events: Sequence[Event]) -> dict[str, Any]:
    """``result`` (a bench's results) with the server view, energy/cost and engine counters attached."""
    attach_server_views(result, events)  # the engine's own view beside ours (docs/SERVER_METRICS.md)
    attach_energy(result, events)  # joules, tokens per joule, USD per 1M tokens (docs/GPU.md)
    attach_counters(result, events)  # what the engine did in each cell (docs/GPU.md)
    return result
