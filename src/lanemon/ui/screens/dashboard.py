"""The live dashboard: a panel per lane, the numbers over the window, and shared time charts.

Every chart draws every lane on the same axes (time on x over the last 1, 5 or 15 minutes --
``w`` widens, ``W`` narrows; zero at the bottom; units on y), in the lane's own colour.  ``z`` zooms one lane
(see *Zoom* below).

The x axis is local wall-clock time: live, from the session clock's start; in a replay, from the
recording's ``created`` stamp, so a replay shows when the run happened, not now (``HH:MM:SS``, or
``HH:MM`` when the ticks are whole minutes apart, as in the 15-minute window).  A source that says
neither keeps session time (``+12.3s``).

Where a lane exposes ``/metrics``, the server's side gets two charts: its queue (running requests as a
solid line, waiting ones as a broken, fainter line, each lane in its colour) and its KV-cache use
(0-100 %), every such lane in its colour.  When the charts have 20 rows
or more (160 x 45 with up to four lanes) they take a second row under the three request charts (3 + 2
in a six-column grid: each chart keeps a plot of 7+ rows and at least a third of the width; a 3 x 2
grid would leave a hole and a single row of five would leave each ~30 columns at 160).  With fewer
rows (100 x 30, or many lanes' panels above) a second row would leave every plot four rows tall, too
flat to read, so the three charts stay in one row and the third one cycles with ``c``: throughput →
server queue → KV cache (the current queue and KV figures stay in each lane's panel).

Zoom: ``z`` (or a click on a lane's card or one-line row, or ``1``-``8`` for lane N) shows one lane on
the whole screen: its card (a one-line row under 40 rows, so the charts keep the room), its numbers
over the window, and every chart it has data for with that lane alone -- the server queue and KV charts
too, in a second row, whatever the screen's height.  ``z``, ``esc`` or a click on the card go back to
every lane; ``1``-``8`` move to another lane.
"""

from __future__ import annotations

import textwrap
import time
from datetime import tzinfo
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.css.query import NoMatches
from textual.widgets import Label

from lanemon.ui.widgets.footer import Footer
from lanemon.folds.dashboard import SessionState
from lanemon.folds.series import NS, WINDOWS_S, ChartFeed
from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.colours import lane_colours, shared_colour
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.host_panel import HostPanel
from lanemon.ui.widgets.lane_panel import LanePanel, lane_grid
from lanemon.folds.monitor import breaches, saturation, slo_window
from lanemon.ui.widgets.lane_stats import LaneStats
from lanemon.ui.widgets.status_bar import StatusBar, recent_starvation
from lanemon.ui.widgets.time_chart import TimeChart, WallAxis

SHORT = 40
NOTICE_NS = 15 * NS
"""How long (session time) the client-bound notice stays under the status bar."""
"""Below this many rows the panels drop their model and errors-title rows."""
TWO_ROWS = 20
"""Rows the charts need for a second row of server charts (each plot then keeps 7 rows or more); with less
(a short screen, or many lanes' panels above), the two server charts share the third chart's place with
throughput (``c`` cycles; their current numbers stay in each lane's panel)."""
CHARTS = (("chart-ttft", "TTFT"), ("chart-decode", "decode per stream"), ("chart-tput", "throughput"),
          ("chart-server", "server queue"), ("chart-kv", "server KV cache"), ("chart-gpu", "GPU power"))
SCRAPE_GAP_NS = 5 * NS
"""Successive /metrics scrapes at most this far apart are joined by a line (they come every 2 s); a longer
gap (a failed scrape, a pause) is left open."""
THIRD = ("chart-tput", "chart-server", "chart-kv", "chart-gpu")
REQUEST_CHARTS = ("chart-ttft", "chart-decode", "chart-tput")
"""The charts drawn from the requests' samples (the others from the lanes' /metrics and GPU readings)."""
"""What ``c`` cycles through in the third place of a short screen."""


BUSY_CHANGES_PER_S = 50
"""Live, the lanes' state (:attr:`~lanemon.folds.dashboard.SessionState.version`: a request's start, first byte
and end, a reading; not a stream's tokens) moved this often in the last second of session time: a load, drawn
at every frame (>= 10 a second).  Below it -- the demo's probes, load windows, scrapes and GPU readings move it
about 10 times a second -- what arrives is drawn at the next second (:meth:`DashboardScreen.fingerprint`)."""


SETTLE_SPEED = 4.0
"""A replay playing at up to this many times real time is drawn as a live session is (a frame a second of session
time while the data trickles in, the charts a column at a time); faster, every change at once."""


def panel_id(lane: str) -> str:
    """A DOM id for a lane name (lane names allow '.', which ids do not)."""
    return "lane-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in lane)


def window_text(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds >= 60 else f"{seconds} s"


def seconds_axis(v: float) -> str:
    """Axis label for a duration in seconds: ``250 ms``, ``1.5 s``."""
    if v < 1:
        return f"{v * 1000:.0f} ms"
    return f"{v:.1f} s" if v < 10 else f"{v:.0f} s"


def watts_axis(v: float) -> str:
    return f"{v:,.0f} W" if v >= 10 else f"{v:.1f} W"


def rate_axis(v: float) -> str:
    return f"{v:,.0f} tok/s" if v >= 10 else f"{v:.1f} tok/s"


def count_axis(v: float) -> str:
    return f"{v:.2g} req"


def percent_axis(v: float) -> str:
    """Axis label for a share (0..1): ``75 %``."""
    return f"{v * 100:.0f} %"


def wall_start_s(app: Any) -> float | None:
    """Wall-clock time (epoch s) of session time 0, or None when the source does not say.

    A source may say it outright (``wall_t0_s``); a replay says it in its recording's header
    (``created``); a live session's clock started at a ``perf_counter`` instant, which is set against
    the wall clock now.
    """
    source = app.source
    given = getattr(source, "wall_t0_s", None)
    if isinstance(given, (int, float)) and not isinstance(given, bool):
        return _plausible(float(given))
    base = app.wall_base_s()
    if base is not None:  # a recording's header is untrusted: year 9999 would overflow every label
        return _plausible(base)
    t0 = getattr(getattr(source, "clock", None), "t0", None)
    if isinstance(t0, int) and getattr(source, "mode", "") != "replay":
        return time.time() - (time.perf_counter_ns() - t0) / NS
    return None


WALL_RANGE_S = (946_684_800.0, 4_102_444_800.0)
"""Wall-clock starts believed (2000-01-01 to 2100-01-01 UTC); others keep session time on the axis."""


RUNNING, WAITING = " running", " waiting"


def queue_series(series: Any, lanes: list[str]) -> tuple[dict[str, list[tuple[int, float]]], dict[str, str]]:
    """The server queue as two series per lane, ``"A running"`` and ``"A waiting"`` (each drawn only
    where the lane's scrapes had it), and the lane of each series."""
    out: dict[str, list[tuple[int, float]]] = {}
    lane_of: dict[str, str] = {}
    for name in lanes:
        for key, suffix in (("running", RUNNING), ("waiting", WAITING)):
            pts = series.lane(name).server.points(key)
            if pts:
                out[name + suffix] = pts
                lane_of[name + suffix] = name
    return out, lane_of


def _plausible(t0_s: float) -> float | None:
    return t0_s if WALL_RANGE_S[0] <= t0_s <= WALL_RANGE_S[1] else None


def fit_words(forms: list[str], width: int, lines: int) -> tuple[str, int]:
    """The first of ``forms`` (fullest first) that wraps into ``lines`` lines of ``width`` at word boundaries,
    and how many it takes; the last form on one line where none does."""
    for text in forms:
        n = len(textwrap.wrap(text, max(1, width)))
        if n <= lines:
            return text, max(1, n)
    return forms[-1], 1


class DashboardScreen(LanemonScreen):
    """Status bar, lane panels, window numbers, charts, footer.  Drawn by the app via :meth:`draw`."""

    NAME = "dashboard"
    BINDINGS = [
        Binding("w", "window", "Window"),
        Binding("W", "window(-1)", "Narrow window", show=False),
        Binding("z", "zoom", "Zoom lane"),
        Binding("c", "chart", "Next chart"),
        # one footer hint for the eight (``1–8 Lane N``); each key is in the palette by its own name
        Binding("1", "zoom_lane(0)", "Lane N", key_display="1–8"),
        *(Binding(str(k), f"zoom_lane({k - 1})", f"Zoom lane {k}", show=False) for k in range(2, 9)),
    ]
    DEFAULT_CSS = """
    DashboardScreen #lanes { height: auto; max-height: 50%; padding: 0 1; grid-gutter: 0 1; grid-rows: auto;
                             layout: grid; overflow-y: auto; }
    DashboardScreen #lanes LanePanel { margin: 0; min-width: 0; }
    DashboardScreen.-short.-many LanePanel #errors, DashboardScreen.-short.-many LanePanel ServerGauges {
        display: none;
    }
    DashboardScreen #window-stats { margin: 0 1; height: auto; }
    DashboardScreen #notice {
        display: none; height: 1; width: 1fr; padding: 0 1; color: $warning;
        text-wrap: nowrap; text-overflow: ellipsis;
    }
    DashboardScreen #charts { grid-size: 3 1; grid-gutter: 0 1; height: 1fr; min-height: 7; padding: 0 1; }
    DashboardScreen #charts.-two-rows { grid-size: 6 2; }
    DashboardScreen #charts.-two-rows #chart-ttft, DashboardScreen #charts.-two-rows #chart-decode,
    DashboardScreen #charts.-two-rows #chart-tput { column-span: 2; }
    DashboardScreen #charts.-two-rows #chart-server, DashboardScreen #charts.-two-rows #chart-kv { column-span: 3; }
    DashboardScreen #charts.-two-rows #chart-gpu { column-span: 3; }
    DashboardScreen #charts.-one-server #chart-server, DashboardScreen #charts.-one-server #chart-kv,
    DashboardScreen #charts.-one-server #chart-gpu {
        column-span: 6;
    }
    /* queue, KV and GPU power: three in the second row */
    DashboardScreen #charts.-three-server #chart-server, DashboardScreen #charts.-three-server #chart-kv,
    DashboardScreen #charts.-three-server #chart-gpu {
        column-span: 2;
    }
    DashboardScreen.-short LanePanel #model, DashboardScreen.-short LanePanel #errors-title { display: none; }
    DashboardScreen.-short LanePanel #errors { max-height: 2; }
    """

    def __init__(self, lanes: list[str], source: Any = None) -> None:
        super().__init__()
        self._lanes = list(lanes)
        self._source = source
        self.window_s = WINDOWS_S[0]
        """The charts' and numbers' window (seconds): 60, 300 or 900."""
        self.zoomed: str | None = None
        """The lane shown alone (``z``), or None for all of them."""
        self._last_zoomed: str | None = None
        self._zoomed_down = False
        """The zoomed lane is down (its full card shows, with its URL and errors, even on a short screen)."""
        self.third = THIRD[0]
        """The chart in the third place on a short screen (``c``)."""
        self.tz: tzinfo | None = None
        """The zone of the wall-clock axis (None: the machine's local zone)."""
        self._wall_s: float | None = None
        self._data_at: tuple[int, int, int] | None = None
        """Live: the folds' versions as of the session second the screen last stepped at (state, series,
        second): what trickles in within a second is drawn together at the next one."""
        self._rate_at: tuple[int, int] | None = None
        """(session second, the lanes' state version then): how fast the state moves."""
        self._busy = False
        """Live, the lanes' state moved at least :data:`BUSY_CHANGES_PER_S` times a second over the last one."""
        self._charts_grid: Grid | None = None
        """The charts' grid once composed (its size is in the fingerprint; a query each tick cost a third of
        an idle redraw at 8 lanes)."""
        self._saturated: set[str] = set()
        """Lanes over-saturated over the chart window (their badge says SATURATED), as of the last draw."""
        self._saturated_at: tuple | None = None
        """(session second, window, lanes) of that judgement (live: once a second)."""
        self._told: str | None = None
        """The starvation cause last explained in the notice (``steal``, ``own``, ``machine``)."""
        self._notice_until: int | None = None
        """Session time the client-bound notice (``#notice``) shows until."""
        self._stats_at: tuple[int, tuple] | None = None
        """(session time, lanes/window/size/colours) of the window numbers as last drawn (live: once a second)."""
        self._charts: dict[str, TimeChart] | None = None
        self._charts_gate: tuple = (None, None)
        self._feeds: dict[str, ChartFeed] = {}
        """Live: each lane's request charts, taken in as its samples are judged."""
        """What the charts were last drawn for, live: the axes' columns, lanes, window, size, colours."""
        self._server_charts: tuple[str, ...] = ()
        self._tall = False
        """The server charts that have data (``chart-server``, ``chart-kv``)."""

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield Label("", id="notice")  # the client-bound notice: a line of its own, over no chart
        with Grid(id="lanes"):
            for name in self._lanes:
                yield LanePanel(name, id=panel_id(name))
        yield LaneStats(id="window-stats")
        with Grid(id="charts"):
            for chart_id, title in CHARTS:
                yield TimeChart(title, id=chart_id)
        yield HostPanel(id="host")  # hidden until `h`
        yield from self.replay_bar()
        yield Footer()

    def on_resize(self) -> None:
        self.set_class(self.size.height < SHORT, "-short")
        self._arrange()
        self.drawn = None

    def _arrange(self) -> None:
        """Lane panels side by side, at least ~30 columns each: 2-4 lanes share one row, more wrap
        onto further rows; where those would take over a third of the screen, one line per lane
        (``lane_panel.lane_grid``)."""
        shown = [n for n in self._lanes if self.zoomed in (None, n)]
        per_row, compact = lane_grid(len(shown), self.size.width or 100, self.size.height or 30)
        if self.zoomed is not None:  # the charts take the screen: on a short one the lane is one line,
            # unless it is down: then its card (URL, errors, why) is the story, its charts have nothing
            compact = (self.size.height or 30) < SHORT and not self._zoomed_down
        self.set_class(self.zoomed is not None, "-zoomed")
        grid = self.query_one("#lanes", Grid)
        grid.styles.grid_size_columns = per_row
        for panel in grid.query(LanePanel):  # one-line rows when the full panels would crowd out the charts
            panel.compact = compact
            panel.display = self.zoomed in (None, panel.lane)  # a lane first seen while zoomed stays hidden
        self.set_class(len(self._lanes) > 4, "-many")

    def panel(self, lane: str) -> LanePanel:
        return self.query_one(f"#{panel_id(lane)}", LanePanel)

    # -- keys --------------------------------------------------------------------

    def action_window(self, step: int = 1) -> None:
        """Widen the window: 1 → 5 → 15 minutes → 1 (``W``: narrow it, the other way round)."""
        i = WINDOWS_S.index(self.window_s) if self.window_s in WINDOWS_S else 0
        self.window_s = WINDOWS_S[(i + step) % len(WINDOWS_S)]
        self.notify(f"charts: last {window_text(self.window_s)}", timeout=2)
        self.drawn = None

    def action_chart(self) -> None:
        """On a short screen: the third chart cycles throughput → server queue → KV cache."""
        shown = [c for c in THIRD if c == THIRD[0] or c in self._server_charts]
        i = shown.index(self.third) if self.third in shown else 0
        self.third = shown[(i + 1) % len(shown)]
        self.drawn = None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "chart":  # only where it does something: a short screen with server charts
            return bool(self._server_charts) and not self._two_rows()
        if action == "back" and self.zoomed is not None:
            return True
        return super().check_action(action, parameters)

    def action_zoom(self) -> None:
        """Zoomed: back to every lane.  Otherwise zoom the lane zoomed last (the first one at first)."""
        if self.zoomed is not None:
            self.zoom(None)
        elif self._lanes:
            self.zoom(self._last_zoomed if self._last_zoomed in self._lanes else self._lanes[0])

    def action_zoom_lane(self, index: int) -> None:
        """``1``-``8``: zoom lane N (N again: back to every lane)."""
        if 0 <= index < len(self._lanes):
            lane = self._lanes[index]
            self.zoom(None if self.zoomed == lane else lane)

    def action_back(self) -> None:
        """``esc`` leaves a zoom first, then the screen."""
        if self.zoomed is not None:
            self.zoom(None)
            return
        super().action_back()

    def on_lane_panel_chosen(self, message: LanePanel.Chosen) -> None:
        """A click on a lane's card or row zooms it; on the zoomed card, back to every lane."""
        self.zoom(None if self.zoomed == message.lane else message.lane)

    def zoom(self, lane: str | None) -> None:
        """Show ``lane`` alone on the whole screen (None: every lane)."""
        self.zoomed = lane
        if lane is not None:
            self._last_zoomed = lane
        lanes = getattr(getattr(self.app, "state", None), "lanes", {})
        self._zoomed_down = lane in lanes and lanes[lane].up is False
        self._arrange()
        self.refresh_bindings()
        self.drawn = None

    # -- drawing -------------------------------------------------------------------

    def fingerprint(self, app: Any) -> tuple:
        s = app.source  # (the charts by query: the app's first redraw can come before they are composed)
        # paused: what the folds still take in (the loop watcher's windows) waits for the resume; the
        # screen repaints only for the user's own keys (window, zoom, a seek, resizing)
        # a stream's tokens move no version (folds/dashboard.SessionState.version); the second of session time
        # steps the stall marks' seconds and the clock
        now = (app.state.version, app.series.version, app.state.last_t // NS)
        if self._rate_at is None or now[2] != self._rate_at[0]:  # busy: judged once a second of session time
            if self._rate_at is not None:
                changes = (now[0] - self._rate_at[1]) / max(1, now[2] - self._rate_at[0])
                self._busy = changes >= BUSY_CHANGES_PER_S
            self._rate_at = (now[2], now[0])
        elif now[0] - self._rate_at[1] >= BUSY_CHANGES_PER_S:  # a load starting: busy from now, not next second
            self._busy = True
        if s.paused:
            versions: tuple = (None, None, None)
        elif self._settles(app) and not self._busy:
            # live, and what it shows trickles in (a probe's end, the loop watcher's windows, a scrape, a GPU
            # reading): it is drawn at the next second of session time, all of it in one frame -- each would
            # otherwise cost Textual's compositor a pass of its own (5 a second in the demo at 160x45, each
            # re-rendering every widget between the changed ones; one a second costs about a fifth of that).
            # A load (requests ending all the time: BUSY_CHANGES_PER_S) is drawn at every frame.
            if self._data_at is None or self._data_at[2] != now[2]:
                self._data_at = now
            versions = self._data_at
        else:  # busy, a replay, a pause's end, the end of a run: every change at once
            self._data_at = None
            versions = now
        if self._charts_grid is None:
            self._charts_grid = next(iter(self.query("#charts")), None)
        charts = self._charts_grid.size if self._charts_grid is not None else None
        return (*versions, self.window_s, self.zoomed, self.third, s.paused, s.speed,
                getattr(getattr(app, "share", None), "viewers", None),
                s.finished, str(s.recording_path), self.size, charts)

    def draw(self, app: Any) -> None:
        # over-saturated lanes over the chart window (queue grew, TTFT rose, throughput flat: folds/monitor);
        # live, judged once per second of session time (each judgement reads every sample in the window: at
        # 6,000 events/s some 3,000 per lane), half a second apart from the window numbers' own second
        t1 = max(app.state.last_t, app.series.last_t)
        t0 = max(0, t1 - self.window_s * NS)
        second = ((t1 + NS // 2) // NS, self.window_s, tuple(app.state.lanes))
        if not self._settles(app) or second != self._saturated_at:
            self._saturated_at = second
            self._saturated = {n for n in app.state.lanes if saturation(app.series, n, t0, t1) == 1.0}
        self.refresh_from(app.state, app.source)
        self.draw_charts(app)

    def refresh_from(self, state: SessionState, source: Any) -> None:
        """Redraw the panels and status bar from ``state``; lanes first seen in events get a panel."""
        new = [name for name in state.lanes if name not in self._lanes]
        if new:
            container = self.query_one("#lanes", Grid)
            for name in new:
                self._lanes.append(name)
                container.mount(LanePanel(name, id=panel_id(name)))
            self._arrange()
            self.call_after_refresh(self.refresh_from, state, source)
            return
        down = self.zoomed is not None and self.zoomed in state.lanes and state.lanes[self.zoomed].up is False
        if down != self._zoomed_down:
            self._zoomed_down = down
            self._arrange()
        any_gpu = any(lane.gpu.configured for lane in state.lanes.values())  # the GPU row on every panel
        for name in self._lanes:
            panel = self.panel(name)
            try:  # by id: Textual caches the answer until the panel's children change (a query walked them)
                panel.query_one("#url")
            except NoMatches:  # mounted but not composed yet (hidden while zoomed): the next tick
                self.drawn = None
                continue
            panel.update_from(state.lane(name), state.last_t, gpu=any_gpu,
                              saturated=name in self._saturated)
        self.query_one(HostPanel).update_from(state.host)
        self.query_one(StatusBar).show(source, state)
        self._tell_starvation(state)

    def _tell_starvation(self, state: SessionState) -> None:
        """When samples are flagged client-bound, say once per cause why and what to do (the status bar
        keeps naming the cause while it lasts)."""
        notice = self.query_one("#notice", Label)
        if self._notice_until is not None and state.last_t >= self._notice_until:
            self._notice_until = None
            notice.display = False
        cause = recent_starvation(state)
        flagged = sum(st.client_bound for st in state.lanes.values())
        if cause is None or not flagged or cause.cause == self._told:
            return
        self._told = cause.cause
        # a line of its own under the status bar for 15 s of session time (a toast covered the charts); two
        # from 30 rows: the fullest of its forms that fits, in whole words (it read `CPU 100 %, wa…` at 100x30)
        what = f"client-bound: {flagged} sample{'s' * (flagged != 1)} not plotted: lanemon was held up"
        short = cause.short or cause.cause
        text, rows = fit_words([f"{what}. Why: {cause.why}. What to do: {cause.advice}.",
                                f"{what} ({short}). What to do: {cause.advice}.", f"{what} ({short}).",
                                f"client-bound: {flagged} not plotted ({short})"],
                               self.size.width - 2, 2 if self.size.height >= 30 else 1)
        notice.styles.height = rows
        notice.styles.text_wrap = "wrap" if rows > 1 else "nowrap"
        notice.update(escape(text))
        notice.display = True
        self._notice_until = state.last_t + NOTICE_NS

    @staticmethod
    def _settles(app: Any) -> bool:
        """Live (events happen now) or a replay playing at up to :data:`SETTLE_SPEED` times real time, running,
        not paused, not seeking: the charts settle a column at a time and the window's figures move once a
        second of session time (a faster replay, a seek, a pause or the end draws every change at once).  A
        replay of a live session at 1x drew each of its events in a frame of its own: 19-21 % of a core for
        ``sample_sessions/demo.jsonl`` at 160x45, above the live session it recorded."""
        source = app.source
        if source.finished or source.paused:
            return False
        if getattr(source, "real_time", False):
            return True
        speed = getattr(source, "speed", None)
        return (getattr(source, "mode", "") == "replay" and not getattr(source, "seeking", False)
                and isinstance(speed, (int, float)) and 0 < speed <= SETTLE_SPEED)

    def _wall(self, app: Any) -> WallAxis | None:
        if self._wall_s is None:
            self._wall_s = wall_start_s(app)  # once: a live anchor taken again every frame would jitter
        return None if self._wall_s is None else WallAxis(self._wall_s, tz=self.tz)

    def draw_charts(self, app: Any) -> None:
        series = app.series
        lanes = [self.zoomed] if self.zoomed else [n for n in self._lanes]
        colours = lane_colours(app, self._lanes)
        t1 = max(app.state.last_t, series.last_t)
        t0 = max(0, t1 - self.window_s * NS)  # a session shorter than the window: its whole length
        final = bool(app.source.finished)
        window = window_text(self.window_s)
        slo = getattr(getattr(app.source, "monitor_options", None), "slo", None) or {}
        # settle: live, new points wait for their column to be complete (one repaint per column-period), and
        # the window's numbers move at most once a second of session time (a Rich table is the dearest
        # widget to render: ~10 ms)
        settle = self._settles(app)
        shape = (tuple(lanes), self.window_s, self.size, tuple(colours.items()), bool(slo))
        held = self._stats_at
        if not settle or held is None or held[1] != shape or not held[0] <= t1 < held[0] + NS:
            self._stats_at = (t1, shape)
            attained = {n: slo_window(series, n, t0, t1, slo, final=final) for n in lanes} if slo else None
            self.query_one(LaneStats).update_from({n: series.window(n, t0, t1, final=final) for n in lanes},
                                                  colours, window, slo=attained)
        if self._charts is None:
            self._charts = {chart_id: self.query_one(f"#{chart_id}", TimeChart) for chart_id, _ in CHARTS}
        # live, the charts change only when one of their axes moved a column (what came in meanwhile waits for
        # its column: settle), so between those steps nothing of theirs is computed; the request charts (every
        # sample in the window read again: thousands at 6,000 events/s) and the scrape gauges (a few dozen
        # points) each by their own columns, so a gauge's step does not read the samples again (the gauges are
        # drawn at the request charts' steps too: a gauge that had no data is shown when it gets some)
        column = {cid: t1 // c.column_ns(self.window_s * NS) for cid, c in self._charts.items() if c.display}
        gates = ((shape, self.third, tuple(v for cid, v in column.items() if cid in REQUEST_CHARTS)),
                 (shape, self.third, tuple(v for cid, v in column.items() if cid not in REQUEST_CHARTS)))
        held = self._charts_gate if settle else (None, None)
        redo_requests = gates[0] != held[0]
        redo_gauges = redo_requests or gates[1] != held[1]
        if settle and not redo_requests and not redo_gauges:
            return
        self._charts_gate = gates if settle else (None, None)
        common = dict(t0=t0, t1=t1, window_ns=self.window_s * NS, settle=settle, colours=colours,
                      x_fmt=fmt.event_time,
                      wall=self._wall(app),
                      shared_colour=shared_colour(app), note=f"last {window}")
        if redo_requests:
            self._draw_request_charts(app, lanes, t0, t1, final, slo, common, settle)
        if redo_gauges:
            self._draw_gauges(app, lanes, common)

    def _draw_request_charts(self, app: Any, lanes: list[str], t0: int, t1: int, final: bool, slo: dict,
                             common: dict, settle: bool = False) -> None:
        """TTFT, decode per stream and throughput: every judged sample in the window (live, each lane's
        :class:`~lanemon.folds.series.ChartFeed` reads only the samples judged since its last step)."""
        series = app.series
        clean: dict[str, list] = {"ttft": {}, "decode": {}}
        marks: dict[str, list] = {}
        avg = {60: 5, 300: 15, 900: 30}.get(self.window_s, 5)
        tput: dict[str, list] = {}
        for name in lanes:
            if settle:
                feed = self._feeds.get(name)
                if feed is None or feed.series is not series:
                    feed = self._feeds[name] = ChartFeed(series, name)
                feed.update(t0)
                flagged = list(feed.marks)
                if slo:
                    flagged += [(t, "slo") for t in breaches(series, name, t0, t1, slo)
                                if not any(ft == t for ft, _ in flagged)]
                clean["ttft"][name], clean["decode"][name], marks[name] = list(feed.ttft), list(feed.tok), flagged
                tput[name] = feed.tokens_per_s(t0, t1, avg_s=avg)
                continue
            ttft, tok, flagged = [], [], []
            until = series.judged_until(final)
            for s in series.samples(name, t0):
                if s.t < t0 or until is None or s.t > until:  # (pending)
                    continue
                if series.flagged(s):
                    flagged.append((s.t, s.outcome if s.outcome != "ok" else sorted(series.flags_of(s))[0]))
                    continue
                if s.ttft_s is not None:
                    ttft.append((s.t, s.ttft_s))
                if s.tok_s is not None:
                    tok.append((s.t, s.tok_s))
            if slo:  # a complete request that missed a target: marked where it ended (folds/monitor.breaches)
                flagged += [(t, "slo") for t in breaches(series, name, t0, t1, slo)
                            if not any(ft == t for ft, _ in flagged)]
            clean["ttft"][name], clean["decode"][name], marks[name] = ttft, tok, flagged
            tput[name] = series.tokens_per_s(name, t0, t1, avg_s=avg, final=final)
        # window_ns: a chart's time axis moves a column at a time (not at every event): it repaints when a
        # column's worth of time went by or its data changed (widgets/repaint.py)
        self.query_one("#chart-ttft", TimeChart).show(series=clean["ttft"], marks=marks, value_fmt=seconds_axis,
                                                      title="TTFT", **common)
        # each title with its shorter forms: the chart takes the fullest beside which every lane is named
        self.query_one("#chart-decode", TimeChart).show(series=clean["decode"], marks=marks, value_fmt=rate_axis,
                                                        title=("decode per stream", "decode/stream", "decode"),
                                                        **common)
        self.query_one("#chart-tput", TimeChart).show(series=tput, marks=marks, value_fmt=rate_axis, connect=True,
                                                      title=(f"throughput ({avg} s avg)", "throughput"), **common)

    def _draw_gauges(self, app: Any, lanes: list[str], common: dict) -> None:
        """The server's queue and KV cache, GPU power (each lane's scrapes), and where they go."""
        series = app.series
        queue, lane_of = queue_series(series, lanes)
        kv = {n: series.lane(n).server.points("kv_usage") for n in lanes}
        kv = {n: pts for n, pts in kv.items() if pts}
        gauge = dict(marks={}, connect=True, connect_ns=SCRAPE_GAP_NS, **common)
        if queue:
            self.query_one("#chart-server", TimeChart).show(
                series=queue, value_fmt=count_axis, title=("server queue", "queue"), lane_of=lane_of,
                dashed={k for k in queue if k.endswith(WAITING)}, kinds=(("━", "running"), ("┄", "waiting")),
                **gauge)
        if kv:
            self.query_one("#chart-kv", TimeChart).show(series=kv, value_fmt=percent_axis, y_max=1.0, y_divisions=4,
                                                        title=("server: KV cache used", "KV cache used", "KV cache"),
                                                        **gauge)
        # GPU power (docs/GPU.md): each lane's GPUs summed, on the same time axis as its tok/s
        power = {n: series.lane(n).gpu.points("power_w") for n in lanes}
        power = {n: pts for n, pts in power.items() if pts}
        if power:
            self.query_one("#chart-gpu", TimeChart).show(series=power, value_fmt=watts_axis,
                                                         title=("GPU power (W)", "power (W)"), **gauge)
        self._place_charts(("chart-server",) * bool(queue) + ("chart-kv",) * bool(kv) + ("chart-gpu",) * bool(power))

    def _two_rows(self) -> bool:
        """Room for the server charts in a second row: the charts' own height once laid out (zoomed:
        always, the lane's charts have the screen)."""
        if self.zoomed is not None:
            return True
        height = self.query_one("#charts", Grid).size.height
        return (height or self.size.height - 20) >= TWO_ROWS

    def _place_charts(self, server: tuple[str, ...]) -> None:
        """Tall: the server charts in a second row; short: one of throughput / queue / KV in the third place."""
        tall = self._two_rows()
        if (server, tall) != (self._server_charts, self._tall):
            self._server_charts, self._tall = server, tall
            self.refresh_bindings()  # `c` is offered only where it does something
        if self.third not in (THIRD[0], *server):
            self.third = THIRD[0]
        grid = self.query_one("#charts", Grid)
        grid.set_class(tall and bool(server), "-two-rows")
        grid.set_class(len(server) == 1, "-one-server")
        grid.set_class(len(server) == 3, "-three-server")
        for chart_id in THIRD:
            shown = (chart_id == THIRD[0] or chart_id in server) if tall else chart_id == self.third
            self.query_one(f"#{chart_id}", TimeChart).display = shown

