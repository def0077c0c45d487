"""The bench screen: status line, per-lane progress, results table, charts, error log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from lanemon.ui.widgets.footer import Footer
from lanemon.folds.bench import length_label
from lanemon.ui import format as fmt
from lanemon.ui.format import markup_escape as escape
from lanemon.ui.screens.base import LanemonScreen
from lanemon.ui.widgets.bench_chart import BenchChart
from lanemon.ui.widgets.bench_log import BenchLog
from lanemon.ui.widgets.bench_progress import BenchProgress
from lanemon.ui.widgets.bench_status import BenchStatus
from lanemon.ui.widgets.status_bar import path_verb, short_path
from lanemon.ui.widgets.bench_table import BenchTable
from lanemon.reports.prefill_table import prefill_table
from lanemon.reports.tables import decode_legend, decode_table
from lanemon.folds.bench import BenchResult
from lanemon.results.decode import DecodeResult
from lanemon.results.needles import NeedleCell, NeedleResult
from lanemon.results.prefill import PrefillCell, PrefillResult

CATEGORY_TITLE = ("per-stream decode at C1 by category", "per-stream decode at C1", "per-stream at C1",
                  "at C1")
"""The category bars' title, fullest first (the chart's border takes the first that fits whole)."""

TABLE_WIDTH = 46
"""The results panel's inner width before the first layout (#bench-left is 50 wide)."""

PANEL_MIN = 50
"""The results panel's width at the least (the charts take the rest)."""

PANEL_SHARE = 0.45
"""The share of the screen's width the results panel may take where its table needs more than
:data:`PANEL_MIN` (at 240 columns the decode table had 50 and said ``+2 in report``; at 100 it keeps 50)."""


def panel_width(need: int, rows: int, table_height: int, screen_width: int) -> int:
    """The results panel's width for a table model that needs ``need`` characters (:meth:`ResultTable.width`
    with ``pad=2``) for ``rows`` rows: the table's border (2) less the 1 ``width`` counts for a Rich box's edge,
    and the vertical scrollbar's 2 where the rows do not all fit under the header; never narrower than
    :data:`PANEL_MIN` nor wider than :data:`PANEL_SHARE` of the screen (pure)."""
    scrollbar = 2 if table_height and rows > table_height - 1 else 0
    cap = max(PANEL_MIN, int(screen_width * PANEL_SHARE))
    return max(PANEL_MIN, min(need + 1 + scrollbar, cap))


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def _key(k: Any) -> float:
    try:
        return float(k)
    except (TypeError, ValueError):
        return float("inf")


def _tok(v: Any) -> str:
    x = _num(v)
    return "—" if x is None else (f"{x:,.0f}" if x >= 10 else f"{x:.1f}")


def fmt_eta(seconds: float) -> str:
    """``45s``, ``3m05s``, ``1h02m`` (the headless progress line's words)."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    return f"{m}m{s:02d}s" if m < 60 else f"{m // 60}h{m % 60:02d}m"


def table_width(table: Any, rows: int) -> int:
    """The width to fit a result model to (:meth:`ResultTable.fit` with ``pad=2``: a DataTable cell's padding)
    in ``table``: its content width, less the vertical scrollbar's 2 cells where ``rows`` do not all fit under
    the header, plus the 1 that ``ResultTable.width`` counts for a Rich box's edge (a DataTable has none).
    Before the first layout: :data:`TABLE_WIDTH`."""
    if table.size.width <= 10:
        return TABLE_WIDTH
    return table.size.width - (2 if rows > table.size.height - 1 else 0) + 1


def result_rows(kind: str, results: BenchResult | None, lanes: list[str],
                width: int | None = None) -> tuple[list[str], list[list[str]]]:
    """The table's columns and rows for the bench fold's typed result of ``kind`` (None: nothing yet).

    decode: one row per level and lane (level-major, as ``lanemon bench decode`` prints it); ``steady``
    (tokens while all C streams ran / that window) leads, ``span`` (first send → last end) beside it;
    ``?`` marks a cell that ran while lanemon itself was starved (unreliable: not judged), ``†`` unstable
    reps, ``▲`` the level's leader by the steady figure beyond the noise band, ``=`` a tie inside it.
    ``width``: the characters the table has (columns are dropped by the model's ranks to fit)."""
    by_lane = results.lanes if results is not None else {}
    names = [n for n in lanes if n in by_lane] + [n for n in by_lane if n not in lanes]
    rows: list[list[str]] = []
    if kind == "decode":  # one model with `bench decode` (reports/tables.py), fitted to the panel
        model = decode_table(results if isinstance(results, DecodeResult) else None, names).fit(width, pad=2)
        return model.labels(), model.text_rows()
    if kind == "prefill":  # one model with `bench prefill` and the report (reports/tables.py), fitted
        model = prefill_table(results if isinstance(results, PrefillResult) else None, names).fit(width, pad=2)
        return model.labels(), model.text_rows()
    cols = ["lane", "tokens", "found", "TTFT", "prefill tok/s"]
    if not isinstance(results, NeedleResult):
        return cols, rows
    for n in names:
        cells = results.lanes[n].lengths
        for length in sorted(cells, key=_key):
            c = cells[length]
            found = "error" if c.error else ("yes" if c.found else "MISSED")
            rows.append([n, length_label(length), found, fmt.seconds(_num(c.ttft_s)),
                         _tok(c.prefill_tok_s) + (" ?" if c.unreliable else "")])
    return cols, rows


def crossover_text(results: DecodeResult) -> str:
    """The crossover as the screen says it, short: ``B overtakes A between C3 and C4: C3 B -5.9 %, C4 B +6.2 %
    vs A (noise band 5.0 %)``; where leadership never changes, the sentence of ``lanemon bench decode``."""
    from lanemon.workloads.bench.decode import crossover_sentence

    x = results.crossover
    if not x or not x.between or not x.compared:
        return crossover_sentence(results)
    lo, hi = x.between[0], x.between[-1]
    a, b = x.compared[0], x.compared[1]
    around = [g for g in x.levels if g.level in (lo, hi) and g.gap is not None]
    text = f"{x.leader_after} overtakes {x.leader_before} between C{lo} and C{hi}"
    if len(x.changes) > 1:
        text += f" (leadership changes {len(x.changes)} times)"
    if around:
        band = max(g.band for g in around)
        src = ", from the reps" if any(g.band_from_reps for g in around) else ""
        text += (": " + ", ".join(f"C{g.level} {b} {(g.gap or 0) * 100:+.1f} %" for g in around)
                 + f" vs {a} (noise band {band * 100:.1f} %{src})")
    return text


def decode_verdict(results: DecodeResult, lanes: list[str]) -> str:
    """The decode ladder's verdict as markup: the crossover (decided on the steady figure, with the gaps and
    the noise band it rests on), what steady and span are, and how many cells ran while lanemon was starved."""
    by_lane = results.lanes
    if not any(d.levels for d in by_lane.values()):
        return ""
    lines = []
    sentence = crossover_text(results) if sum(1 for d in by_lane.values() if d.levels) >= 2 else ""
    if sentence:
        lines.append(f"[b]{escape(sentence)}[/]")
    lines.append("[dim]steady: all C streams in flight · span: first send → last end[/]")
    bad = [c for d in by_lane.values() for c in d.levels.values() if c.unreliable]
    if bad:
        n = sum(c.client_bound for c in bad)
        lines.append(f"[$warning]? lanemon starved in {n} request{'s' if n != 1 else ''} "
                     f"({len(bad)} cell{'s' if len(bad) != 1 else ''}): not judged[/]")
    return "\n".join(lines)


class BenchScreen(LanemonScreen):
    """Drawn from the app's bench folds: progress on every changed tick, results only when a cell ended."""

    NAME = "bench"
    AUTO_FOCUS = ""  # keys are the app's (arrows and home seek a replay); a click focuses the table

    DEFAULT_CSS = """
    BenchScreen #bench-body { height: 1fr; padding: 0 1; }
    BenchScreen #bench-left { width: 50; min-width: 34; margin-right: 1; }  /* then panel_width() */
    BenchScreen #bench-right { width: 1fr; }
    BenchScreen #chart-side { margin-top: 0; }
    BenchScreen BenchLog { margin: 0 1; }
    BenchScreen #verdict { height: auto; max-height: 10; padding: 0 1; border: round $primary 40%;
                           border-title-color: $text-muted; background: $surface; }
    """

    def __init__(self, kind: str, lanes: list[str]) -> None:
        super().__init__()
        self.kind = kind
        self.lanes = list(lanes)
        self._results_at: tuple | None = None
        """(the fold's version, finished) the results were last asked at; None: draw them at the next redraw."""
        self._results_of: BenchResult | None = None
        """The result the table and charts show (the fold's own object: a new one is a change)."""

    def compose(self) -> ComposeResult:
        yield BenchStatus(id="bench-status")
        with Horizontal(id="bench-body"):
            with Vertical(id="bench-left"):
                yield BenchProgress(id="progress")
                yield BenchTable(id="table")
                yield Static("", id="verdict")
            with Vertical(id="bench-right"):
                yield BenchChart(id="chart-main")
                yield BenchChart(id="chart-side")
        yield BenchLog(id="log")
        yield from self.replay_bar()
        yield Footer()

    def on_mount(self) -> None:
        for chart in self.query(BenchChart):
            chart.lane_order = list(self.lanes)  # lane colours: the same order as every other screen
        side = self.query_one("#chart-side", BenchChart)
        side.display = self.kind == "decode"
        verdict = self.query_one("#verdict", Static)
        verdict.border_title = "crossover · by steady tok/s"
        verdict.display = False
        self.refresh_results(None)

    def fingerprint(self, app: Any) -> tuple:
        tracker, results = app.bench, app.bench_results
        return (tracker.version, results.version, app.source_state(), str(app.source.recording_path))

    def draw(self, app: Any) -> None:
        tracker = app.bench
        current = next(iter(tracker.current.items()), None)
        eta = tracker.eta_s() if app.source_state() == "running" else None
        what = f"{current[1]} on {current[0]}" if current else None
        if what and eta is not None:
            what += f" · ETA {fmt_eta(eta)}"
        self.refresh_progress(state=app.source_state(), current=what,
                              done=tracker.cells_done, total=tracker.cells_total(), elapsed_ns=tracker.elapsed_ns,
                              lane_rows=tracker.progress_rows(), errors=tracker.errors,
                              recording_path=app.source.recording_path)
        folded = app.bench_results
        finished = app.source_state() != "running"
        if self._results_at != (folded.version, finished):
            # the first draw, asked to draw the results again, or the run ended (the empty category panel's
            # words follow the run's state, not only the result)
            forced = self._results_at is None or self._results_at[1] != finished
            self._results_at = (folded.version, finished)
            results = folded.results(in_progress=not finished)
            # the fold hands back the object it gave last when nothing in it changed (a cell started, a
            # client_load window that starved nothing): the table and charts are drawn once per change
            if forced or results is not self._results_of:
                self.refresh_results(results)

    # -- cheap: every redraw tick ---------------------------------------------------
    def refresh_progress(self, *, state: str, current: str | None, done: int, total: int, elapsed_ns: int,
                         lane_rows: list[tuple[str, int, int, str | None]], errors: list, recording_path) -> None:
        status = self.query_one(BenchStatus)
        status.update_from(kind=self.kind, state=state, current=current, done=done, total=total,
                           elapsed=fmt.event_time(elapsed_ns), errors=len(errors), recording_path=recording_path)
        progress = self.query_one(BenchProgress)
        progress.update_from(lane_rows)
        # a finished bench: every bar is full and the header says "28/28 cells"; its lines go to the results
        done_all = state == "finished" and all(d >= t for _, d, t, _ in lane_rows)
        if progress.display == done_all:
            progress.display = not done_all
        log = self.query_one(BenchLog)
        log.update_from(errors)
        # where the header has no room for the recording's name, the full-width log under the results says it
        path = short_path(recording_path) if status.path_cut else ""
        room = log.size.width - 6
        verb = path_verb(getattr(self.app.source, "mode", ""))  # type: ignore[attr-defined]
        whole = next((t for t in (f"{verb} {path}", f"{verb} {Path(path).name}") if len(t) <= room), "") if path else ""
        if log.border_subtitle != escape(whole):
            log.border_subtitle = escape(whole)

    def on_resize(self) -> None:
        """The results panel takes a share of the width (:func:`panel_width`): fit it again."""
        if self._results_of is not None:
            self.call_after_refresh(self.refresh_results, self._results_of)

    def _fit_panel(self, results: BenchResult | None, names: list[str], table: BenchTable) -> int | None:
        """Widen the results panel to what the decode or prefill table needs (within its share of the
        screen); the width to fit the table to, or None (needles: the panel as laid out)."""
        if self.kind == "decode":
            model = decode_table(results if isinstance(results, DecodeResult) else None, names)
        elif self.kind == "prefill":
            model = prefill_table(results if isinstance(results, PrefillResult) else None, names)
        else:
            return None
        if not self.size.width:
            return None
        rows, height = len(model.rows), table.size.height
        width = panel_width(model.width(pad=2), rows, height, self.size.width)
        scrollbar = 2 if height and rows > height - 1 else 0
        # no wider than the table fitted to it (the detail columns a short width drops leave no blank)
        width = panel_width(model.fit(width - 1 - scrollbar, pad=2).width(pad=2), rows, height, self.size.width)
        left = self.query_one("#bench-left", Vertical)
        if left.styles.width is None or left.styles.width.value != width:
            left.styles.width = width
        return width - 1 - scrollbar  # as table_width() reads it once laid out at this width

    # -- only when a cell ended ---------------------------------------------------------
    def refresh_results(self, results: BenchResult | None) -> None:
        """Redraw the table and charts from the bench fold's typed result (None: nothing yet)."""
        self._results_of = results
        by_lane = results.lanes if results is not None else {}
        names = [n for n in self.lanes if n in by_lane] + [n for n in by_lane if n not in self.lanes]
        table = self.query_one(BenchTable)
        width = self._fit_panel(results, names, table) or table_width(
            table, len(result_rows(self.kind, results, self.lanes)[1]))
        cols, rows = result_rows(self.kind, results, self.lanes, width)
        table.show(cols, rows)
        main = self.query_one("#chart-main", BenchChart)
        side = self.query_one("#chart-side", BenchChart)
        if self.kind == "decode":
            self._refresh_decode(results if isinstance(results, DecodeResult) else None, names, width, main, side)
            return
        if self.kind == "prefill":
            model = prefill_table(results if isinstance(results, PrefillResult) else None, names)
            fitted = model.fit(width, pad=2)
            hidden = fitted.hidden
            table.set_units(fitted.units_note())
            table.set_legend(escape(" · ".join(x for x in (model.legend, f"+{len(hidden)} in report" if hidden
                                                           else "") if x)))
        else:
            cells_all = [c for n in names for c in by_lane[n].lengths.values()]
            marks_meant = (["? starved"] if any(c.unreliable for c in cells_all) else []) + (
                ["† unstable"] if any(c.unstable for c in cells_all) else [])
            table.set_legend(escape(" · ".join(marks_meant)))
        lengths: list[str] = []
        for n in names:
            for k in by_lane[n].lengths:
                if k not in lengths:
                    lengths.append(k)
        lengths.sort(key=_key)
        title = (("prefill tok/s by prompt length", "prefill tok/s by length", "prefill by length", "prefill tok/s")
                 if self.kind == "prefill" else
                 ("needles: prefill tok/s by context", "needles: prefill tok/s", "prefill tok/s", "prefill"))
        if not lengths:
            main.show_empty(title)
            return
        labels = [length_label(k) for k in lengths]
        bars, marks, starved = {}, [], set()
        for n in names:
            cells: dict[str, PrefillCell | NeedleCell] = dict(by_lane[n].lengths)
            starved |= {(n, label) for k, label in zip(lengths, labels) if k in cells and cells[k].unreliable}
            bars[n] = [_num(cells[k].prefill_tok_s) if k in cells else None for k in lengths]  # None: not run yet
            for k, label, bar in zip(lengths, labels, bars[n]):
                c = cells.get(k)
                hit = _num(c.cache_hit_tok_s) if isinstance(c, PrefillCell) else None
                if hit:
                    marks.append((f"{n} cache hit {_tok(hit)} tok/s", label, bar))
                if isinstance(c, NeedleCell) and not c.found:
                    marks.append((f"{n} missed", label, bar))
        # 'by prompt length' names the groups already (the repeat '(prompt tokens)' was cut at 100 columns)
        xlabel = "prompt length" if self.kind == "prefill" else "prompt tokens"
        main.show_bars(title, xlabel, "tok/s", labels, bars, marks, flagged=starved)

    def _refresh_decode(self, results: DecodeResult | None, names: list[str], width: int, main: BenchChart,
                        side: BenchChart) -> None:
        """The decode verdict, legend, the ladder's lines and the categories' bars."""
        table = self.query_one(BenchTable)
        verdict = self.query_one("#verdict", Static)
        text = decode_verdict(results, names) if results is not None else ""
        verdict.update(text)
        verdict.display = bool(text)
        fitted = decode_table(results, names).fit(width, pad=2)
        hidden = fitted.hidden
        table.set_units(fitted.units_note())
        table.set_legend(escape(" · ".join(x for x in (decode_legend(results),
                                                       f"+{len(hidden)} in report" if hidden else "") if x)))
        by_lane = results.lanes if results is not None else {}
        steady, span, flagged = {}, {}, {}
        for n in names:
            cells = sorted(((_key(k), c) for k, c in by_lane[n].levels.items()), key=lambda kc: kc[0])
            steady[n] = [(x, y) for x, c in cells if not c.unreliable and (y := _num(c.steady_tok_s)) is not None]
            span[n] = [(x, y) for x, c in cells if not c.unreliable and (y := _num(c.aggregate_tok_s)) is not None]
            flagged[n] = [(x, y) for x, c in cells if c.unreliable
                          and (y := _num(c.steady_tok_s) or _num(c.aggregate_tok_s)) is not None]
        cross = results.crossover if results is not None else None
        vline = None
        if cross is not None and len(cross.between) == 2:
            vline = ((cross.between[0] + cross.between[1]) / 2,
                     f"{cross.leader_after} overtakes {cross.leader_before}")
        title = ("aggregate decode vs concurrency", "aggregate decode tok/s", "aggregate decode", "decode")
        if any(steady.values()) or any(span.values()) or any(flagged.values()):
            main.show_lines(title, "concurrent streams", "tok/s", steady, ghost=span, flagged=flagged, vline=vline)
        else:
            main.show_empty(title)
        cats: list[str] = []
        for n in names:
            for c in by_lane[n].categories:
                if c not in cats:
                    cats.append(c)
        what = CATEGORY_TITLE
        if cats:
            bars = {n: [_num(by_lane[n].categories[c].per_stream_tok_s) if c in by_lane[n].categories else None
                        for c in cats] for n in names}  # None: not run yet
            starved = {(n, c) for n in names for c in cats
                       if c in by_lane[n].categories and by_lane[n].categories[c].unreliable}
            side.show_bars(what, "category", "tok/s", cats, bars, flagged=starved)
        elif results is not None and results.config.per_category is False:
            side.show_empty(what, "not run (--no-categories)")
        elif self.app.source_state() != "running":  # type: ignore[attr-defined]
            side.show_empty(what, "no category cell finished")
        else:
            side.show_empty(what)
