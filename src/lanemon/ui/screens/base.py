"""What every lanemon screen shares: ``esc`` goes back, and the app's one redraw timer draws it.

The app keeps the folds (pure state fed from the bus) and owns the only redraw
timer.  On each tick it asks the screen on top for its :meth:`LanemonScreen.fingerprint`
(cheap: versions of the folds it shows) and calls :meth:`LanemonScreen.draw` only when
that changed, so a burst of token events costs one repaint per tick at most.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.binding import Binding
from textual.screen import Screen

from lanemon.ui.compositor import compositor

if TYPE_CHECKING:  # pragma: no cover
    from lanemon.ui.app import LanemonApp


class LanemonScreen(Screen):
    """A screen drawn from the app's folds."""

    BINDINGS = [Binding("escape", "back", "Back")]

    drawn: tuple | None = None
    """The fingerprint of the last draw (None: draw on the next tick)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        ours = compositor()  # a partial update renders the widgets under what changed (ui/compositor.py)
        if ours is not None:
            self._compositor = ours

    @property
    def lanemon(self) -> "LanemonApp":
        return self.app  # type: ignore[return-value]

    def on_screen_resume(self) -> None:
        self.app.call_after_refresh(self.app.refresh_bindings)  # the footer shows this screen's keys at once

    def replay_bar(self) -> list[Any]:
        """The timeline bar (playhead, markers, seeking) when the app's source is a seekable replay:
        every screen yields it just above its footer, so a replay looks like the run and seeks anywhere."""
        source = getattr(self.app, "source", None)
        if source is None or not hasattr(source, "seek"):
            return []
        from lanemon.ui.widgets.timeline_bar import TimelineBar

        return [TimelineBar(source, id="timeline")]

    def fingerprint(self, app: "LanemonApp") -> tuple:
        """What the screen shows, as a cheap comparable value."""
        return ()

    def draw(self, app: "LanemonApp") -> None:
        """Repaint from the app's folds (only called when :meth:`fingerprint` changed)."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "back":  # hidden (and a no-op) on the first screen
            return len(self.app.screen_stack) > 1
        return True

    def action_back(self) -> None:
        """Leave this screen (the first screen has nowhere to go back to)."""
        app = self.app
        if len(app.screen_stack) > 1:
            app.pop_screen()
            redraw: Any = getattr(app, "redraw", None)
            if redraw is not None:
                app.call_after_refresh(redraw, True)
        else:
            self.notify("this is the first screen: q quits", timeout=2)
