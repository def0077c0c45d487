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
        self.border_title = "results"
        self.cursor_type = "none"
        self.zebra_stripes = True

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
        self._say_more()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        self._say_more()

    def show(self, columns: list[str], rows: list[list[str]]) -> None:
        """Replace the table's content."""
        if [str(c.label) for c in self.columns.values()] != columns:
            self.clear(columns=True)
            self.add_columns(*columns)
        else:
            self.clear()
        for row in rows:
            self.add_row(*row)
        self._say_more()
