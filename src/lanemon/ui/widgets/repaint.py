"""Repaint what changed, when it changed: the two helpers every dashboard panel draws through.

Textual repaints a widget when it is told to (``refresh()``), and a ``Static.update`` /
``Label.update`` always tells it to -- with a full layout pass of the screen by default
(``layout=True``).  The app's redraw timer calls every panel's ``update_from`` whenever any fold
moved (a ``client_load`` window every 0.5 s, a host sample every second), so a panel that writes
all its labels each time costs a compositor pass and a reflow of the whole screen ten times a
second for text that did not change (issue 23: 78 % of a core while paused).

* :func:`set_text` -- a label's text: no-op when unchanged; a changed text repaints the label
  alone, and asks for a layout pass only when the label sizes itself by its content and the
  text's extent (lines, widest line) changed.
* :class:`Versioned` -- a mixin for a big widget drawn from several inputs (a chart): it calls
  ``refresh()`` only when the key of what it shows changed (:meth:`Versioned.repaint_if`).
  Textual keeps the rendered lines of a widget that was not refreshed, so an unchanged chart costs
  nothing at all.
* :class:`CachedLines` -- :class:`Versioned` drawn through Textual's Line API: the widget's
  ``render()`` (a Rich ``Text``) is cut into ``Strip`` s once per repaint and size and
  ``render_line`` serves them.  That skips Textual's conversion of a Rich ``Text`` into its own
  ``Content`` (a third of a chart's render), so a chart repaint costs a fraction of a millisecond
  per line.

docs/UI.md ("Drawing cheaply") says how a new panel uses them; ``tests/test_ui_render_cost.py``
counts the renders of an idle dashboard.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual.strip import Strip
from textual.widgets import Static

__all__ = ["CachedLines", "Versioned", "set_text", "text_strips"]

_UNSET = object()


def _extent(widget: Static) -> tuple[int, int] | None:
    """(lines, widest line in cells) of what ``widget`` shows; None when it is not plain content."""
    plain = getattr(getattr(widget, "visual", None), "plain", None)
    if not isinstance(plain, str):
        return None
    lines = plain.split("\n")
    return len(lines), max(cell_len(line) for line in lines)


def set_text(widget: Static, content: Any) -> bool:
    """Show ``content`` (markup, a ``Content`` or a Rich renderable) on ``widget`` if it differs from
    what this function gave it last; True when it repainted.

    The layout is redone only when the widget sizes itself by its content and the content's extent
    changed (``1,234`` -> ``1,235`` events repaints one label; ``999`` -> ``1,000`` moves the
    labels after it)."""
    if getattr(widget, "_lanemon_shown", _UNSET) == content:
        return False
    widget._lanemon_shown = content  # type: ignore[attr-defined]
    before = _extent(widget)
    widget.update(content, layout=False)
    if _resizes(widget, before, _extent(widget)):
        widget.refresh(layout=True)
    return True


def _resizes(widget: Static, before: tuple[int, int] | None, after: tuple[int, int] | None) -> bool:
    """Would the widget's size change from text of extent ``before`` to ``after`` (lines, widest line)?

    * a widget sized by the layout (``1fr``, fixed width and height): never;
    * an auto height: when the line count changed, or a line longer than the widget may wrap differently;
    * an auto width: when the widest line changed, unless both fit the widget's ``min-width`` or the old
      text was already cut short by the widget's width and the new one is at least that wide (an
      auto-width label its container cuts short stays as wide as the container lets it: 8 lanes'
      narrow panels)."""
    if before is None or after is None:
        return True
    styles = widget.styles
    auto_w = styles.width is None or styles.width.is_auto
    auto_h = styles.height is None or styles.height.is_auto
    shown = widget.content_size.width
    if auto_h and before[0] != after[0]:
        return True
    if before[1] == after[1]:
        return False
    if auto_w:
        least = getattr(styles.min_width, "cells", None) or 0
        if max(before[1], after[1]) <= least - styles.gutter.width:
            return False
        return not (shown and before[1] > shown and after[1] >= shown)
    return auto_h and (not shown or max(before[1], after[1]) > shown)


class Versioned:
    """Mix into a widget that draws from many inputs: ``repaint_if(key)`` refreshes it only when ``key``
    (a comparable value of everything it draws: data, scale, size-dependent choices) changed."""

    _drawn_key: Any = _UNSET
    repaints = 0
    """How many times the widget asked to be repainted (tests read it)."""

    def repaint_if(self, key: Any) -> bool:
        if key == self._drawn_key:
            return False
        self._drawn_key = key
        self.repaints += 1
        self.refresh()  # type: ignore[attr-defined]
        return True

    def forget_drawn(self) -> None:
        """The next :meth:`repaint_if` repaints whatever its key (a theme change)."""
        self._drawn_key = _UNSET


def text_strips(text: Text, console: Any, base: RichStyle) -> list[Strip]:
    """One :class:`Strip` per line of ``text`` (no wrapping: each line is as wide as it was built), each
    segment over ``base`` (the widget's own colour and background) and carrying its offset in the widget,
    as Textual's own rendering of the text would (text selection reads it)."""
    out = []
    for y, line in enumerate(text.split("\n", allow_blank=True)):
        segments = []
        x = 0
        for seg in line.render(console):
            style = base + seg.style if seg.style is not None else base
            segments.append(Segment(seg.text, style + RichStyle.from_meta({"offset": (x, y)})))
            x += len(seg.text)
        out.append(Strip(segments, line.cell_len))
    return out


class CachedLines(Versioned):
    """A :class:`Versioned` widget drawn through the Line API from its ``render()`` (a Rich ``Text``
    whose lines are the widget's content lines): rendered once per repaint, size and style."""

    _strips: list[Strip] | None = None
    _strips_for: Any = None

    def render_line(self, y: int) -> Strip:
        widget: Any = self
        style = widget.visual_style
        key = (self.repaints, widget.content_size, style)
        if self._strips is None or self._strips_for != key:
            self._strips = text_strips(widget.render(), widget.app.console, style.rich_style)
            self._strips_for = key
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(widget.content_size.width, style.rich_style)
