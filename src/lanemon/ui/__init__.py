"""The Textual UI.  Core modules never import this package."""

from lanemon.ui.app import LanemonApp, Source, make_app
from lanemon.ui.themes import ThemeError, load_themes

__all__ = ["LanemonApp", "Source", "ThemeError", "load_themes", "make_app"]
