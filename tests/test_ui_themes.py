"""Theme files: shipped themes load, unknown names fail cleanly, broken files are skipped."""

from __future__ import annotations

import pytest
from textual.theme import Theme

from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource
from lanemon.ui.themes import (DEFAULT_THEME, ThemeError, load_themes, shipped_themes_dir, theme_from_dict, user_themes_dir)


@pytest.fixture(autouse=True)
def user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "lanemon"


def test_shipped_themes_load_and_are_distinct():
    warnings: list[str] = []
    themes = load_themes([shipped_themes_dir()], warnings=warnings)
    assert warnings == []
    assert {"lanemon-dark", "lanemon-light"} <= set(themes)
    dark, light = themes["lanemon-dark"], themes["lanemon-light"]
    assert isinstance(dark, Theme) and dark.dark is True
    assert light.dark is False
    for theme in (dark, light):
        for key in ("primary", "secondary", "accent", "background", "surface", "panel",
                    "foreground", "success", "warning", "error"):
            assert getattr(theme, key), f"{theme.name} lacks {key}"
        theme.to_color_system().generate()  # Textual can build the full palette


def test_default_theme_is_lanemon_dark():
    app = make_app(ScriptedSource([]))
    assert app.theme == DEFAULT_THEME == "lanemon-dark"
    assert make_app(ScriptedSource([]), theme="lanemon-light").theme == "lanemon-light"
    assert make_app(ScriptedSource([]), theme="textual-dark").theme == "textual-dark"  # Textual's own


def test_unknown_theme_raises_with_available_names():
    with pytest.raises(ThemeError) as info:
        make_app(ScriptedSource([]), theme="no-such-theme")
    message = str(info.value)
    assert "no-such-theme" in message
    assert "lanemon-dark" in message and "lanemon-light" in message


def test_broken_user_theme_is_reported_and_skipped(user_config):
    themes_dir = user_themes_dir()
    assert themes_dir == user_config / "themes"
    themes_dir.mkdir(parents=True)
    (themes_dir / "broken.toml").write_text('name = "broken"\nprimary = \n', encoding="utf-8")
    (themes_dir / "badcolor.toml").write_text('name = "badcolor"\nprimary = "#zzz"\n', encoding="utf-8")
    (themes_dir / "typo.toml").write_text('name = "typo"\nprimary = "#123456"\nprimery = "#fff"\n')
    (themes_dir / "mine.toml").write_text(
        'name = "mine"\ndark = true\nprimary = "#FF8800"\nbackground = "#101010"\n'
        '[variables]\n"footer-key-foreground" = "#FF8800"\n',
        encoding="utf-8",
    )
    warnings: list[str] = []
    themes = load_themes(warnings=warnings)
    assert "mine" in themes and "lanemon-dark" in themes
    assert not {"broken", "badcolor", "typo"} & set(themes)
    assert len(warnings) == 3
    joined = "\n".join(warnings)
    assert "broken.toml" in joined and "invalid TOML" in joined
    assert "'primary' = '#zzz' is not a color" in joined
    assert "unknown key 'primery'" in joined

    app = make_app(ScriptedSource([]), theme="mine")  # the app still starts, with the good user theme
    assert app.theme == "mine"
    assert len(app.theme_warnings) == 3


def test_theme_validation_messages():
    with pytest.raises(ThemeError, match="missing required key 'primary'"):
        theme_from_dict({"name": "x"}, "x.toml")
    with pytest.raises(ThemeError, match="'dark' must be true or false"):
        theme_from_dict({"name": "x", "primary": "#fff", "dark": "yes"}, "x.toml")


async def test_theme_warnings_are_shown_as_toasts(user_config):
    (user_themes_dir()).mkdir(parents=True)
    (user_themes_dir() / "broken.toml").write_text("name = [", encoding="utf-8")
    app = make_app(ScriptedSource([]))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert any("broken.toml" in n.message for n in app._notifications)
