"""A small results table for the bench screen (rebuilt when a cell ends)."""

from __future__ import annotations

from textual.widgets import DataTable


class BenchTable(DataTable):
    """Rows of (lane, cell, figures...) from the bench's results dict."""

    DEFAULT_CSS = """
    BenchTable {
        height: 1fr;
        border: round $primary 40%;
        border-title-color: $text-muted;
        background: $surface;
    }
    """

    def on_mount(self) -> None:
        self._fit_title()
        self.cursor_type = "none"
        self.zebra_stripes = True

    units = ""
    """The units the columns' short labels leave out (``steady, span, stream in tok/s``): said in the border's
    title, whole (the labels ``steady span stream`` had no unit at any size)."""

    def set_units(self, text: str) -> None:
        self.units = text
        self._fit_title()

    def _fit_title(self) -> None:
        """``results · steady, span, stream in tok/s``; the units alone where that does not fit, then
        ``results``: a form that fits whole (the border's corners and a blank either side take 6)."""
        room = (self.size.width or 80) - 6
        forms = [f"results · {self.units}", self.units] if self.units else []
        title = next((f for f in forms if len(f) <= room), "results")
        if self.border_title != title:
            self.border_title = title

    legend = ""
    """What the marks mean (the border's subtitle, after ``↓ N more`` where rows are below the fold)."""

    def set_legend(self, text: str) -> None:
        self.legend = text
        self._say_more()

    def _say_more(self) -> None:
        """``↓ 2 more`` (rows) in the border when rows are below the fold (a short screen): never a last row
        hidden with nothing saying so."""
        room = self.size.height - 1  # the content's height (inside the border) less the header
        below = self.row_count - room - int(self.scroll_y) if self.size.height else 0
        more = f"↓ {below} more" if below > 0 else ""
        text = " · ".join(x for x in (more, self.legend) if x)
        if self.border_subtitle != text:
            self.border_subtitle = text

    def on_resize(self) -> None:
        self._fit_title()
        self._say_more()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._say_more()

    def show(self, columns: list[str], rows: list[list[str]]) -> None:
        """Replace the table's content: the columns too, every time, each given the width of its widest text
        (measured on the fly, a column could keep the width of a cell an earlier draw held -- a replay's early
        `max 172 ms (n=8)` -- and push `err` off the panel the table was fitted to, under load)."""
        self.clear(columns=True)
        for j, label in enumerate(columns):  # each column as wide as its widest text, not as it measured once
            self.add_column(label, width=max([len(label)] + [len(str(row[j])) for row in rows if j < len(row)]))
        for row in rows:
            self.add_row(*row)
        self._say_more()
