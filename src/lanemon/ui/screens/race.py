"""The race screen: one :class:`RaceColumn` per lane, the prompt on top, the result at the end.

The screen never reads the bus.  The app folds every event into a
:class:`~lanemon.folds.race.RaceState` and calls :meth:`RaceScreen.refresh_from`
on its redraw timer, so a race streaming hundreds of tokens a second costs at
most ``refresh_hz`` repaints.  Live sources (anything with an async
``race()`` method, i.e. :class:`~lanemon.sessions.sources.LiveSession`) get a prompt
input; a replay shows the races recorded in its events.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid
from textual.widgets import Input

from lanemon.ui.widgets.footer import Footer
from lanemon.folds.race import RaceState, RaceView
from lanemon.folds.dashboard import SessionState
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.lane_card import card_columns
from lanemon.ui.widgets.race_column import RaceColumn
from lanemon.ui.widgets.race_header import RaceHeader
from lanemon.ui.widgets.race_results import RaceResults
from lanemon.ui.widgets.status_bar import StatusBar
from lanemon.workloads.race import PromptCycle, RacePlan, RacePrompt, race_json


RACE_CARD_WIDTH = 24
"""A race column's least width."""


def column_id(lane: str) -> str:
    """A DOM id for a lane name (lane names allow '.', which ids do not)."""
    return "race-lane-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in lane)


def can_race(source: Any) -> bool:
    return getattr(source, "mode", "") != "replay" and callable(getattr(source, "race", None))


class RaceScreen(LanemonScreen):
    """Side-by-side race view over the app's :class:`RaceState`."""

    NAME = "race"
    AUTO_FOCUS = ""  # the prompt box takes keys only once focused (/ or a click)

    DEFAULT_CSS = """
    RaceScreen #race-lanes {
        height: 1fr;
        padding: 0 1;
        grid-gutter: 0 1;
        grid-rows: 1fr;
    }
    RaceScreen #race-lanes RaceColumn { margin: 0; min-width: 0; }
    RaceScreen #race-input { margin: 0 1; }
    """

    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("slash,i", "focus_prompt", "Type a prompt", key_display="/"),
        Binding("enter", "submit_prompt", "Race", key_display="⏎"),
        # one group, `PgUp PgDn races`: the two keys' own words cut the replay footer's `←→ ±10s` to `←` at 80x24
        Binding("pageup", "browse(-1)", "Prev race", key_display="PgUp", priority=True,
                group=Binding.Group("races")),
        Binding("pagedown", "browse(1)", "Next race", key_display="PgDn", priority=True,
                group=Binding.Group("races")),
    ]

    def __init__(self, lanes: Sequence[str], *, racing: bool, next_prompt: PromptCycle | None = None,
                 plan: RacePlan | None = None) -> None:
        super().__init__()
        self._lanes = list(lanes)
        self.racing = racing
        self.next_prompt = next_prompt
        self.plan = plan
        self.shown: int | None = None
        """The race on screen; None follows the latest one."""

    # -- layout ----------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield RaceHeader(id="race-header")
        with Grid(id="race-lanes"):
            for name in self._lanes:
                yield RaceColumn(name, id=column_id(name))
        yield RaceResults(id="race-results")
        if self.racing:
            yield Input(placeholder=self._placeholder(), id="race-input")
        yield from self.replay_bar()
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(RaceResults).display = False
        if self.plan is not None:
            plan, self.plan = self.plan, None
            self.start(plan.prompts, endpoint=plan.endpoint, max_tokens=plan.max_tokens)

    def on_resize(self) -> None:
        self._arrange()
        if self.racing:  # the placeholder's fullest form that fits the box whole
            self.call_after_refresh(self._fit_placeholder)

    def _fit_placeholder(self) -> None:
        box = self.query_one("#race-input", Input)
        text = self._placeholder(box.content_region.width or None)
        if box.placeholder != text:
            box.placeholder = text

    def _arrange(self) -> None:
        """Up to four lanes side by side; more wrap onto rows (``lane_card.card_columns``), never sideways."""
        columns = card_columns(len(self._lanes), (self.size.width or 100) - 2, RACE_CARD_WIDTH)
        self.query_one("#race-lanes", Grid).styles.grid_size_columns = columns

    def _placeholder(self, width: int | None = None) -> str:
        """What the box is for, in the fullest form that fits ``width`` cells whole (80x24 cut it to `Enter
        alone races`, without the prompt it races)."""
        nxt = self.next_prompt.peek() if self.next_prompt else None
        name = (nxt.id or "built-in") if nxt else ""
        forms = ["/ to type a prompt, Enter to race it on every lane"
                 + (f" · Enter alone races the next shipped prompt ({name})" if nxt else "")]
        if nxt:
            forms += [f"/ types a prompt · Enter alone races the next shipped prompt ({name})",
                      f"/ types a prompt · Enter alone races {name}"]
        forms.append("/ types a prompt")
        return next((f for f in forms if width is None or len(f) <= width), forms[-1])

    def column(self, lane: str) -> RaceColumn:
        return self.query_one(f"#{column_id(lane)}", RaceColumn)

    # -- racing ------------------------------------------------------------------
    def start(self, prompts: Sequence[RacePrompt], *, endpoint: str = "completions",
              max_tokens: int | None = None) -> bool:
        """Run ``prompts`` one race after another through the app's source (False if busy)."""
        app = self.app
        if any(w.group == "race" and w.is_running for w in app.workers):
            app.notify("a race is running; wait for it to finish", timeout=3)
            return False
        source = app.source  # type: ignore[attr-defined]

        async def races() -> None:
            for prompt in prompts:
                await app.in_source(  # type: ignore[attr-defined]
                    lambda: source.race(prompt, endpoint=endpoint, max_tokens=max_tokens))

        self.shown = None
        # on the app, not the screen: leaving the screen does not stop a race
        app.run_worker(races(), group="race", exit_on_error=False)
        return True

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.submit(event.input)

    def submit(self, box: Input) -> None:
        """Race what the box holds; an empty box races the next shipped prompt."""
        text = box.value.strip()
        if text:
            prompt = RacePrompt(text=box.value, id="prompt")
        elif self.next_prompt is not None:
            prompt = self.next_prompt()
        else:
            return
        if self.start([prompt]):
            box.value = ""
            box.placeholder = self._placeholder(box.content_region.width or None)
        if box.has_focus:  # the keys go back to the screen: `q` quits, the footer shows it (`/` types again)
            self.set_focus(None)

    # -- actions -------------------------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("focus_prompt", "submit_prompt"):
            return self.racing
        return super().check_action(action, parameters)

    def action_focus_prompt(self) -> None:
        if self.racing:
            self.query_one("#race-input", Input).focus()

    def action_submit_prompt(self) -> None:
        """Enter while the box is not focused: race as Enter in the box would (the placeholder's promise).
        The keys stay the screen's (`/` puts the cursor in the box)."""
        if self.racing:
            self.submit(self.query_one("#race-input", Input))

    def action_back(self) -> None:
        """Esc leaves the prompt box first (its keys go back to the screen), then the screen."""
        if isinstance(self.focused, Input):
            self.set_focus(None)
            return
        super().action_back()

    def action_browse(self, step: int) -> None:
        races = sorted(self.app.race_state.races)  # type: ignore[attr-defined]
        if not races:
            return
        current = self.shown if self.shown in races else races[-1]
        i = max(0, min(len(races) - 1, races.index(current) + step))
        self.shown = None if i == len(races) - 1 else races[i]
        self.app.redraw(force=True)  # type: ignore[attr-defined]

    # -- drawing -------------------------------------------------------------------
    def view(self, races: RaceState) -> RaceView | None:
        if self.shown is not None and self.shown in races.races:
            return races.races[self.shown]
        return races.latest

    def fingerprint(self, app: Any) -> tuple:
        s = app.source
        return (app.race_state.version, app.state.version, self.shown, s.paused, s.speed, s.finished,
                str(s.recording_path))

    def draw(self, app: Any) -> None:
        self.refresh_from(app.race_state, app.state, app.source)

    def refresh_from(self, races: RaceState, state: SessionState, source: Any) -> None:
        """Redraw from the folded race state; lanes first seen in a race get a column."""
        view = self.view(races)
        names = list(view.lanes) if view is not None else []
        new = [n for n in names if n not in self._lanes]
        if new:
            container = self.query_one("#race-lanes", Grid)
            for name in new:
                self._lanes.append(name)
                container.mount(RaceColumn(name, id=column_id(name)))
            self._arrange()
            self.call_after_refresh(self.refresh_from, races, state, source)
            return
        now = max(races.last_t, state.last_t)
        hint = "" if self.racing else "no race in this recording yet"
        self.query_one(RaceHeader).update_from(view, count=len(races.races), now_ns=now, hint=hint)
        for name in self._lanes:
            model = state.lanes[name].model if name in state.lanes else None
            self.column(name).update_from(view.lanes.get(name) if view else None, now_ns=now, model=model)
        self.query_one(RaceResults).update_from(race_json(view) if view is not None and view.complete else None)
        self.query_one(StatusBar).show(source, state)
