"""The Textual app: thin glue between an event source and the dashboard.

``make_app`` is the one way to build it (CLI and tests alike).  The app folds
every event from ``source.bus`` into a :class:`~lanemon.folds.dashboard.SessionState`
synchronously (cheap) and repaints from that state on a fixed timer, only
when something changed: hundreds of token events per second cost at most
``refresh_hz`` repaints.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from textual.app import App
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.worker import Worker, WorkerState

from lanemon.bus import EventBus
from lanemon.folds.race import RaceState
from lanemon.folds.requests import RequestTimeline
from lanemon import events as schema
from lanemon.events import Event
from lanemon.folds.dashboard import SessionState
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
        Binding("t", "timeline", "Timeline"),
        # replay seeking (hidden on live sources by check_action)
        Binding("left", "seek_by(-10)", "back 10 s", key_display="←", group=Binding.Group("±10s", compact=True)),
        Binding("right", "seek_by(10)", "forward 10 s", key_display="→", group=Binding.Group("±10s", compact=True)),
        Binding("left_square_bracket", "seek_marker(-1)", "previous marker", key_display="[",
                group=Binding.Group("marker", compact=True)),
        Binding("right_square_bracket", "seek_marker(1)", "next marker", key_display="]",
                group=Binding.Group("marker", compact=True)),
        Binding("home", "seek_start", "to start", show=False),
        Binding("end", "seek_end", "to end", show=False),
        Binding("h", "toggle_host", "Host"),
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
        self.timeline = RequestTimeline()
        """Every request as a bar over time, for the timeline screen (``t``)."""
        self.race_plan = race
        """Races to run as soon as the app starts (``lanemon race``); opens the race screen."""
        self._next_prompt: Any = None
        self._unsubscribe: list = []
        self._pending_notes: list[tuple[str, str]] = []
        self._drawn: tuple | None = None
        self.source_error: BaseException | None = None

    # -- lifecycle -----------------------------------------------------------

    def get_default_screen(self) -> DashboardScreen:
        return DashboardScreen(list(self.state.lanes), source=self.source)

    def on_mount(self) -> None:
        bus = self.source.bus
        self._unsubscribe = [bus.subscribe(self.state.apply), bus.subscribe(self.race_state.apply),
                             bus.subscribe(self.timeline.apply), bus.subscribe(self._collect_note)]
        if hasattr(self.source, "attach_state"):  # a seekable replay: backward seeks restore our folds
            self.source.attach_state(self._snapshot_states, self._restore_states)
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
        try:
            if isinstance(screen, RaceScreen):
                screen.refresh_from(self.race_state, self.state, self.source)
            else:
                screen.refresh_from(self.state, self.source)
        except NoMatches:
            # a panel mounted this frame has not composed its children yet (or the app is
            # shutting down): leave the fingerprint stale so the next tick draws everything
            return False
        self._drawn = fp
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

    def action_timeline(self) -> None:
        """Open the per-request timeline (every request of the session as a bar over time)."""
        from lanemon.ui.screens.timeline import TimelineScreen

        if isinstance(self.screen, TimelineScreen):
            return
        self.push_screen(TimelineScreen(self.timeline))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("faster", "slower"):
            return self.source.mode == "replay"
        if action in ("seek_by", "seek_marker", "seek_start", "seek_end"):
            return self.source.mode == "replay" and hasattr(self.source, "seek")
        if action == "toggle_host":  # the host strip lives on the dashboard only
            return isinstance(self.screen, DashboardScreen)
        return True

    def action_toggle_host(self) -> None:
        """Show or hide the host panel (CPU, memory, network of this machine)."""
        from lanemon.ui.widgets.host_panel import HostPanel

        if isinstance(self.screen, DashboardScreen):
            self.screen.query_one(HostPanel).toggle()
            self.redraw(force=True)

    # -- replay seeking --------------------------------------------------------

    def seekable_states(self) -> list[Any]:
        """Everything folded from the bus that a backward seek must rewind (plain objects)."""
        return [self.state, self.race_state, self.timeline]

    def _snapshot_states(self) -> list[dict[str, Any]]:
        return [copy_fold(obj.__dict__) for obj in self.seekable_states()]

    def _restore_states(self, snapshot: list[dict[str, Any]]) -> None:
        # in place: subscriptions and screens keep pointing at the same objects
        for obj, saved in zip(self.seekable_states(), snapshot):
            obj.__dict__.clear()
            obj.__dict__.update(copy_fold(saved))

    def _seek(self, seek: Callable[[], Awaitable[Any]], what: str) -> None:
        async def run() -> None:
            result = await seek()
            if result is False:
                self.notify(f"no {what}", timeout=2)
            self._drawn = None
            self.redraw(force=True)
            running = any(w.group == "source" and w.state in (WorkerState.PENDING, WorkerState.RUNNING)
                          for w in self.workers)
            if not self.source.finished and not running:  # seeked back after the end: play on
                self.run_worker(self._run_source(), exclusive=True, group="source", exit_on_error=False)

        self.run_worker(run(), group="seek", exclusive=True, exit_on_error=False)

    def seek_to(self, target_ns: int) -> None:
        """Move a replay's playhead to session time ``target_ns`` (the timeline bar's clicks)."""
        if self.check_action("seek_by", ()):
            self._seek(lambda: self.source.seek(target_ns), "position")

    def action_seek_by(self, seconds: float) -> None:
        self._seek(lambda: self.source.seek_relative(float(seconds)), "position")

    def action_seek_marker(self, direction: int) -> None:
        self._seek(lambda: self.source.seek_marker(int(direction)),
                   "next marker" if int(direction) > 0 else "earlier marker")

    def action_seek_start(self) -> None:
        self._seek(lambda: self.source.seek(0), "position")

    def action_seek_end(self) -> None:
        self._seek(lambda: self.source.seek(self.source.duration_ns), "position")

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


def copy_fold(fields: dict[str, Any]) -> dict[str, Any]:
    """A copy of a fold's fields for a replay snapshot: deep, except the request timeline's
    ``bars`` (up to 20,000): a finished bar never changes again, so it is shared, not copied."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "bars" and isinstance(value, dict):
            out[key] = {req: (bar if getattr(bar, "finished", False) else copy.copy(bar)) for req, bar in value.items()}
        else:
            out[key] = copy.deepcopy(value)
    return out


def make_app(source: Source, *, theme: str | None = None, refresh_hz: float = 10.0, race: Any = None) -> LanemonApp:
    """Build the dashboard app for ``source`` (the CLI and every test use this).

    Raises :class:`ThemeError` when ``theme`` names no known theme; the message
    lists the available names.  A theme whose file exists but is broken
    (``<name>.toml`` skipped with a warning) falls back to the default with
    one more warning instead.  ``race`` (a :class:`~lanemon.workloads.race.RacePlan`)
    opens the race screen at start and runs those races through ``source.race``.
    """
    if refresh_hz <= 0:
        raise ValueError("refresh_hz must be positive")
    warnings: list[str] = []
    themes = load_themes(warnings=warnings)
    try:
        name = resolve_theme(theme, themes)
    except ThemeError:
        if not any(f"/{theme}.toml:" in w.replace("\\", "/") for w in warnings):
            raise
        name = resolve_theme(None, themes)  # the chosen theme's file is broken: say so, use the default
        warnings.append(f"theme {theme!r} could not be loaded (see above); using {name}")
    return LanemonApp(source, theme=name, themes=themes, theme_warnings=warnings, refresh_hz=refresh_hz, race=race)
