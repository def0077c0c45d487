"""The one Textual app: every screen (dashboard, bench, race, gauntlet, compare, timeline) over one source.

``make_app`` is the one way to build it (CLI and tests alike).  The app owns the
plumbing once: the worker that runs the source, the folds subscribed to
``source.bus`` (pure state: :class:`~lanemon.folds.dashboard.SessionState`,
race, request timeline, gauntlet and, for a bench, :mod:`lanemon.folds.bench`),
the one redraw timer and the unsubscribe on unmount.  Every screen draws from
those folds -- live and replay alike -- and never from the run itself.

Which screen opens first: ``screen=`` when given; else a bench run (``mode ==
"bench"``) opens the bench screen, a replayed recording the screen of the
workload that made it (the recording header's ``bench``), a compare result the
compare screen, anything else the dashboard.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from textual.app import App
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from lanemon import events as schema
from lanemon.bus import EventBus
from lanemon.events import Event
from lanemon.folds.bench import BENCH_KINDS, BenchResults, BenchTracker
from lanemon.folds.dashboard import SessionState
from lanemon.folds.gauntlet import GauntletState
from lanemon.folds.race import RaceState
from lanemon.folds.requests import RequestTimeline
from lanemon.folds.series import SeriesState
from lanemon.heap import TRIM_EVERY_S, trim as trim_heap
from lanemon.reports.simulated import SimulatedWatch
from lanemon.sessions.runner import Inbox, SourceThread, measures
from lanemon.ui.commands import key_commands
from lanemon.ui.screen_factory import make_screen
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.screens.dashboard import DashboardScreen
from lanemon.ui.seeking import MARKER_GAP_NS, ReplaySeeking  # noqa: F401  (MARKER_GAP_NS: its old home)
from lanemon.ui.support import NoSource, marker_text, workload_of
from lanemon.ui.themes import ThemeError, load_themes, resolve_theme

if TYPE_CHECKING:
    from textual.theme import Theme

    from lanemon.public_lane import PublicLane
    from lanemon.results.compare import Comparison
    from lanemon.results.monitor_events import AlertEvent
    from lanemon.sessions.sources import MonitorOptions

__all__ = ["LanemonApp", "SCREENS_BY_NAME", "Source", "ThemeError", "make_app"]

SCREENS_BY_NAME = ("dashboard", "bench", "race", "gauntlet", "compare", "timeline", "alerts", "history", "result",
                   "errors")
STOP_GRACE_S = 10.0
"""How long ``q`` waits for a bench to wind down (finished cells and the recording are kept)."""
QUIT_CONFIRM_S = 3.0
"""A second ``q`` within this many seconds stops a running bench."""
EXIT_INTERRUPTED = 130
"""Exit code of a run the user stopped (cli/common.py has the same; ui cannot import cli)."""


@runtime_checkable
class Source(Protocol):
    """What the UI needs from an event source (live probes, demo, replay, a bench or gauntlet run)."""

    mode: str
    bus: EventBus
    lanes: list[PublicLane]
    recording_path: Path | None
    paused: bool
    speed: float | None
    finished: bool

    async def run(self) -> None: ...
    def toggle_pause(self) -> bool: ...
    def faster(self) -> None: ...
    def slower(self) -> None: ...
    def stop(self) -> None: ...


_SIM_KINDS = frozenset((schema.PROBE, schema.LANE, schema.MARK))
"""The events that can say a lane is simulated (reports/simulated.SimulatedWatch)."""

FREEZE_AFTER_S = 2.0
"""Seconds after the app mounted (its first frames drawn, the lanes' first probes out) when the objects it
made so far are moved out of the garbage collector's reach (:func:`freeze_startup`)."""


def freeze_startup() -> int:
    """``gc.freeze()``: every object alive now (Textual's and Rich's modules, the screen's widgets and styles,
    the clients) is left out of every later collection.  A full collection walked them all with every thread
    stopped, each one a starved window of the measuring loop (lanemon's own doing, not the machine's): in
    the demo's first 75 s on main before issue 23's changed-lines work, 100-240 ms every ~7 s; with both,
    16-32 ms every ~23 s (the garbage is mostly Textual strips, whose caches refer to themselves).  Nothing is
    collected first (that would be the same pause); the startup's own garbage, if any, stays (bounded,
    once).  Returns how many objects are frozen."""
    import gc

    gc.freeze()
    return gc.get_freeze_count()


ALERT_LOG_KEEP = 2000
"""Alert transitions the alerts screen keeps (the latest)."""
MAX_LANES = 64
"""Lanes one session shows (as a share header's): more would each cost a panel and a fold."""


class LanemonApp(ReplaySeeking, App):
    """All of lanemon's screens over one :class:`Source`."""

    TITLE = "lanemon"
    CSS_PATH = "lanemon.tcss"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("p", "toggle_pause", "Pause/resume"),
        Binding("space", "toggle_pause", "Pause/resume", show=False),
        Binding("plus,equals_sign", "faster", "faster", key_display="+", group=Binding.Group("speed", compact=True)),
        Binding("minus", "slower", "slower", key_display="-", group=Binding.Group("speed", compact=True)),
        Binding("d", "open('dashboard')", "Dashboard"),
        Binding("b", "open('bench')", "Bench"),
        Binding("g", "open('gauntlet')", "Gauntlet"),
        Binding("r", "open('race')", "Race"),
        Binding("t", "open('timeline')", "Timeline"),
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
        Binding("s", "share_info", "Attach", show=True),  # a shared session: how viewers attach (the token)
        Binding("exclamation_mark", "open('alerts')", "Alerts", key_display="!"),
        Binding("y", "open('history')", "History"),
        # every kept error whole; a lane card that cuts one says 'e: whole' (the footer leaves it out first)
        Binding("e", "open('errors')", "Errors"),
    ]

    def __init__(self, source: Source | None, *, theme: str, themes: dict[str, Theme],
                 theme_warnings: list[str] | None = None, refresh_hz: float = 10.0, race: Any = None,
                 compare: Comparison | None = None, screen: str | None = None) -> None:
        super().__init__()
        self.source: Any = source if source is not None else NoSource()
        self.refresh_hz = refresh_hz
        self.share: Any = None
        """The share publisher while this session is served to viewers (``url``, ``viewers``,
        ``attach_command``): the status bar says so, ``s`` repeats how to attach."""
        self.theme_warnings = list(theme_warnings or [])
        for t in themes.values():
            self.register_theme(t)
        self.theme = theme
        first: dict[str, PublicLane] = {}
        for d in self.source.lanes:
            if d.name:
                first.setdefault(d.name, d)
        lanes = list(first.values())[:MAX_LANES]  # a header may name thousands (see _admit)
        self.state = SessionState([(d.name, d.url, d.model) for d in lanes])
        self.series = SeriesState([d.name for d in lanes])
        """Every finished request as a timed sample, throughput and server metrics: the dashboard's charts."""
        self.race_state = RaceState()
        """Every race in the event stream (live or replayed), for the race screen."""
        self.timeline = RequestTimeline()
        """Every request as a bar over time, for the timeline screen (``t``)."""
        header = getattr(getattr(self.source, "recording", None), "header", None)
        header = header if isinstance(header, dict) else {}
        marked = {x.get("name") for x in header.get("lanes") or [] if isinstance(x, dict) and x.get("simulated")}
        named = [{"name": d.name, "simulated": d.name in marked} for d in lanes]  # a header lane may say it is
        self.simulated = SimulatedWatch({**header, "lanes": named,
                                         **({"demo": True} if getattr(self.source, "mode", None) == "demo" else {})})
        """Which lanes are lanemon's simulator (reports/simulated.py): the header chips say so."""
        self.gauntlet = GauntletState([d.name for d in lanes])
        """The gauntlet's hops per lane (``g``), when the stream has a gauntlet."""
        for d in lanes:
            self.gauntlet.lane(d.name).model = d.model
        start, kind = workload_of(self.source)
        self.result_kind: str | None = None
        """agree / kl / qeval: a headless workload's replay opens its result screen."""
        if start == "result":
            self.result_kind, kind = kind, None
        self.bench: BenchTracker | None = None
        """Progress of the bench in the stream (``b``); None until one starts."""
        self.bench_results: BenchResults | None = None
        """Its results, recomputed per ended cell's group, never from the whole history."""
        if kind is not None:
            self._start_bench(kind)
        self.compare_result = compare
        self.start_screen = screen or ("compare" if compare is not None and source is None else start)
        if self.start_screen not in (None, *SCREENS_BY_NAME):
            raise ValueError(f"unknown screen {self.start_screen!r} (choose: {', '.join(SCREENS_BY_NAME)})")
        self.race_plan = race
        """Races to run as soon as the app starts (``lanemon race``); opens the race screen."""
        self.source_error: BaseException | None = None
        self.stopped_by_user = False
        self._quit_armed_at: float | None = None
        self.redraws = 0
        """How many times a screen was repainted (tests check it stays low)."""
        self.marker_labels: dict[int, str] = {}
        """What each mark seen so far marks (``C4 · B``, ``race 3``), by its time: the timeline bar's label."""
        self._next_prompt: Any = None
        self._inbox: Inbox | None = None
        """Events from a measuring source's thread, folded here on each redraw tick (sessions/runner.py)."""
        self._runner: SourceThread | None = None
        """The measuring source's own loop and thread; None for replays and viewers (they run on ours)."""
        self._unsubscribe: list[Callable[[], None]] = []
        self._pending_notes: list[tuple[str, str]] = []
        self.alert_log: list[tuple[int, str, AlertEvent]] = []
        """Every ``alert`` event seen (time, lane, data): the alerts screen (``!``)."""
        self.alerts_firing: dict[tuple[str, str], int] = {}
        """(lane, alert) -> when it fired, for the alerts firing now (at most ``MAX_FIRING``; the rest counted)."""
        self.lanes_admitted: set[str | None] = {None, *(d.name for d in lanes)}
        """The lanes whose events are folded (at most :data:`MAX_LANES`, in the order they came)."""
        self.lanes_refused: set[str | None] = set()
        """Lanes past the cap (the first :data:`MAX_LANES` of them: a sample for the count)."""
        self.lane_events_refused = 0
        """Events of lanes past the cap: counted, never folded."""
        self.alerts_firing_more = 0
        """Alerts that fired while ``MAX_FIRING`` others were firing: counted, not listed."""
        self._pending_alerts: list[tuple[str, AlertEvent]] = []
        self.monitor: Any = None
        """The live monitor (alert rules, exporter; lanemon.monitor.headless.Monitor) when the source asked for one."""

    # -- folds -----------------------------------------------------------------

    def _start_bench(self, kind: str) -> None:
        self.bench = BenchTracker(kind)
        self.bench_results = BenchResults(kind)

    def _fold(self, ev: Event) -> None:
        """Every event into every fold (cheap per event; the screens draw on the timer).  A request is
        assembled once, by the dashboard's fold; the series fold files the record it hands back."""
        if ev.lane not in self.lanes_admitted and not self._admit(ev.lane):
            return
        rec = self.state.apply(ev)
        if not self.series.apply_event(ev) and rec is not None:
            self.series.add(rec, self.state.last_metrics)
        self.race_state.apply(ev)
        self.timeline.apply(ev)
        self.gauntlet.apply(ev)
        if ev.kind in _SIM_KINDS:
            self.simulated.apply(ev)
        if ev.kind == schema.MARK:
            d = ev.data
            if self.bench is None and d.get("bench") in BENCH_KINDS and d.get("label") == "bench":
                self._start_bench(d["bench"])
            self.marker_labels[ev.t] = marker_text(ev)
        elif ev.kind == schema.NOTE and ev.data.get("level") in ("warning", "error"):
            self._pending_notes.append((ev.data["level"], str(ev.data.get("message", ""))))
        elif ev.kind == schema.ALERT and ev.lane is not None:
            self._alert(ev)
        if self.bench is not None:
            self.bench.apply(ev)
            assert self.bench_results is not None
            self.bench_results.apply(ev)

    def fold_batch(self, events: list[Event]) -> None:
        """Fold a batch in order, as :meth:`_fold` folds each event.  Token events, the bulk of a busy stream
        (64 of every 68 events of a 64-token request), go straight to each fold's ``apply_token``, which
        makes the same changes without testing for every other kind: the UI's fold cost per event is what
        the event changes, not the length of :meth:`_fold`."""
        fold, token = self._fold, schema.TOKEN
        state, series, race = self.state.apply_token, self.series.apply_token, self.race_state.apply_token
        timeline, gauntlet = self.timeline.apply_token, self.gauntlet.apply_token
        admitted, admit = self.lanes_admitted, self._admit
        for ev in events:
            if ev.kind == token and ev.__class__ is Event and self.bench is None:
                if ev.lane not in admitted and not admit(ev.lane):
                    continue
                state(ev)
                series(ev)
                race(ev)
                timeline(ev)
                gauntlet(ev)
            else:
                fold(ev)

    def _admit(self, lane: str | None) -> bool:
        """A lane not seen before joins the session unless :data:`MAX_LANES` have already (a hostile recording
        or publisher may name thousands: each would be a panel and a fold, and the app would stop answering
        keys); the events of the lanes past the cap are counted and said once, never folded."""
        if len(self.lanes_admitted) <= MAX_LANES:  # None (no lane) is one of the members
            self.lanes_admitted.add(lane)
            return True
        if len(self.lanes_refused) < MAX_LANES:
            self.lanes_refused.add(lane)
        self.lane_events_refused += 1
        if self.lane_events_refused == 1:
            self._pending_notes.append(("warning", f"this session names more than {MAX_LANES} lanes: only the "
                                        f"first {MAX_LANES} are shown, the others' events are counted and "
                                        "left out"))
        return False

    def _alert(self, ev: Event) -> None:
        from lanemon.ui.screens.alerts import MAX_FIRING, brief_alert

        d = brief_alert(ev.data)  # what the screens show, bounded: a hostile publisher's alert may be megabytes
        key = (ev.lane or "?", d.alert)
        self.alert_log.append((ev.t, key[0], d))
        del self.alert_log[:-ALERT_LOG_KEEP]
        firing = self.alerts_firing
        if d.state == "firing":
            if key in firing or len(firing) < MAX_FIRING:
                firing[key] = ev.t
            else:  # more distinct alerts firing at once than are listed: counted
                self.alerts_firing_more += 1
        elif firing.pop(key, None) is None and self.alerts_firing_more:
            self.alerts_firing_more -= 1
        self._pending_alerts.append((key[0], d))
        del self._pending_alerts[:-5]
        if len(self.alert_log) == 1:
            self.call_after_refresh(self.refresh_bindings)  # "! Alerts" joins the footer

    # -- lifecycle -------------------------------------------------------------

    def get_system_commands(self, screen: Screen):  # type: ignore[override]
        """The palette: every key of the screen by name (``err`` finds Errors), then Textual's own."""
        yield from key_commands(self, screen)
        yield from super().get_system_commands(screen)

    def get_default_screen(self) -> Screen:
        if self.start_screen == "compare" and isinstance(self.source, NoSource):
            return self._make_screen("compare")
        return DashboardScreen(list(self.state.lanes), source=self.source)

    def on_mount(self) -> None:
        if measures(self.source):  # its events arrive from its own thread: folded in batches on our loop
            self._inbox = Inbox()
            self._unsubscribe = [self.source.bus.subscribe(self._inbox)]
        else:
            self._unsubscribe = [self.source.bus.subscribe(self._fold)]
        if hasattr(self.source, "attach_state"):  # a seekable replay: backward seeks restore our folds
            self.source.attach_state(self._snapshot_states, self._restore_states)
        if not isinstance(self.source, NoSource):
            self.run_worker(self._run_source(), exclusive=True, group="source", exit_on_error=False)
        options = getattr(self.source, "monitor_options", None)
        if options is not None and options.wanted:
            self.run_worker(self._run_monitor(options), group="monitor", exit_on_error=False)
        if self.race_plan is not None:
            self.push_screen(self._make_screen("race"))
        elif self.start_screen not in (None, "dashboard") and self.screen_name() != self.start_screen:
            self.push_screen(self._make_screen(self.start_screen))
        self.set_interval(1 / self.refresh_hz, self.redraw)
        self.redraw(force=True)
        # the footer lists the keys from the first frame, before any key press (in a browser too,
        # where nothing else asks it to draw until the first input)
        self.call_after_refresh(self.refresh_bindings)
        if measures(self.source):  # what exists now (modules, widgets), then what the first frames made
            freeze_startup()
            self.set_timer(FREEZE_AFTER_S, freeze_startup)
            # a live session runs for hours: its allocator's free pages go back to the system every 10 s
            # (lanemon/heap.py: RSS follows the memory in use instead of drifting up by a few MB an hour)
            self.set_interval(TRIM_EVERY_S, trim_heap)
        for msg in self.theme_warnings:
            self.notify(msg, title="theme", severity="warning", timeout=8, markup=False)

    async def _run_source(self) -> None:
        """Run the source: a replay or a viewer here, on the UI's loop; a source that measures on a loop
        of its own in a thread (sessions/runner.py), so that no repaint ever delays its timestamps,
        timers or loop-lag watcher.  This worker waits for it, so the worker's state is the run's."""
        if self._inbox is None:
            await self.source.run()
            return
        runner = self._runner = SourceThread(self.source).start()
        try:
            await asyncio.wrap_future(runner.done)
        except asyncio.CancelledError:
            runner.cancel()  # as cancelling this worker cancelled run() when it ran here
            raise
        finally:
            self.drain()

    def drain(self) -> int:
        """Fold the events a measuring source published since the last call (on the redraw tick), as one
        batch; how many."""
        if self._inbox is None:
            return 0
        batch = self._inbox.take()
        self.fold_batch(batch)
        return len(batch)

    def source_call(self, fn: Callable[..., Any], *args: Any, wait: bool = True) -> Any:
        """Call a source method (pause, stop) where the source runs: on its measuring loop when it has
        one (waiting for the answer with ``wait``), else here."""
        runner = self._runner
        if runner is None or not runner.running:
            return fn(*args)
        if not wait:
            runner.call(fn, *args)
            return None
        try:
            return runner.call_wait(fn, *args)
        except TimeoutError:
            self.notify("the measuring loop did not answer within 5 s", severity="error", timeout=5, markup=False)
            return None

    async def in_source(self, make: Callable[[], Awaitable[Any]]) -> Any:
        """Await the coroutine ``make()`` where the source runs (a race on the measuring loop).  Called
        before the measuring loop is up (a race planned at start), it waits for it."""
        while self._inbox is not None and self._runner is None:
            await asyncio.sleep(0.01)
        runner = self._runner
        if runner is None or not runner.running:
            return await make()
        return await asyncio.wrap_future(runner.submit(make))

    async def _run_monitor(self, options: MonitorOptions) -> None:
        """Alert rules and the exporter beside the dashboard (lanemon.monitor); stopped with the app."""
        from lanemon.monitor.headless import ListenError, Monitor

        async def build() -> Monitor:
            return Monitor(self.source, options.rules, window_s=options.window_s, slo=options.slo or None,
                           listen=options.listen)

        self.monitor = await self.in_source(build)  # on the measuring loop when the source has one
        self.refresh_bindings()
        try:
            await self.in_source(self.monitor.start)
        except ListenError as exc:
            self.notify(str(exc), title="exporter", severity="error", timeout=30, markup=False)
            self.monitor.exporter = None
        else:
            if self.monitor.exporter is not None:
                self.notify(f"Prometheus metrics at http://{self.monitor.exporter.address}/metrics",
                            title="exporter", timeout=8, markup=False)
        try:
            await self.in_source(self.monitor.run)
        finally:
            with contextlib.suppress(Exception):
                await self.in_source(self.monitor.close)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "source":
            return
        if event.state == WorkerState.ERROR:
            self.source_error = event.worker.error
            what = "bench" if self.source.mode == "bench" else "event source"
            self.notify(str(event.worker.error), title=f"{what} failed", severity="error", timeout=30, markup=False)
        self.redraw(force=True)

    def on_unmount(self) -> None:
        if self.monitor is not None:
            self.source_call(self.monitor.stop, wait=False)
        if self._runner is not None:  # its recorder is flushed before the command closes it
            self._runner.stop_and_join(timeout=STOP_GRACE_S)
        else:
            self.source.stop()
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []

    # -- drawing ---------------------------------------------------------------

    def redraw(self, force: bool = False) -> bool:
        """Repaint the screen on top if what it shows changed since its last repaint; True if painted."""
        self.drain()
        if not self._screen_stack:  # the redraw timer can fire once more while the app shuts down
            return False
        screen = self.screen
        if not isinstance(screen, LanemonScreen) or not screen.is_mounted:
            return False
        fp = screen.fingerprint(self)
        if not force and fp == screen.drawn:
            return False
        try:
            screen.draw(self)
        except NoMatches:
            # a panel mounted this frame has not composed its children yet (or the app is
            # shutting down): leave the fingerprint stale so the next tick draws everything
            return False
        screen.drawn = fp
        self.redraws += 1
        notes, self._pending_notes = self._pending_notes[-3:], []
        for level, message in notes:
            self.notify(message, severity="error" if level == "error" else "warning", timeout=10, markup=False)
        self._announce_alerts()
        return True

    def _announce_alerts(self) -> None:
        """A banner per alert transition since the last frame, and the bell when one fired (``!`` lists them)."""
        alerts, self._pending_alerts = self._pending_alerts, []
        if not alerts or self.source.mode == "replay" and getattr(self.source, "seeking", False):
            return
        from lanemon.untrusted import inert

        for lane, d in alerts:  # brief_alert's: inert and bounded
            firing = d.state == "firing"
            self.notify(f"lane {inert(lane, 16)}: {d.alert}", title=f"alert {'FIRING' if firing else 'resolved'} "
                        f"[{d.severity}] · ! lists them", severity="error" if firing else "information",
                        timeout=30 if firing else 8, markup=False)
        if any(d.state == "firing" for _, d in alerts):
            self.bell()

    def source_state(self) -> str:
        """running / finished / stopped, from the folds and the source's own flags."""
        if self.stopped_by_user or (self.bench is not None and self.bench.interrupted):
            return "stopped"
        if self.source.finished or (self.bench is not None and self.bench.bench_ended):
            return "finished"
        return "running"

    def wall_base_s(self) -> float | None:
        """Wall-clock time (epoch s) of session time 0, when the source says (a recording's header)."""
        header = getattr(getattr(self.source, "recording", None), "header", None)
        created = header.get("created") if isinstance(header, dict) else None
        if not isinstance(created, str):
            return None
        try:
            return datetime.fromisoformat(created).timestamp()
        except ValueError:
            return None

    def now_ns(self) -> int:
        """Session time now: the source's clock while a gauntlet runs, else the last event's time."""
        clock = getattr(self.source, "now_ns", None)
        g = self.gauntlet
        if callable(clock) and g.started and not g.ended and not self.source.finished:
            return int(clock())
        return max(self.state.last_t, g.last_t)

    # -- screens ---------------------------------------------------------------

    def _make_screen(self, name: str) -> LanemonScreen:
        return make_screen(self, name)

    def screen_name(self, screen: Screen | None = None) -> str:
        return getattr(screen or self.screen, "NAME", "")

    def action_open(self, name: str) -> None:
        """Open screen ``name`` (back to it if it is already on the stack)."""
        if self.screen_name() == name:
            return
        for i, screen in enumerate(self.screen_stack):
            if self.screen_name(screen) == name:
                while len(self.screen_stack) > i + 1:
                    self.pop_screen()
                self.call_after_refresh(self.redraw, True)
                return
        self.push_screen(self._make_screen(name))
        self.call_after_refresh(self.redraw, True)

    def action_race(self) -> None:
        self.action_open("race")

    def action_timeline(self) -> None:
        self.action_open("timeline")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        static = isinstance(self.source, NoSource)
        if action in ("faster", "slower"):
            return self.source.mode == "replay"
        if action in ("seek_by", "seek_marker", "seek_start", "seek_end"):
            return self.source.mode == "replay" and hasattr(self.source, "seek")
        if action == "share_info":  # only while this session is shared (lanemon share, demo --share)
            return self.share is not None
        if action == "toggle_host":  # the host strip lives on the dashboard only
            return isinstance(self.screen, DashboardScreen)
        if action == "toggle_pause":  # a bench or a gauntlet cannot pause mid-run
            return not static and self.source.mode != "bench" and self.screen_name() != "gauntlet"
        if action == "open" and parameters:
            name = parameters[0]
            if static or self.screen_name() == name:
                return False
            if name == "bench":
                return self.bench is not None
            if name == "gauntlet":
                return self.gauntlet.started
            if name == "alerts":  # in the footer once there are rules or alerts (the banner says "!" too)
                return bool(self.alert_log) or bool(getattr(self.monitor, "alerter", None))
        return True

    def action_share_info(self) -> None:
        """``s`` on a shared session: the attach command again (with its token), and who watches."""
        pub = self.share
        if pub is None:
            return
        n = pub.viewers
        self.notify(f"viewers attach with:\n{pub.attach_command}\n({n} watching now)",
                    title=f"sharing on {pub.url}", timeout=20, markup=False)

    def action_toggle_host(self) -> None:
        """Show or hide the host panel (CPU, memory, network of this machine)."""
        from lanemon.ui.widgets.host_panel import HostPanel

        if isinstance(self.screen, DashboardScreen):
            self.screen.query_one(HostPanel).toggle()
            self.redraw(force=True)

    def action_toggle_pause(self) -> None:
        paused = bool(self.source_call(self.source.toggle_pause))
        self.redraw(force=True)
        what = {"replay": "playback", "attach": "display"}.get(self.source.mode, "probes")
        self.notify(f"{what} {'paused' if paused else 'resumed'}", timeout=2)

    def action_faster(self) -> None:
        self.source.faster()
        self.redraw(force=True)

    def action_slower(self) -> None:
        self.source.slower()
        self.redraw(force=True)

    def action_screenshot(self, filename: str | None = None, path: str | None = None) -> None:
        """Save an SVG of the screen in lanemon's data directory (created if missing); the
        notification says where."""
        if path is None:
            from lanemon.config import data_dir

            target = data_dir() / "screenshots"
            try:
                target.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                self.notify(f"cannot create {target}: {exc}", title="Screenshot", severity="error", markup=False)
                return
            path = str(target)
        self.deliver_screenshot(filename, path)

    def workload_running(self) -> bool:
        """A bench is still running (stopping it now cuts it: exit :data:`EXIT_INTERRUPTED`)."""
        return self.source.mode == "bench" and not self.source.finished and self.source_state() == "running"

    async def action_quit(self) -> None:
        """``q``: quit; while a bench runs, only after a second ``q`` within :data:`QUIT_CONFIRM_S` (the
        first says what stopping costs), then as Ctrl-C."""
        import time

        if self.workload_running():
            now = time.monotonic()
            if self._quit_armed_at is None or now - self._quit_armed_at > QUIT_CONFIRM_S:
                self._quit_armed_at = now
                self.notify("The bench is still running. Press q again to stop it: finished cells are kept and "
                            "recorded, the run is marked interrupted (exit 130). Ctrl-C stops at once.",
                            title="Stop the bench?", severity="warning", timeout=QUIT_CONFIRM_S, markup=False)
                return
        await self.stop_and_exit()

    async def action_help_quit(self) -> None:
        """Ctrl-C (Textual binds it to a "press q to quit" notice): stop as the headless run does -- a bench
        winds down, finished cells kept and recorded, exit 130."""
        await self.stop_and_exit()

    async def stop_and_exit(self) -> None:
        """Stop the source (a bench winds down: finished cells are kept), then exit: 130 when that cut a
        running bench, 1 when the bench failed, else 0."""
        cut = self.workload_running()
        if not self.source.finished:
            self.stopped_by_user = self.source.mode == "bench"
        self.source_call(self.source.stop, wait=False)
        if self.source.mode == "bench":
            for worker in [w for w in self.workers if w.group == "source" and w.is_running]:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(worker.wait(), timeout=STOP_GRACE_S)
        self.workers.cancel_group(self, "source")
        if self.source_error is not None and self.source.mode == "bench":
            code = 1
        else:
            code = EXIT_INTERRUPTED if cut else 0
        self.exit(return_code=code)


def make_app(source: Source | None = None, *, theme: str | None = None, refresh_hz: float = 10.0,
             race: Any = None, compare: Comparison | None = None, screen: str | None = None) -> LanemonApp:
    """Build the app (the CLI and every test use this).

    ``source`` feeds every screen (None with ``compare``: a static comparison).  ``screen``
    names the first screen (dashboard, bench, race, gauntlet, compare, timeline); by default
    the workload's own (see the module docstring).  ``race`` (a
    :class:`~lanemon.workloads.race.RacePlan`) opens the race screen and runs those races
    through ``source.race``; ``compare`` is a compare result
    (:func:`lanemon.reports.compare.compare` or ``compare_lanes``).

    Raises :class:`ThemeError` when ``theme`` names no known theme; the message lists the
    available names.  A theme whose file exists but is broken (``<name>.toml`` skipped with
    a warning) falls back to the default with one more warning instead.
    """
    if refresh_hz <= 0:
        raise ValueError("refresh_hz must be positive")
    if source is None and compare is None:
        raise ValueError("make_app needs a source or a compare result")
    warnings: list[str] = []
    themes = load_themes(warnings=warnings)
    try:
        name = resolve_theme(theme, themes)
    except ThemeError:
        if not any(f"/{theme}.toml:" in w.replace("\\", "/") for w in warnings):
            raise
        name = resolve_theme(None, themes)  # the chosen theme's file is broken: say so, use the default
        warnings.append(f"theme {theme!r} could not be loaded (see above); using {name}")
    return LanemonApp(source, theme=name, themes=themes, theme_warnings=warnings, refresh_hz=refresh_hz, race=race,
                      compare=compare, screen=screen)
