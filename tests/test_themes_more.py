"""The three shipped themes, switching at run time, user themes, broken files, charts in
theme colours, and one dashboard snapshot per shipped theme."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App
from textual.color import Color

from lanemon.cli.main import main
from lanemon.ui.app import make_app
from lanemon.ui.sample import ScriptedSource
from lanemon.ui.themes import DEFAULT_THEME, load_themes, shipped_themes_dir, user_themes_dir
from lanemon.ui.widgets.bench_chart import BenchChart

SHIPPED = ("lanemon-dark", "lanemon-light", "lanemon-high-contrast")
SNAP_PATH = Path("recordings/20260503-101500-demo.jsonl")


@pytest.fixture(autouse=True)
def user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "lanemon"


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two colours."""

    def lum(c: str) -> float:
        def ch(v: int) -> float:
            v /= 255
            return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

        r, g, b_ = Color.parse(c).rgb
        return 0.2126 * ch(r) + 0.7152 * ch(g) + 0.0722 * ch(b_)

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_three_shipped_themes_load_and_read_well():
    warnings: list[str] = []
    themes = load_themes([shipped_themes_dir()], warnings=warnings)
    assert warnings == []
    assert set(SHIPPED) <= set(themes)
    for name in SHIPPED:
        theme = themes[name]
        theme.to_color_system().generate()
        assert contrast(theme.foreground, theme.background) >= 7, name  # body text: WCAG AAA
        for key in ("primary", "success", "warning", "error"):
            assert contrast(getattr(theme, key), theme.background) >= 3, (name, key)  # signals: WCAG AA large
    hc = themes["lanemon-high-contrast"]
    assert contrast(hc.foreground, hc.background) == pytest.approx(21)
    for key in ("primary", "success", "warning", "error", "accent"):
        assert contrast(getattr(hc, key), hc.background) >= 7, key


async def test_themes_are_registered_and_switch_at_run_time():
    app = make_app(ScriptedSource(mode="demo", hold=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        assert set(SHIPPED) <= set(app.available_themes)  # what the palette's "Change theme" lists
        assert app.theme == DEFAULT_THEME
        app.redraw(force=True)
        chart = app.screen.query_one("#chart-ttft")
        before = chart.colours["B"]
        for name in ("lanemon-high-contrast", "lanemon-light", "nord"):
            app.theme = name  # what picking it in the command palette does
            await pilot.pause()
            assert app.theme == name
            theme = app.available_themes[name]
            assert app.screen.styles.background == Color.parse(theme.background)
            app.redraw(force=True)
            colour = Color.parse(chart.colours["B"]).rgb  # lane B is the theme's accent on every chart
            want = Color.parse(theme.accent).rgb
            assert all(abs(a - b) <= 2 for a, b in zip(colour, want)), (name, colour, want)  # follows
        assert colour != before
        await pilot.press("q")


async def test_command_palette_offers_the_shipped_themes():
    app = make_app(ScriptedSource(mode="demo", hold=True))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Theme" in commands or any("theme" in c.lower() for c in commands)
        await pilot.press("ctrl+p")
        await pilot.pause()
        from textual.command import CommandPalette

        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")


async def test_bench_chart_series_follow_the_theme():
    class ChartApp(App):
        def __init__(self) -> None:
            super().__init__()
            for theme in load_themes().values():
                self.register_theme(theme)
            self.theme = "lanemon-dark"

        def compose(self):
            yield BenchChart(id="chart")

    app = ChartApp()
    async with app.run_test(size=(80, 20)) as pilot:
        chart = app.query_one(BenchChart)
        chart.show_lines("tok/s", "concurrency", "tok/s", {"A": [(1, 148.0), (2, 260.0)], "B": [(1, 134.0)]})
        await pilot.pause()
        dark = chart.colors(2)
        assert dark[0] == Color.parse(app.available_themes["lanemon-dark"].primary).rgb
        calls = []
        original = chart.show_lines
        chart._last = (lambda *a: (calls.append(a), original(*a)), chart._last[1])
        app.theme = "lanemon-high-contrast"
        await pilot.pause()
        await pilot.pause()
        assert calls, "the chart is drawn again on a theme change"
        assert chart.colors(2)[0] == Color.parse(app.available_themes["lanemon-high-contrast"].primary).rgb
        assert chart.series["A"] == [(1, 148.0), (2, 260.0)]


def test_user_theme_dropped_into_the_config_dir_is_picked_up(user_config, tmp_path):
    themes_dir = user_themes_dir()
    themes_dir.mkdir(parents=True)
    (themes_dir / "solar.toml").write_text(
        'name = "solar"\ndark = false\nprimary = "#B58900"\nbackground = "#FDF6E3"\nforeground = "#073642"\n',
        encoding="utf-8",
    )
    assert make_app(ScriptedSource([]), theme="solar").theme == "solar"
    # and from lanes.toml
    from lanemon.config import load_config

    config = tmp_path / "lanes.toml"
    config.write_text('theme = "solar"\n[lanes.A]\nurl = "http://127.0.0.1:9/v1"\n', encoding="utf-8")
    assert load_config(config).theme == "solar"


async def test_broken_theme_file_warns_and_falls_back_to_the_default(user_config):
    themes_dir = user_themes_dir()
    themes_dir.mkdir(parents=True)
    (themes_dir / "mytheme.toml").write_text('name = "mytheme"\nprimary = "#12345"\n', encoding="utf-8")
    app = make_app(ScriptedSource(mode="demo", hold=True), theme="mytheme")
    assert app.theme == DEFAULT_THEME
    assert len(app.theme_warnings) == 2
    assert "mytheme.toml" in app.theme_warnings[0] and "'primary' = '#12345' is not a color" in app.theme_warnings[0]
    assert app.theme_warnings[1] == "theme 'mytheme' could not be loaded (see above); using lanemon-dark"
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        toasts = [n.message for n in app._notifications]
        assert any("is not a color" in m for m in toasts)
        await pilot.press("q")


def test_unknown_theme_on_the_command_line_exits_2(tmp_path, capsys):
    from lanemon.recording.writer import Recorder, make_header

    path = tmp_path / "r.jsonl"
    Recorder(path, make_header("test", [])).close()
    assert main(["replay", str(path), "--theme", "no-such-theme"]) == 2
    err = capsys.readouterr().err
    assert "no-such-theme" in err and "lanemon-high-contrast" in err


# -- one dashboard snapshot per shipped theme (the scripted sample session) ------------


def _settle(pilot):
    async def run() -> None:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        pilot.app.redraw(force=True)
        await pilot.pause()

    return run()


@pytest.mark.parametrize("theme", SHIPPED)
def test_snapshot_dashboard_per_theme(snap_compare, theme):
    app = make_app(ScriptedSource(mode="replay", speed=4.0, recording_path=SNAP_PATH), theme=theme)
    assert snap_compare(app, terminal_size=(120, 36), run_before=_settle)
