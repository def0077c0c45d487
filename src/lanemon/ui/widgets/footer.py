"""The key-hint footer of every screen: Textual's Footer, drawn whether or not the app has focus, and fitted to
its width: keys that do not fit are left out whole, the least needed first (a replay's ←/→ and [/] before the
screens' letters), never cut at the right edge."""

from __future__ import annotations

from collections import defaultdict
from itertools import groupby

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer as _TextualFooter
from textual.widgets._footer import FooterKey, FooterLabel, KeyGroup

DROP_FIRST = ("open('history')", "open('errors')", "open('timeline')", "open('race')", "open('gauntlet')", "open('bench')", "toggle_host",
              "open('alerts')", "window", "chart", "open('dashboard')", "faster slower",
              "seek_marker(-1) seek_marker(1)", "browse(-1) browse(1)")
"""Actions whose keys the footer leaves out first when they do not all fit, in this order (their keys still
work and are in the command palette); the markers' ``[]`` and the race screen's PgUp/PgDn last (80x24's race
replay cut ``[] mark``, the live race ``p Pause``); every other key (quit, back, pause, ←→ seeking, zoom,
typing a prompt) stays."""
PALETTE_W = 13
"""The ``▏^p palette`` key at the right end."""


def _width(key: str, description: str, compact: bool) -> int:
    """A key hint's columns (Textual's FooterKey: `` k `` then ``description ``; compact: ``k description``)."""
    return len(key) + len(description) + (1 if compact else 3) - (0 if description else 1)


def fit_bindings(groups: list[tuple[object, list[tuple[str, str, str]]]], width: int, compact: bool) -> set[str]:
    """The actions to leave out so that ``groups`` -- ``(group, [(action, key, description), ...])`` in footer
    order, a group with more than one binding drawn as its keys then the group's description -- fit ``width``
    columns: actions of :data:`DROP_FIRST`, in that order, until they do."""

    def used(dropped: set[str]) -> int:
        total = 1  # the footer's own left margin
        for group, items in groups:
            items = [i for i in items if i[0] not in dropped]
            if not items:
                continue
            if group is not None and len(items) > 1:
                total += sum(len(k) + (0 if getattr(group, "compact", False) else 2) for _, k, _ in items)
                total += len(getattr(group, "description", "")) + 2
            else:
                total += sum(_width(k, d, compact) for _, k, d in items)
        return total

    dropped: set[str] = set()
    for action in DROP_FIRST:
        if used(dropped) <= width:
            break
        dropped.update(action.split())
    for action in reversed(DROP_FIRST):  # one left out early may fit beside the others after all
        if set(action.split()) <= dropped and used(dropped - set(action.split())) <= width:
            dropped -= set(action.split())
    return dropped


class Footer(_TextualFooter):
    """Textual's footer leaves its key hints undrawn while the app is not focused and waits for the first key
    or click; a browser tab served by ``lanemon web`` starts unfocused, so the footer stayed blank there
    (issue 12).  This footer draws them whatever the focus, and only those that fit its width (issue 25
    item 10: the replay's footer stopped at ``r Race`` at 100 columns, hiding ←/→ and [/])."""

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if self.is_attached and screen is self.screen:
            self.call_after_refresh(self.recompose)

    def on_resize(self) -> None:
        if self.size.width != getattr(self, "_fitted_to", None):
            self.call_after_refresh(self.recompose)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        active_bindings = self.screen.active_bindings
        action_to_bindings: defaultdict[str, list] = defaultdict(list)
        for _, binding, enabled, tooltip in active_bindings.values():
            if binding.show:
                action_to_bindings[binding.action].append((binding, enabled, tooltip))
        grouped = [(group, list(items)) for group, items in
                   groupby(action_to_bindings.values(), lambda multi: multi[0][0].group)]
        palette = self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE
        self._fitted_to = self.size.width
        room = (self.size.width or 10_000) - (PALETTE_W if palette else 0)
        plan = [(group, [(m[0][0].action, self.app.get_key_display(m[0][0]), m[0][0].description) for m in items])
                for group, items in grouped]
        dropped = fit_bindings(plan, room, self.compact)
        self.styles.grid_size_columns = len([a for a in action_to_bindings if a not in dropped])

        for group, multi_bindings_list in grouped:
            multi_bindings_list = [m for m in multi_bindings_list if m[0][0].action not in dropped]
            if group is not None and len(multi_bindings_list) > 1:
                with KeyGroup(classes="-compact" if group.compact else ""):
                    for multi_bindings in multi_bindings_list:
                        binding, enabled, tooltip = multi_bindings[0]
                        yield FooterKey(binding.key, self.app.get_key_display(binding), "", binding.action,
                                        disabled=not enabled, tooltip=tooltip or binding.description,
                                        classes="-grouped").data_bind(compact=_TextualFooter.compact)
                yield FooterLabel(group.description)
            else:
                for multi_bindings in multi_bindings_list:
                    binding, enabled, tooltip = multi_bindings[0]
                    yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description,
                                    binding.action, disabled=not enabled,
                                    tooltip=tooltip).data_bind(compact=_TextualFooter.compact)
        if palette:
            try:
                _node, binding, enabled, tooltip = active_bindings[self.app.COMMAND_PALETTE_BINDING]
            except KeyError:
                pass
            else:
                yield FooterKey(binding.key, self.app.get_key_display(binding), binding.description, binding.action,
                                classes="-command-palette", disabled=not enabled,
                                tooltip=binding.tooltip or binding.description)
