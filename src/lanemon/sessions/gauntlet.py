"""The gauntlet as an event source for the UI (the Source protocol of lanemon.sessions)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lanemon.bus import EventBus, FixedPace
from lanemon.config import LaneConfig
from lanemon.public_lane import PublicLane
from lanemon.events import Clock, Event
from lanemon.results.gauntlet import GauntletResult
from lanemon.workloads.gauntlet.config import GauntletConfig
from lanemon.workloads.gauntlet.results import gauntlet_results
from lanemon.workloads.gauntlet.run import run_gauntlet
from lanemon.workloads.harness import Harness, LaneDown

# ---------------------------------------------------------------------------
# A Source for the TUI (Source protocol of lanemon.ui.app)
# ---------------------------------------------------------------------------


class GauntletSource(FixedPace):
    """Runs the gauntlet on its own bus; the gauntlet TUI subscribes to ``bus``."""

    def __init__(self, lanes: Sequence[LaneConfig], config: GauntletConfig, *, mode: str = "live",
                 recorder: Any = None, bus: EventBus | None = None, clock: Clock | None = None) -> None:
        self.mode = mode
        self.bus = bus or EventBus()
        self.lane_configs = list(lanes)
        self.config = config
        self.recorder = recorder
        self.recording_path: Path | None = getattr(recorder, "path", None)
        self.finished = False
        self.interrupted = False
        self.result: GauntletResult | None = None
        self.error: str | None = None
        self.harness = Harness(self.lane_configs, bus=self.bus, clock=clock, recorder=recorder)
        if recorder is not None:
            recorder.on_error = lambda message: self.harness.note(message, "error")

    @property
    def lanes(self) -> list[PublicLane]:
        return [lane.shown(self.harness.clients[lane.name].model) for lane in self.lane_configs]

    @property
    def events(self) -> list[Event]:
        return self.harness.events

    async def run(self) -> None:
        try:
            self.result = await run_gauntlet(self.harness, self.config)
            self.finished = True
        except LaneDown as exc:
            self.error = str(exc)
            self.harness.note(str(exc), "error")
        except asyncio.CancelledError:
            self.interrupted = True
            raise
        finally:
            await self.harness.aclose()

    def results(self) -> GauntletResult:
        return gauntlet_results(self.harness.events)

    def now_ns(self) -> int:
        """The session clock (the screen's elapsed time ticks between events)."""
        return self.harness.clock.now()

    def stop(self) -> None:
        """Stopping is cancelling the worker running :meth:`run` (the app does that on quit)."""
        if not self.finished:
            self.interrupted = True
