"""The Textual app: thin glue between an event source and the dashboard.

``make_app`` is the one way to build it (CLI and tests alike).  The app folds
every event from ``source.bus`` into a :class:`~lanemon.state.SessionState`
synchronously (cheap) and repaints from that state on a fixed timer, only
when something changed: hundreds of token events per second cost at most
``refresh_hz`` repaints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from lanemon.bus import EventBus
from lanemon.race_state import RaceState
from lanemon.record import schema
from lanemon.record.schema import Event
from lanemon.state import SessionState
from lanemon.ui.screens.dashboard import DashboardScreen
from lanemon.ui.screens.race import RaceScreen, can_race
from lanemon.ui.themes import ThemeError, load_themes, resolve_theme

__all__ = ["LanemonApp", "Source", "ThemeError", "make_app"]


@runtime_checkable
class Source(Protocol):
    """What the UI needs from an event source (live probes, demo, replay)."""

    mode: str
    bus: EventBus
    lanes: list[dict[str, Any]]
    recording_path: Path | None
    paused: bool
    speed: float | None
    finished: bool

    async def run(self) -> None: ...
    def toggle_pause(self) -> bool: ...
    def faster(self) -> None: ...
    def slower(self) -> None: ...
    def stop(self) -> None: ...


class LanemonApp(App):
    """Dashboard over one :class:`Source`."""

    TITLE = "lanemon"
    CSS_PATH = "lanemon.tcss"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("p", "toggle_pause", "Pause/resume"),
        Binding("space", "toggle_pause", "Pause/resume", show=False),
        Binding("plus,equals_sign", "faster", "Faster", key_display="+"),
        Binding("minus", "slower", "Slower", key_display="-"),
        Binding("r", "race", "Race"),
    ]

    def __init__(
        self,
        source: Source,
        *,
        theme: str,
        themes: dict[str, Any],
        theme_warnings: list[str] | None = None,
        refresh_hz: float = 10.0,
        race: Any = None,
    ) -> None:
        super().__init__()
        self.source = source
        self.refresh_hz = refresh_hz
        self.theme_warnings = list(theme_warnings or [])
        for t in themes.values():
            self.register_theme(t)
        self.theme = theme
        self.state = SessionState([(d["name"], d.get("url", ""), d.get("model")) for d in source.lanes])
        self.race_state = RaceState()
        """Every race in the event stream (live or replayed), for the race screen."""
        self.race_plan = race
        """Races to run as soon as the app starts (``lanemon race``); opens the race screen."""
        self._next_prompt: Any = None
        self._unsubscribe: list = []
        self._pending_notes: list[tuple[str, str]] = []
        self._drawn: tuple | None = None
        self.source_error: BaseException | None = None

    # -- lifecycle -----------------------------------------------------------

    def get_default_screen(self) -> DashboardScreen:
        return DashboardScreen(list(self.state.lanes))

    def on_mount(self) -> None:
        bus = self.source.bus
        self._unsubscribe = [bus.subscribe(self.state.apply), bus.subscribe(self.race_state.apply),
                             bus.subscribe(self._collect_note)]
        self.run_worker(self._run_source(), exclusive=True, group="source", exit_on_error=False)
        if self.race_plan is not None:
            plan, self.race_plan = self.race_plan, None
            self.push_screen(self._race_screen(plan))
        self.set_interval(1 / self.refresh_hz, self.redraw)
        self.redraw(force=True)
        for msg in self.theme_warnings:
            self.notify(msg, title="theme", severity="warning", timeout=8, markup=False)

    async def _run_source(self) -> None:
        await self.source.run()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "source":
            return
        if event.state == WorkerState.ERROR:
            self.source_error = event.worker.error
            self.notify(str(event.worker.error), title="event source failed", severity="error", timeout=30, markup=False)
        self.redraw(force=True)

    def on_unmount(self) -> None:
        self.source.stop()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    # -- drawing -------------------------------------------------------------

    def _collect_note(self, ev: Event) -> None:
        """Warnings and errors published as NOTE events become toasts (on the next redraw)."""
        if ev.kind == schema.NOTE and ev.data.get("level") in ("warning", "error"):
            self._pending_notes.append((ev.data["level"], str(ev.data.get("message", ""))))

    def _fingerprint(self) -> tuple:
        s = self.source
        return (self.state.version, self.race_state.version, s.paused, s.speed, s.finished, str(s.recording_path))

    def redraw(self, force: bool = False) -> bool:
        """Repaint from the state if anything changed since the last repaint; True if painted."""
        fp = self._fingerprint()
        if not force and fp == self._drawn:
            return False
        screen = self.screen
        if not isinstance(screen, (DashboardScreen, RaceScreen)) or not screen.is_mounted:
            return False
        self._drawn = fp
        if isinstance(screen, RaceScreen):
            screen.refresh_from(self.race_state, self.state, self.source)
        else:
            screen.refresh_from(self.state, self.source)
        notes, self._pending_notes = self._pending_notes[-3:], []
        for level, message in notes:
            self.notify(message, severity="error" if level == "error" else "warning", timeout=10, markup=False)
        return True

    # -- actions -------------------------------------------------------------

    def _race_screen(self, plan: Any = None) -> RaceScreen:
        racing = can_race(self.source)
        if racing and self._next_prompt is None:
            from lanemon.workloads.race import PromptCycle

            self._next_prompt = PromptCycle()
        return RaceScreen(list(self.state.lanes), racing=racing, next_prompt=self._next_prompt, plan=plan)

    def action_race(self) -> None:
        """Open the race screen: a prompt input on a live source, the recorded races in a replay."""
        if isinstance(self.screen, RaceScreen):
            return
        self.push_screen(self._race_screen())
        self.call_after_refresh(self.redraw, True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("faster", "slower"):
            return self.source.mode == "replay"
        return True

    def action_toggle_pause(self) -> None:
        paused = self.source.toggle_pause()
        self.redraw(force=True)
        what = {"replay": "playback", "attach": "display"}.get(self.source.mode, "probes")
        self.notify(f"{what} {'paused' if paused else 'resumed'}", timeout=2)

    def action_faster(self) -> None:
        self.source.faster()
        self.redraw(force=True)

    def action_slower(self) -> None:
        self.source.slower()
        self.redraw(force=True)

    async def action_quit(self) -> None:
        self.source.stop()
        self.exit()


def make_app(source: Source, *, theme: str | None = None, refresh_hz: float = 10.0, race: Any = None) -> LanemonApp:
    """Build the dashboard app for ``source`` (the CLI and every test use this).

    Raises :class:`ThemeError` when ``theme`` names no known theme; the message
    lists the available names.  ``race`` (a :class:`~lanemon.workloads.race.RacePlan`)
    opens the race screen at start and runs those races through ``source.race``.
    """
    if refresh_hz <= 0:
        raise ValueError("refresh_hz must be positive")
    warnings: list[str] = []
    themes = load_themes(warnings=warnings)
    name = resolve_theme(theme, themes)
    return LanemonApp(source, theme=name, themes=themes, theme_warnings=warnings, refresh_hz=refresh_hz, race=race)
