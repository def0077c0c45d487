"""The Textual UI: one app (``app.py``), its screens (``screens/``, one a file) and widgets (``widgets/``).

Core modules never import this package.  ``make_app`` builds the app for the CLI and the tests.
"""

from lanemon.ui.app import LanemonApp, Source, make_app
from lanemon.ui.themes import ThemeError, load_themes

__all__ = ["LanemonApp", "Source", "ThemeError", "load_themes", "make_app"]
