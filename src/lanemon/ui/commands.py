"""The command palette's commands (``ctrl+p``): every key of the screen on top, by its name, so typing ``err``
finds ``Errors (e)`` and ``race`` finds ``Race (r)`` -- the keys the footer has no room for are there too
(issue 40 item 12: the palette found nothing for either, and ``e``, ``!`` and ``y`` were only under Keys)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from textual.app import SystemCommand
from textual.screen import Screen

HELP = {
    "open('errors')": "every kept error of every lane, whole",
    "open('alerts')": "alert rules, what fired and what resolved",
    "open('history')": "past sessions of these lanes (the history database)",
    "open('race')": "race a prompt on every lane side by side",
    "open('timeline')": "every request on a time axis",
    "open('bench')": "the bench screen",
    "open('gauntlet')": "the agent gauntlet screen",
    "open('dashboard')": "the dashboard",
    "toggle_pause": "pause or resume",
    "toggle_host": "show or hide the host's CPU and memory",
    "share_info": "how viewers attach to this shared session",
}
"""What a command does, beyond its name (the binding's description)."""


def key_commands(app: Any, screen: Screen) -> Iterable[SystemCommand]:
    """One command per enabled key of ``screen`` (its own and the app's), named ``Description (key)``, once per
    action; running it is pressing the key.  Textual's own (quit, theme, keys, screenshot) are added by the app."""
    seen: set[str] = set()
    for node, binding, enabled, _ in screen.active_bindings.values():
        action = binding.action
        if not enabled or action in seen or action == "quit" or not binding.description:
            continue
        seen.add(action)
        key = binding.key_display or app.get_key_display(binding)
        yield SystemCommand(f"{binding.description} ({key})", HELP.get(action, binding.description),
                            lambda action=action, node=node: app.run_action(action, node))
