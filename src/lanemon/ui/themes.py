"""Theme files: ``themes/*.toml`` -> :class:`textual.theme.Theme`.

A theme file is flat TOML::

    name = "lanemon-dark"
    dark = true
    primary = "#4FB3D9"
    secondary = "#9C8CF0"
    ...
    [variables]            # optional Textual design variables
    "footer-key-foreground" = "#F5A97F"

Files are read from the themes shipped with lanemon (``lanemon/_themes`` in a
wheel, the repository's top-level ``themes/`` in an editable install) and then
from the user's ``<config dir>/themes``; a user theme with the same name
replaces the shipped one.  A broken file is skipped and reported, never fatal.
"""

from __future__ import annotations

import importlib.resources
import re
from pathlib import Path
from typing import Any

from textual.color import Color, ColorParseError
from textual.theme import BUILTIN_THEMES, Theme

from lanemon.config import ConfigError, check_number, config_dir, read_toml
from lanemon.untrusted import inert

_CSS_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_CSS_VALUE = re.compile(r"^[^;{}\"'\\\x00-\x1f\x7f-\x9f]{0,200}$")

DEFAULT_THEME = "lanemon-dark"

COLOR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "background",
    "surface",
    "panel",
    "foreground",
    "success",
    "warning",
    "error",
    "boost",
)
REQUIRED_KEYS = ("name", "primary")
ALLOWED_KEYS = frozenset({"name", "dark", "variables", "luminosity_spread", "text_alpha", *COLOR_KEYS})


class ThemeError(ValueError):
    """An unknown theme name or an invalid theme file (message fit for one line)."""


def shipped_themes_dir() -> Path:
    """Where lanemon's own theme files live (wheel package data, else the repo's ``themes/``)."""
    try:
        packaged = importlib.resources.files("lanemon") / "_themes"
        if packaged.is_dir():
            return Path(str(packaged))
    except (ModuleNotFoundError, TypeError):  # pragma: no cover - odd loaders
        pass
    return Path(__file__).resolve().parents[3] / "themes"


def user_themes_dir() -> Path:
    return config_dir() / "themes"


def theme_from_dict(data: dict[str, Any], where: str) -> Theme:
    """Validate one parsed theme table; raises :class:`ThemeError` naming the bad key."""
    for key in data:
        if key not in ALLOWED_KEYS:
            raise ThemeError(f"{where}: unknown key {key!r} (allowed: {', '.join(sorted(ALLOWED_KEYS))})")
    for key in REQUIRED_KEYS:
        if key not in data:
            raise ThemeError(f"{where}: missing required key {key!r}")
    name = data["name"]
    if not isinstance(name, str) or not name.strip() or len(name) > 64 or inert(name, 64) != name:
        raise ThemeError(f"{where}: 'name' must be a non-empty string of at most 64 printable characters")
    kwargs: dict[str, Any] = {"name": name}
    for key in COLOR_KEYS:
        if key in data:
            value = data[key]
            if not isinstance(value, str):
                raise ThemeError(f"{where}: {key!r} must be a color string like '#4FB3D9'")
            try:
                Color.parse(value)
            except ColorParseError:
                raise ThemeError(f"{where}: {key!r} = {value!r} is not a color") from None
            kwargs[key] = value
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeError(f"{where}: 'dark' must be true or false")
    kwargs["dark"] = dark
    for key in ("luminosity_spread", "text_alpha"):
        if key in data:
            try:  # finite, in [0, 1]: NaN or inf would reach every colour Textual derives from the theme
                kwargs[key] = check_number(data[key], f"{where}: {key!r}", lo=0, hi=1)
            except ConfigError as exc:
                raise ThemeError(str(exc)) from None
    variables = data.get("variables", {})
    if not isinstance(variables, dict) or len(variables) > 256 or not all(
        isinstance(k, str) and _CSS_NAME.match(k) and isinstance(v, str) and _CSS_VALUE.match(v)
        for k, v in variables.items()
    ):
        raise ThemeError(f"{where}: [variables] must be a table (at most 256) of CSS variable names to values "
                         "without ';', braces, quotes or control characters")
    kwargs["variables"] = dict(variables)
    return Theme(**kwargs)


def load_theme_file(path: Path) -> Theme:
    return theme_from_dict(read_toml(path, ThemeError), str(path))


def load_themes(
    dirs: list[Path] | None = None,
    *,
    warnings: list[str] | None = None,
) -> dict[str, Theme]:
    """All loadable themes, name -> Theme, from ``dirs`` (default: shipped, then user dir).

    Later directories override earlier ones.  Every file that fails to load is
    skipped, and a one-line message is appended to ``warnings`` when given.
    """
    if dirs is None:
        dirs = [shipped_themes_dir(), user_themes_dir()]
    themes: dict[str, Theme] = {}
    for directory in dirs:
        if not directory.is_dir():
            continue
        for path in sorted(directory.glob("*.toml")):
            try:
                theme = load_theme_file(path)
            except ThemeError as exc:
                if warnings is not None:
                    warnings.append(f"theme skipped: {exc}")
                continue
            themes[theme.name] = theme
    return themes


def resolve_theme(name: str | None, themes: dict[str, Theme]) -> str:
    """The theme name to use: ``name`` if known (lanemon's or Textual's), else ThemeError."""
    if name is None:
        return DEFAULT_THEME if DEFAULT_THEME in themes else "textual-dark"
    if name in themes or name in BUILTIN_THEMES:
        return name
    available = sorted(themes) + sorted(n for n in BUILTIN_THEMES if n not in themes)
    raise ThemeError(f"unknown theme {name!r}; available: {', '.join(available)}")
