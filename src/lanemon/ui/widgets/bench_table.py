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

    def show(self, columns: list[str], rows: list[list[str]]) -> None:
        """Replace the table's content."""
        if [str(c.label) for c in self.columns.values()] != columns:
            self.clear(columns=True)
            self.add_columns(*columns)
        else:
            self.clear()
        for row in rows:
            self.add_row(*row)
