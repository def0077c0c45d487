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
from textual.css.query import NoMatches
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
        self._gutter = 0  # the body's vertical scrollbar, once the tables made it show: the tables fit beside it
        self.error: str | None = None

    def compose(self) -> ComposeResult:
        yield Static(f"[b]{TITLES.get(self.kind, self.kind.upper())}[/]  results as recorded · reading…",
                     id="result-title")
        yield VerticalScroll(id="result-body")
        yield from self.replay_bar()
        yield Footer()

    def on_mount(self) -> None:
        # the body's scrollbar may show a layout after the tables mounted: fit them beside it when it does
        self.watch(self.query_one("#result-body", VerticalScroll), "show_vertical_scrollbar",
                   lambda _shown: self.call_after_refresh(self._fit_beside_scrollbar), init=False)
        self._analysing = False
        self._analysed_at: tuple | None = None
        if not self._live():
            self._analysing = True
            self.run_worker(self._analyse, thread=True, group="result", exit_on_error=False)

    def _live(self) -> Any:
        """The running bench (``bench load`` / ``sweep`` in the TUI) whose events this screen reads, else None."""
        source = getattr(self.app, "source", None)
        return source if self.recording is None and isinstance(getattr(source, "events", None), list) else None

    def fingerprint(self, app: Any) -> tuple:
        """Live: the cells ended so far (a rep or level: its end mark, ``✓``) and whether the run finished --
        the results are computed again only then, never while a rep measures for nothing new."""
        source = self._live()
        if source is None:
            return ()
        ended = sum(1 for label in (getattr(app, "marker_labels", None) or {}).values() if str(label).endswith("✓"))
        return (ended, bool(getattr(source, "finished", False)))

    def draw(self, app: Any) -> None:
        """Live: analyse the run's events again (in a thread; one at a time) when a mark arrived."""
        fp = self.fingerprint(app)
        if self._live() is None or self._analysing or fp == self._analysed_at:
            return
        self._analysing, self._analysed_at = True, fp
        self.run_worker(self._analyse, thread=True, group="result", exit_on_error=False)

    def _analyse(self) -> None:
        from lanemon.reports.analyse import analyze
        from lanemon.results.common import to_json_obj

        try:
            live = self._live()
            if live is not None:  # the run's own results (BenchRun.results: the bench's JSON, engine views on)
                results = getattr(live, "results", None)
                analysis = ({"environment": {"lanes": [{"name": d.name} for d in live.lanes]},
                             self.kind: to_json_obj(results())} if callable(results) else analyze(list(live.events)))
                sections = result_sections(self.kind, analysis)
                self.app.call_from_thread(self.show, sections)
                return
            path = getattr(self.recording, "path", None) or self.recording
            sections = result_sections(self.kind, analyze(path))
        except Exception as exc:  # a bad recording is a line on the screen, never a traceback
            self.app.call_from_thread(self._show_error, f"{type(exc).__name__}: {exc}")
            return
        self.app.call_from_thread(self.show, sections)

    def _show_error(self, message: str) -> None:
        self._analysing = False
        self.error = message
        if self._body() is None:  # closed before the analysis failed: nothing to say it on
            return
        self.query_one("#result-title", Static).update(
            f"[b]{TITLES.get(self.kind, self.kind)}[/]  [$error]cannot read the results: {escape(message)}[/]")

    async def show(self, sections: list[Any]) -> None:
        """Mount each section: finding (bold), caption, table(s), notes (the previous ones removed first: a
        live run shows its results again as reps end)."""
        self._analysing = False
        self.sections = sections
        self._shown_width = self.size.width
        body = self._body()
        if body is None:  # a refit queued (resize, scrollbar) as the screen closed: nothing to show into
            return
        await body.remove_children()
        if not body.is_attached:  # closed while the old tables went
            return
        live = self._live()
        running = live is not None and not getattr(live, "finished", False)
        where = getattr(self.app, "source", None)
        where = getattr(where, "recording_path", None) or getattr(self.recording, "path", None)
        self.query_one("#result-title", Static).update(
            f"[b]{TITLES.get(self.kind, self.kind.upper())}[/]  "
            + ("running · results so far · d dashboard" if running else
               "results" if live is not None else "results as recorded")
            + (f" · {escape(Path(str(where)).name)}" if where else ""))
        if not sections:
            await body.mount(Static("running: no rep has finished yet (d shows the dashboard)" if running else
                                    "this recording holds no finished result", classes="result-caption"))
            return
        from lanemon.reports.tables import hidden_text

        widgets: list[Any] = []
        for s in sections:
            if s.summary:
                widgets.append(Static(escape(s.summary), classes="result-summary"))
            if s.caption:
                widgets.append(Static(escape(s.caption), classes="result-caption"))
            notes, units, hidden = list(s.notes), [], []
            models = [getattr(s, "model", None)] + list(getattr(s, "more_models", None) or [])
            tables = [(s.title, s.headers, s.rows)] + list(s.more or [])
            for j, (title, headers, rows) in enumerate(tables):
                model = models[j] if j < len(models) else None
                if model is not None:  # the table's own model, fitted: words cut whole, columns dropped by rank
                    fitted = model.fit(max(40, self.size.width - 4 - self._gutter), pad=2)
                    headers, rows = fitted.labels(), fitted.text_rows()
                    units += [x for x in [fitted.units_note()] if x and x not in units]
                    hidden += [x for x in fitted.hidden if x not in hidden]
                if not rows:
                    continue
                table = DataTable(cursor_type="none", zebra_stripes=True, show_cursor=False)
                table.border_title = escape(title)
                table.add_columns(*headers)
                for row in rows:
                    table.add_row(*[str(c) for c in row])
                widgets.append(table)
            # the units the short labels leave out right under the tables (`served/s in req/s`), the rest after
            notes = units + notes + ([hidden_text(hidden)] if hidden else [])
            if notes:
                widgets.append(Static(escape("\n".join(notes)), classes="result-notes"))
        if not body.is_attached:
            return
        await body.mount(*widgets)
        self.call_after_refresh(self._fit_beside_scrollbar)

    def _body(self) -> VerticalScroll | None:
        """The results' scroll body, or None once the screen has closed (a refit queued by a resize, the
        scrollbar or a live rep's end can run after Esc: beside four CPU hogs a replay of agree.jsonl did)."""
        try:
            body = self.query_one("#result-body", VerticalScroll)
        except NoMatches:
            return None
        return body if body.is_attached else None

    def _fit_beside_scrollbar(self) -> None:
        """Tall results show the body's vertical scrollbar, which takes the width the tables were fitted to: fit
        them again beside it.  Kept once taken (a table that ran off the edge had a scrollbar row of its own: fitted,
        the body may no longer need its own, and fitting to the whole width again would bring both back)."""
        body = self._body()
        if body is None:
            return
        gutter = body.scrollbar_size_vertical if body.show_vertical_scrollbar else 0
        if gutter > self._gutter and self.sections:
            self._gutter = gutter
            self.call_after_refresh(self.show, self.sections)

    def on_resize(self) -> None:
        """The tables with a model are fitted to the width: fit them again (from the sections already computed)."""
        width = self.size.width
        if self.sections and any(getattr(s, "model", None) is not None or getattr(s, "more_models", None)
                                 for s in self.sections) \
                and width != getattr(self, "_shown_width", width):
            self.call_after_refresh(self.show, self.sections)

    def action_scroll(self, lines: int) -> None:
        body = self.query_one("#result-body", VerticalScroll)
        step = lines if abs(lines) < 10 else (lines // 10) * max(1, body.size.height - 2)
        body.scroll_relative(y=step, animate=False)
