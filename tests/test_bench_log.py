"""The bench screen's error log (issue 25): a line cut with '…' says where the whole is ('e: whole'), more
errors than it shows says 'e: all', and the errors screen that `e` opens from a bench has the message whole.
The log is handed the errors at every redraw tick: it redraws only when they or its width changed."""

from __future__ import annotations

from textual.app import App, ComposeResult

from lanemon.ui.screens.errors import ErrorsScreen
from lanemon.ui.app import make_app
from lanemon.ui.widgets.bench_log import SHOWN, BenchLog
from test_ui_bench import ScriptedBench, settle

LONG = ("HTTP 500: CUDA out of memory while allocating the KV cache for this request; the engine keeps "
        "serving the other streams")


class LogApp(App):
    def compose(self) -> ComposeResult:
        yield BenchLog()


def err(i: int, msg: str = "503 Service Unavailable") -> tuple[int, str, str, str]:
    return (i * 1_000_000_000, "B", "http", msg)


async def test_a_cut_line_and_hidden_errors_say_where_the_rest_is():
    app = LogApp()
    async with app.run_test(size=(60, 12)) as pilot:
        log = app.query_one(BenchLog)
        log.update_from([err(1)])
        await pilot.pause()
        log.update_from([err(1)])  # now laid out: judged at its width
        await pilot.pause()
        assert str(log.border_title) == "errors · 1"  # a short line: nothing to point at
        log.update_from([err(1), err(2, LONG)])
        await pilot.pause()
        assert str(log.border_title) == "errors · 2 · e: whole"
        many = [err(i) for i in range(SHOWN + 2)]
        log.update_from(many)
        await pilot.pause()
        assert str(log.border_title) == f"errors · {SHOWN + 2} · e: all"
        log.update_from([*many, err(99, LONG)])
        await pilot.pause()
        assert str(log.border_title) == f"errors · {SHOWN + 3} · e: all, whole"


async def test_the_log_redraws_only_when_its_errors_or_width_change(monkeypatch):
    app = LogApp()
    async with app.run_test(size=(60, 12)) as pilot:
        log = app.query_one(BenchLog)
        calls = []
        real = log.update
        monkeypatch.setattr(log, "update", lambda *a, **k: (calls.append(a), real(*a, **k))[1])
        errors = [err(1), err(2, LONG)]
        log.update_from(errors)
        await pilot.pause()
        assert len(calls) == 1
        for _ in range(5):  # five redraw ticks, nothing new
            log.update_from(errors)
            await pilot.pause()
        assert len(calls) == 1
        errors.append(err(3))
        log.update_from(errors)
        assert len(calls) == 2
        await pilot.resize_terminal(50, 12)
        await pilot.pause()
        log.update_from(errors)
        assert len(calls) == 3  # a new width: judged again


async def test_e_from_a_bench_shows_its_errors_whole():
    run = ScriptedBench("decode")  # lane B's C2 cell answers HTTP 503
    app = make_app(run)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert "errors · " in str(app.screen.query_one(BenchLog).border_title)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, ErrorsScreen)
        text = app.screen.query_one("#er-list").visual.plain
        assert "503 Service Unavailable" in text and "B" in text
