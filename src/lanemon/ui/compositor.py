"""A compositor pass that renders the widgets under what changed, not every widget between the changes.

Textual's compositor draws a partial update by cropping the screen to the *bounding box* of every region
refreshed since the last pass and rendering every widget that box touches, each over its whole height, then
sending the terminal only the refreshed lines' spans.  On the dashboard something changes at the top (the
status bar's clock and CPU figure) and at the bottom (a chart's column step) every second, so each pass
rendered nearly all of its ~90 widgets -- labels, rows and containers none of whose cells were sent -- and
Textual's per-widget work (its colours walked up the DOM, its cached lines filtered and cropped) was most of
the compositor's time (docs/PERFORMANCE.md section 9, "The compositor renders what changed").

:class:`SpanCompositor` renders, in a partial update, only the widgets whose visible part meets a span that
is sent (the refreshed regions, line by line), and each of them only over the band of its lines that holds
such a span.  Everything else is Textual's own: the same spans, the same chops (a widget in front still wins
its cells), the same bytes to the terminal (``tests/test_ui_render_cost.py`` compares each pass with Textual's
stock pass over a live dashboard).  A widget left out here is one whose cells no span reaches, so its strips
would have been computed and dropped.  A full update (a layout, a resize, a screenshot) is Textual's.

It leans on private parts of Textual (``_render_chops``, ``_get_renders``, ``_regions_to_spans``,
``ChopsUpdate``): where they are missing (another Textual), :func:`compositor` returns Textual's own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.geometry import Region
from textual.strip import Strip

try:
    from textual._compositor import ChopsUpdate, Compositor
except ImportError:  # another Textual's layout: every screen keeps Textual's own compositor
    ChopsUpdate = Compositor = None  # type: ignore[assignment,misc]

__all__ = ["SpanCompositor", "compositor", "SUPPORTED"]

SUPPORTED = Compositor is not None and all(hasattr(Compositor, name) for name in (
    "_render_chops", "_get_renders", "_regions_to_spans", "render_partial_update", "visible_widgets", "cuts"))
"""This Textual has the parts :class:`SpanCompositor` builds on."""


class SpanCompositor(Compositor if Compositor is not None else object):  # type: ignore[misc]
    """Textual's compositor, whose partial updates render only the widgets under the spans they send."""

    _spans_by_line: dict[int, list[tuple[int, int]]] | None = None
    """During a partial update: the spans sent, ``{y: [(x1, x2), ...]}`` (x2 exclusive)."""

    def render_partial_update(self) -> ChopsUpdate | None:
        regions = self._dirty_regions.copy()
        self._dirty_regions.clear()
        if not regions:
            return None
        crop = Region.from_union(list(regions)).intersection(self.size.region)
        spans = list(self._regions_to_spans(regions))
        by_line: dict[int, list[tuple[int, int]]] = {}
        for y, x1, x2 in spans:
            by_line.setdefault(y, []).append((x1, x2))
        self._spans_by_line = by_line
        try:
            chops = self._render_chops(crop, by_line.__contains__)
        finally:
            self._spans_by_line = None
        return ChopsUpdate(chops, spans, [cut_set[1:] for cut_set in self.cuts])

    def _get_renders(self, crop: Region | None = None) -> Iterable[tuple[Region, Region, list[Strip]]]:
        by_line = self._spans_by_line
        if by_line is None:  # a full update, a screenshot: Textual's
            yield from super()._get_renders(crop)
            return
        for widget, (region, clip) in self.visible_widgets.items():
            band = _band(region.intersection(clip), by_line)
            if band is not None:
                yield region, band, widget.render_lines(band.translate((-region.x, -region.y)))


def _band(visible: Region, by_line: dict[int, list[tuple[int, int]]]) -> Region | None:
    """The lines of ``visible`` (a widget's visible part, screen coordinates) from the first to the last that
    a span reaches, whole width; None when no span does.  A span ``[x1, x2)`` counts as reaching a widget that
    starts at ``x2``: Textual's update moves the cursor to such a chop (and writes none of it), so rendering
    it too keeps the bytes sent the same as Textual's own pass."""
    x, y, width, height = visible
    if not width or not height:
        return None
    end = x + width
    first = last = -1
    get = by_line.get
    for row in range(y, y + height):
        for x1, x2 in get(row, ()):
            if x <= x2 and end > x1:
                if first < 0:
                    first = row
                last = row
                break
    if first < 0:
        return None
    return Region(x, first, width, last - first + 1)


def compositor() -> Any:
    """A compositor for a lanemon screen: :class:`SpanCompositor` where this Textual supports it, else None
    (the screen keeps the one Textual gave it)."""
    return SpanCompositor() if SUPPORTED else None
