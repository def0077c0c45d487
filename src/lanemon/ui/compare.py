"""The compare TUI: two sessions (or two lanes) side by side.

``make_compare_app(result)`` builds it (CLI and tests) from a compare dict
(:func:`lanemon.reports.compare.compare` or ``compare_lanes``);
``run_compare_app(result)`` runs it and returns an exit code.  The content is
static: nothing runs in the background.  ``q`` quits.
"""

from __future__ import annotations

import sys
from typing import Any

from textual.app import App
from textual.binding import Binding

from lanemon.ui.screens.compare import CompareScreen
from lanemon.ui.themes import ThemeError, load_themes, resolve_theme

__all__ = ["CompareApp", "ThemeError", "make_compare_app", "run_compare_app"]


class CompareApp(App):
    TITLE = "lanemon compare"
    CSS_PATH = "lanemon.tcss"
    BINDINGS = [Binding("q", "quit", "Quit")]

    def __init__(self, result: dict[str, Any], *, theme: str, themes: dict[str, Any],
                 theme_warnings: list[str] | None = None) -> None:
        super().__init__()
        self.result = result
        self.theme_warnings = list(theme_warnings or [])
        for t in themes.values():
            self.register_theme(t)
        self.theme = theme

    def get_default_screen(self) -> CompareScreen:
        return CompareScreen(self.result)

    def on_mount(self) -> None:
        for msg in self.theme_warnings:
            self.notify(msg, title="theme", severity="warning", timeout=8, markup=False)


def make_compare_app(result: dict[str, Any], theme: str | None = None) -> CompareApp:
    """Build the compare app (ThemeError for an unknown theme name)."""
    warnings: list[str] = []
    themes = load_themes(warnings=warnings)
    name = resolve_theme(theme, themes)
    return CompareApp(result, theme=name, themes=themes, theme_warnings=warnings)


def run_compare_app(result: dict[str, Any], theme: str | None = None) -> int:
    app = make_compare_app(result, theme=theme)
    app.run()
    for warning in app.theme_warnings:
        print(f"lanemon: warning: {warning}", file=sys.stderr)
    return app.return_code or 0
