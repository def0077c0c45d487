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
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Static

__all__ = ["CachedLines", "Versioned", "line_strip", "set_text", "text_strips"]

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


HOLD_NS = 10_000_000_000
"""How long text must stay narrower than the width :func:`hold_width` holds before the widget narrows."""


def hold_width(widget: Static, now_ns: int, release_ns: int = HOLD_NS) -> None:
    """Let an auto-width ``widget`` keep the widest width its text has had (its ``min-width`` ratchets up)
    until its text has been narrower for ``release_ns`` (session time ``now_ns``).  Text that narrows and
    widens again -- a note that comes and goes, a figure whose words change -- then repaints the widget alone
    (:func:`set_text`) instead of laying the whole screen out again each time (a layout pass re-renders every
    widget: ~10 ms at 160x45); the room it held goes back to its neighbours once the note has gone for good."""
    extent = _extent(widget)
    if extent is None:
        return
    want = extent[1] + widget.styles.gutter.width
    held = getattr(widget.styles.min_width, "cells", None) or 0
    since = getattr(widget, "_lanemon_narrow_since", None)
    if want >= held:
        if want > held:
            widget.styles.min_width = want
        widget._lanemon_narrow_since = None  # type: ignore[attr-defined]
    elif since is None or now_ns < since:
        widget._lanemon_narrow_since = now_ns  # type: ignore[attr-defined]
    elif now_ns - since >= release_ns:
        widget.styles.min_width = want
        widget._lanemon_narrow_since = None  # type: ignore[attr-defined]


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


def line_strip(line: Text, y: int, console: Any, base: RichStyle) -> Strip:
    """One content line as a :class:`Strip` (no wrapping: as wide as it was built), each segment over
    ``base`` (the widget's own colour and background) and carrying its offset in the widget, as Textual's
    own rendering of the text would (text selection reads it).

    A line built by appending styled pieces (its spans in order, none overlapping, no style of its own: every
    chart row) is cut at its spans directly, each span's style resolved once per line; any other line goes
    through Rich's own ``Text.render`` -- the same segments either way (tests/test_ui_render_cost.py), at a
    third of the cost for a chart row (a chart's repaint cut ~25 rows a second into strips in the demo)."""
    spans = line.spans
    if line.style or not _in_order(spans, len(line.plain)):
        pieces: Any = ((seg.text, seg.style) for seg in line.render(console))
    else:
        pieces = _cut(line.plain, spans, console)
    segments = []
    x = 0
    resolved: dict[Any, RichStyle] = {}
    for text, seg_style in pieces:
        if seg_style is None:
            style = base
        else:
            style = resolved.get(seg_style)
            if style is None:
                style = resolved[seg_style] = base + seg_style
        segments.append(Segment(text, _at(style, x, y)))
        x += len(text)
    return Strip(segments, line.cell_len)


_OFFSET_STYLES: dict[tuple[RichStyle, int, int], RichStyle] = {}
OFFSET_STYLES_KEPT = 8192
"""Styles-with-offset kept for reuse (a chart's cells repeat their colours at the same places from one repaint
to the next); the cache starts again when full, so it stays within a few MB."""


def _at(style: RichStyle, x: int, y: int) -> RichStyle:
    """``style`` with the ``offset`` meta of a segment at (x, y), as ``style + Style.from_meta(...)``."""
    key = (style, x, y)
    got = _OFFSET_STYLES.get(key)
    if got is None:
        got = style + RichStyle.from_meta({"offset": (x, y)})
        if got.link:  # a link's style is copied per use (Rich): not shared
            return got
        if len(_OFFSET_STYLES) >= OFFSET_STYLES_KEPT:
            _OFFSET_STYLES.clear()
        _OFFSET_STYLES[key] = got
    return got


_NULL = RichStyle.null()


def _in_order(spans: list[Any], length: int) -> bool:
    """The spans follow one another without overlapping (as ``Text.append`` makes them)."""
    end = 0
    for span in spans:
        if span.start < end or span.end < span.start:
            return False
        end = span.end
    return end <= length


def _cut(text: str, spans: list[Any], console: Any) -> list[tuple[str, RichStyle | None]]:
    """``Text.render`` of a text with no style of its own whose spans do not overlap: the gaps in the null
    style, each span in its own style (``console.get_style``, the null style for a name it does not know)."""
    out: list[tuple[str, RichStyle | None]] = []
    if not spans:
        return [(text, None)]  # as Rich: one segment, the line's own (no) style
    styles: dict[Any, RichStyle] = {}
    at = 0
    for span in spans:
        start, end = span.start, span.end
        if start > at:
            out.append((text[at:start], _NULL))
        if end > start:
            style = styles.get(span.style)
            if style is None:
                style = styles[span.style] = console.get_style(span.style, default=_NULL)
            out.append((text[start:end], style))
        at = end
    if len(text) > at:
        out.append((text[at:], _NULL))
    return out


def text_strips(text: Text, console: Any, base: RichStyle) -> list[Strip]:
    """One :class:`Strip` per line of ``text`` (:func:`line_strip`)."""
    return [line_strip(line, y, console, base) for y, line in enumerate(text.split("\n", allow_blank=True))]


class CachedLines(Versioned):
    """A :class:`Versioned` widget drawn through the Line API from its ``render()`` (a Rich ``Text``
    whose lines are the widget's content lines), that repaints only the lines that changed.

    A repaint (:meth:`repaint_if` with a new key) renders the text at once and compares it line by line
    with what is on the screen: only the lines whose text or styles differ are turned into strips and
    refreshed (``refresh(region)`` of those lines), so Textual's compositor redoes those lines alone --
    a chart whose axis moved one column redraws its plot rows that hold points, not its title, y labels'
    blank rows or empty rows; a new point redraws the rows it touched.  The first paint, a resize, a
    style (theme) change or a hidden widget take the whole-widget path (``render_line`` renders all)."""

    _strips: list[Strip] | None = None
    _lines: list[Text] | None = None
    _strips_for: Any = None
    lines_repainted = 0
    """Content lines turned into strips since mount (tests read it: the compositor redoes as many)."""

    def content_lines(self) -> list[Text]:
        """The widget's content, a ``Text`` per line: its ``render()`` cut at its newlines (a widget that builds
        its lines one by one returns them as they are, saving the cut)."""
        widget: Any = self
        return widget.render().split("\n", allow_blank=True)

    def _geometry(self) -> tuple[Any, Any]:
        widget: Any = self
        return widget.content_size, widget.visual_style

    def repaint_if(self, key: Any) -> bool:
        if key == self._drawn_key:
            return False
        self._drawn_key = key
        self.repaints += 1
        widget: Any = self
        size, style = self._geometry()
        if (self._strips is None or self._lines is None or not widget.is_mounted or not widget.region.area
                or self._strips_for is None or self._strips_for[1:] != (size, style)):
            self._strips = self._lines = None  # whole widget: rendered when Textual asks for its lines
            widget.refresh()
            return True
        lines = self.content_lines()
        old_lines, old_strips = self._lines, self._strips
        strips: list[Strip] = []
        changed: list[int] = []
        console, base = widget.app.console, style.rich_style
        for y, line in enumerate(lines):
            if y < len(old_lines) and old_lines[y] == line:
                strips.append(old_strips[y])
            else:
                strips.append(line_strip(line, y, console, base))
                changed.append(y)
        changed += range(len(lines), len(old_lines))  # lines that are gone: blank now
        self._lines, self._strips, self._strips_for = lines, strips, (self.repaints, size, style)
        self.lines_repainted += len(changed)
        width = size.width
        for y0, y1 in _runs(changed):
            widget.refresh(Region(0, y0, width, y1 - y0))
        return True

    def render_line(self, y: int) -> Strip:
        widget: Any = self
        size, style = self._geometry()
        key = (self.repaints, size, style)
        if self._strips is None or self._strips_for != key:
            self._lines = self.content_lines()
            console, base = widget.app.console, style.rich_style
            self._strips = [line_strip(line, i, console, base) for i, line in enumerate(self._lines)]
            self._strips_for = key
            self.lines_repainted += len(self._strips)
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(size.width, style.rich_style)


def _runs(ys: list[int]) -> list[tuple[int, int]]:
    """Sorted line numbers as ``(first, end)`` runs of consecutive lines."""
    out: list[tuple[int, int]] = []
    for y in sorted(ys):
        if out and out[-1][1] == y:
            out[-1] = (out[-1][0], y + 1)
        else:
            out.append((y, y + 1))
    return out
