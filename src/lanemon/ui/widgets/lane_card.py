"""The card every per-lane widget is drawn in: the dashboard's lane panel, the race column, the gauntlet lane.

A rounded border that turns green or red with the lane's state, a header row of the lane's name chip
(in the lane's own colour, the colour its lines and bars have on every chart), a detail that takes the
rest of the row (URL or model) and a badge at its right end (health, rank, repetition).  The subclasses
add their rows under it and say which of their states count as good or bad.
"""

from __future__ import annotations

from textual.containers import Horizontal, Vertical
from textual.widgets import Label

from lanemon.ui.colours import lane_colour
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.widgets.repaint import set_text


MOST_PER_ROW = 4
"""The most lane cards one row of the race and gauntlet screens holds; more lanes wrap onto rows."""


def card_columns(lanes: int, width: int, least: int, most: int = MOST_PER_ROW) -> int:
    """Columns of a grid of ``lanes`` cards at least ``least`` columns wide on a ``width``-column screen.

    Up to ``most`` cards side by side; more wrap onto as few rows as fit, balanced (5 or 6 lanes in
    two rows of 3, 7 or 8 in two rows of 4, never a row of 4 over a row of 1), so no row scrolls sideways.
    """
    n = max(1, lanes)
    per_row = max(1, min(n, most, width // max(1, least)))
    rows = -(-n // per_row)
    return -(-n // rows)


class LaneCard(Vertical):
    """One lane's card; ``.-good`` / ``.-bad`` colour its border (see :meth:`mark`)."""

    DEFAULT_CSS = """
    LaneCard {
        width: 1fr;
        height: auto;
        min-width: 20;
        border: round $primary 40%;
        border-title-color: $text-muted;
        background: $surface;
        padding: 0 1;
        margin: 0 0 0 1;
    }
    LaneCard:first-of-type { margin-left: 0; }  /* the first card of its own type (LanePanel, RaceColumn, ...) */
    LaneCard.-good { border: round $success 60%; }
    LaneCard.-bad { border: round $error 70%; }
    LaneCard .row { height: 1; }
    LaneCard Label { text-wrap: nowrap; text-overflow: ellipsis; }
    LaneCard #name {
        background: $primary;
        color: $background;
        text-style: bold;
        padding: 0 1;
        margin-right: 1;
    }
    LaneCard .detail { width: 1fr; color: $text-muted; }
    LaneCard .badge { padding: 0 1; text-style: bold; min-width: 5; }
    """

    def __init__(self, lane: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.lane = lane
        self._colour: str | None = None

    def on_mount(self) -> None:
        self.paint_name()
        # a theme picked from the palette changes the lane colours: the chip follows at once
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.call_after_refresh(self.paint_name))

    def header(self, detail: Label, badge: Label, *more: Label) -> Horizontal:
        """The card's first row (class ``head``): name chip, ``detail`` (takes the rest), any ``more``,
        ``badge`` at the right (give it class ``badge`` for the padded chip look)."""
        detail.add_class("detail")
        return Horizontal(Label(escape(self.lane), id="name"), detail, *more, badge, classes="row head")

    def mark(self, *, good: bool, bad: bool) -> None:
        """Colour the border: green when ``good``, red when ``bad``, the plain border otherwise."""
        self.set_class(good and not bad, "-good")
        self.set_class(bad, "-bad")

    @staticmethod
    def badge_state(badge: Label, text: str, state: str, states: tuple[str, ...]) -> None:
        """Show ``text`` on ``badge`` with class ``state``, the other ``states`` removed."""
        set_text(badge, text)
        for cls in states:
            badge.set_class(cls == state, cls)

    def lane_index(self) -> int:
        """The card's place among its parent's cards of the same type (the lanes' order, which picks colours)."""
        parent = self.parent
        if parent is None:
            return 0
        cards = [c for c in parent.children if type(c) is type(self)]
        return cards.index(self) if self in cards else 0

    def paint_name(self) -> None:
        """The name chip in the lane's colour, the one its series have on every chart and in every legend."""
        try:
            colour = lane_colour(self.app, self.lane_index())
        except Exception:  # not mounted in an app yet
            return
        names = self.query("#name")
        if colour != self._colour and names:
            self._colour = colour
            names.first(Label).styles.background = colour
