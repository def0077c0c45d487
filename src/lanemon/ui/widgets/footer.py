"""The key-hint footer of every screen: Textual's Footer, drawn whether or not the app has focus."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer as _TextualFooter


class Footer(_TextualFooter):
    """Textual's footer leaves its key hints undrawn while the app is not focused and waits for the first key
    or click; a browser tab served by ``lanemon web`` starts unfocused, so the footer stayed blank there
    (issue 12).  This footer draws them whatever the focus."""

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self.recompose)
