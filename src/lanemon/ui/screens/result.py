"""The result screen: what a headless workload (agree, kl, qeval) showed, for its replay.

``lanemon replay agree.jsonl`` opens it as ``lanemon replay decode.jsonl`` opens the bench screen: the
report's sections for that workload (:mod:`lanemon.reports.sections`: its finding, the table(s) and notes),
computed once from the recording by the same pure results functions ``--json`` and ``lanemon report`` use,
in a thread (never on the UI loop), and scrolled with the arrows / PgUp / PgDn.  ``d`` shows the dashboard
the replay drives beneath it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from lanemon.ui.format import markup_escape as escape
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.footer import Footer

RESULT_KINDS = ("agree", "kl", "qeval", "load", "sweep")
"""Workloads whose replay opens this screen (the recording header's ``command``; ``bench`` load and sweep,
whose tables are reports/tables.py's, the model ``bench load`` and ``bench sweep`` print)."""

TITLES = {"agree": "GREEDY AGREEMENT", "kl": "LOGPROB DIVERGENCE", "qeval": "QUALITY GATE",
          "load": "OPEN-LOOP LOAD", "sweep": "CONCURRENCY SWEEP"}


def result_sections(kind: str, analysis: dict[str, Any]) -> list[Any]:
    """The report's sections of ``kind`` in ``analysis`` (pure)."""
    from lanemon.reports.sections import sections

    keys = {"agree": ("agree",), "kl": ("kl",), "qeval": ("qeval",), "load": ("load", "efficiency-load"),
            "sweep": ("sweep",)}[kind]
    return [s for s in sections(analysis) if s.key.split("-")[0] in keys or s.key in keys]


class ResultScreen(LanemonScreen):
    NAME = "result"
    AUTO_FOCUS = ""  # keys are the app's (arrows, home, end, [ ] seek the replay); the screen scrolls below

    BINDINGS = [
        Binding("up", "scroll(-1)", "scroll", key_display="↑↓", group=Binding.Group("scroll", compact=True)),
        Binding("down", "scroll(1)", "scroll", key_display="", show=False),
        Binding("pageup", "scroll(-10)", "page", key_display="PgUp", show=False),
        Binding("pagedown", "scroll(10)", "page", key_display="PgDn", show=False),
    ]

    DEFAULT_CSS = """
    ResultScreen #result-title { height: 1; padding: 0 1; background: $panel; }
    ResultScreen #result-body { height: 1fr; padding: 0 1; }
    ResultScreen .result-summary { margin: 1 0 0 0; text-style: bold; }
    ResultScreen .result-caption { color: $text-muted; }
    ResultScreen DataTable { height: auto; max-height: 100; margin: 1 0 0 0; border: round $primary 40%;
                             border-title-color: $text-muted; background: $surface; }
    ResultScreen .result-notes { margin: 1 0 0 0; color: $text-muted; }
    """

    def __init__(self, kind: str, recording: Any) -> None:
        super().__init__()
        self.kind = kind
        self.recording = recording
        self.sections: list[Any] | None = None
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"[b]{TITLES.get(self.kind, self.kind.upper())}[/]  results as recorded · reading…",
                     id="result-title")
        yield VerticalScroll(id="result-body")
        yield from self.replay_bar()
        yield Footer()

    def on_mount(self) -> None:
        self.run_worker(self._analyse, thread=True, group="result", exit_on_error=False)

    def _analyse(self) -> None:
        from lanemon.reports.analyse import analyze

        try:
            path = getattr(self.recording, "path", None) or self.recording
            sections = result_sections(self.kind, analyze(path))
        except Exception as exc:  # a bad recording is a line on the screen, never a traceback
            self.app.call_from_thread(self._show_error, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self.show, sections)

    def _show_error(self, message: str) -> None:
        self.error = message
        self.query_one("#result-title", Static).update(
            f"[b]{TITLES.get(self.kind, self.kind)}[/]  [$error]cannot read the results: {escape(message)}[/]")

    def show(self, sections: list[Any]) -> None:
        """Mount each section: finding (bold), caption, table(s), notes."""
        self.sections = sections
        body = self.query_one("#result-body", VerticalScroll)
        body.remove_children()
        where = getattr(self.app, "source", None)
        where = getattr(where, "recording_path", None) or getattr(self.recording, "path", None)
        self.query_one("#result-title", Static).update(
            f"[b]{TITLES.get(self.kind, self.kind.upper())}[/]  results as recorded"
            + (f" · {escape(Path(str(where)).name)}" if where else ""))
        if not sections:
            body.mount(Static("this recording holds no finished result", classes="result-caption"))
            return
        widgets: list[Any] = []
        for s in sections:
            if s.summary:
                widgets.append(Static(escape(s.summary), classes="result-summary"))
            if s.caption:
                widgets.append(Static(escape(s.caption), classes="result-caption"))
            headers, rows, notes = s.headers, s.rows, list(s.notes)
            if getattr(s, "model", None) is not None:  # the table's own model, fitted: columns dropped by rank
                fitted = s.model.fit(max(40, self.size.width - 4), pad=2)
                headers, rows = fitted.labels(), fitted.text_rows()
                notes += [fitted.hidden_note()] if fitted.hidden else []
            for title, headers, rows in [(s.title, headers, rows)] + list(s.more or []):
                if not rows:
                    continue
                table = DataTable(cursor_type="none", zebra_stripes=True, show_cursor=False)
                table.border_title = escape(title)
                table.add_columns(*headers)
                for row in rows:
                    table.add_row(*[str(c) for c in row])
                widgets.append(table)
            if notes:
                widgets.append(Static(escape("\n".join(notes)), classes="result-notes"))
        body.mount(*widgets)

    def action_scroll(self, lines: int) -> None:
        body = self.query_one("#result-body", VerticalScroll)
        step = lines if abs(lines) < 10 else (lines // 10) * max(1, body.size.height - 2)
        body.scroll_relative(y=step, animate=False)
