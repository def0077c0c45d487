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

CATEGORY_TITLE = ("per-stream decode at C1 by category", "per-stream decode at C1", "per-stream at C1",
                  "at C1")
"""The category bars' title, fullest first (the chart's border takes the first that fits whole)."""

TABLE_WIDTH = 46
"""The results panel's inner width before the first layout (#bench-left is 50 wide)."""


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


def result_rows(kind: str, results: dict[str, Any], lanes: list[str],
                width: int | None = None) -> tuple[list[str], list[list[str]]]:
    """The table's columns and rows for a results dict of ``kind``.

    decode: one row per level and lane (level-major, as ``lanemon bench decode`` prints it); ``steady``
    (tokens while all C streams ran / that window) leads, ``span`` (first send → last end) beside it;
    ``?`` marks a cell that ran while lanemon itself was starved (unreliable: not judged), ``†`` unstable
    reps, ``▲`` the level's leader by the steady figure beyond the noise band, ``=`` a tie inside it.
    ``width``: the characters the table has (columns are dropped by the model's ranks to fit)."""
    by_lane = results.get("lanes") or {}
    names = [n for n in lanes if n in by_lane] + [n for n in by_lane if n not in lanes]
    rows: list[list[str]] = []
    if kind == "decode":  # one model with `bench decode` (reports/tables.py), fitted to the panel
        model = decode_table(results, names).fit(width, pad=2)
        return model.labels(), model.text_rows()
    if kind == "prefill":  # one model with `bench prefill` and the report (reports/tables.py), fitted
        model = prefill_table(results, names).fit(width, pad=2)
        return model.labels(), model.text_rows()
    cols = ["lane", "tokens", "found", "TTFT", "prefill tok/s"]
    for n in names:
        cells = (by_lane[n] or {}).get("lengths") or {}
        for length in sorted(cells, key=_key):
            c = cells[length] or {}
            found = "error" if c.get("error") else ("yes" if c.get("found") else "MISSED")
            rows.append([n, length_label(length), found, fmt.seconds(_num(c.get("ttft_s"))),
                         _tok(c.get("prefill_tok_s")) + (" ?" if c.get("unreliable") else "")])
    return cols, rows


def crossover_text(results: dict[str, Any]) -> str:
    """The crossover as the screen says it, short: ``B overtakes A between C3 and C4: C3 B -5.9 %, C4 B +6.2 %
    vs A (noise band 5.0 %)``; where leadership never changes, the sentence of ``lanemon bench decode``."""
    from lanemon.workloads.bench.decode import crossover_sentence

    x = results.get("crossover")
    if not x or not x.get("between") or not x.get("compared"):
        return crossover_sentence(results)
    lo, hi = x["between"][0], x["between"][-1]
    a, b = x["compared"][0], x["compared"][1]
    around = [g for g in x.get("levels") or [] if g.get("level") in (lo, hi) and g.get("gap") is not None]
    text = f"{x['leader_after']} overtakes {x['leader_before']} between C{lo} and C{hi}"
    if len(x.get("changes") or []) > 1:
        text += f" (leadership changes {len(x['changes'])} times)"
    if around:
        band = max(g["band"] for g in around)
        src = ", from the reps" if any(g.get("band_from_reps") for g in around) else ""
        text += (": " + ", ".join(f"C{g['level']} {b} {g['gap'] * 100:+.1f} %" for g in around)
                 + f" vs {a} (noise band {band * 100:.1f} %{src})")
    return text


def decode_verdict(results: dict[str, Any], lanes: list[str]) -> str:
    """The decode ladder's verdict as markup: the crossover (decided on the steady figure, with the gaps and
    the noise band it rests on), what steady and span are, and how many cells ran while lanemon was starved."""
    by_lane = results.get("lanes") or {}
    if not any((by_lane[n] or {}).get("levels") for n in by_lane):
        return ""
    lines = []
    sentence = crossover_text(results) if sum(1 for n in by_lane if (by_lane[n] or {}).get("levels")) >= 2 else ""
    if sentence:
        lines.append(f"[b]{escape(sentence)}[/]")
    lines.append("[dim]steady: all C streams in flight · span: first send → last end[/]")
    cells = [c or {} for n in by_lane for c in ((by_lane[n] or {}).get("levels") or {}).values()]
    bad = [c for c in cells if c.get("unreliable")]
    if bad:
        n = sum(int(c.get("client_bound") or 0) for c in bad)
        lines.append(f"[$warning]? lanemon starved in {n} request{'s' if n != 1 else ''} "
                     f"({len(bad)} cell{'s' if len(bad) != 1 else ''}): not judged[/]")
    return "\n".join(lines)


class BenchScreen(LanemonScreen):
    """Drawn from the app's bench folds: progress on every changed tick, results only when a cell ended."""

    NAME = "bench"
    AUTO_FOCUS = ""  # keys are the app's (arrows and home seek a replay); a click focuses the table

    DEFAULT_CSS = """
    BenchScreen #bench-body { height: 1fr; padding: 0 1; }
    BenchScreen #bench-left { width: 50; min-width: 34; margin-right: 1; }
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
        self._results_at: int | None = None

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
        self.refresh_results({})

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
            self._results_at = (folded.version, finished)
            self.refresh_results(folded.results(in_progress=not finished))

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

    # -- only when a cell ended ---------------------------------------------------------
    def refresh_results(self, results: dict[str, Any]) -> None:
        by_lane = results.get("lanes") or {}
        names = [n for n in self.lanes if n in by_lane] + [n for n in by_lane if n not in self.lanes]
        table = self.query_one(BenchTable)
        width = table_width(table, len(result_rows(self.kind, results, self.lanes)[1]))
        cols, rows = result_rows(self.kind, results, self.lanes, width)
        table.show(cols, rows)
        main = self.query_one("#chart-main", BenchChart)
        side = self.query_one("#chart-side", BenchChart)
        if self.kind == "decode":
            verdict = self.query_one("#verdict", Static)
            text = decode_verdict(results, names)
            verdict.update(text)
            verdict.display = bool(text)
            fitted = decode_table(results, names).fit(width, pad=2)
            hidden = fitted.hidden
            table.set_units(fitted.units_note())
            table.set_legend(escape(" · ".join(x for x in (decode_legend(results),
                                                           f"+{len(hidden)} in report" if hidden else "") if x)))
            steady, span, flagged = {}, {}, {}
            for n in names:
                levels = (by_lane[n] or {}).get("levels") or {}
                cells = sorted(((_key(k), levels[k] or {}) for k in levels), key=lambda kc: kc[0])
                steady[n] = [(x, y) for x, c in cells if not c.get("unreliable")
                             and (y := _num(c.get("steady_tok_s"))) is not None]
                span[n] = [(x, y) for x, c in cells if not c.get("unreliable")
                           and (y := _num(c.get("aggregate_tok_s"))) is not None]
                flagged[n] = [(x, y) for x, c in cells if c.get("unreliable")
                              and (y := _num(c.get("steady_tok_s")) or _num(c.get("aggregate_tok_s"))) is not None]
            cross = results.get("crossover") or None
            between = [_num(v) for v in (cross or {}).get("between") or []]
            vline = None
            if len(between) == 2 and None not in between:
                vline = ((between[0] + between[1]) / 2,
                         f"{cross.get('leader_after')} overtakes {cross.get('leader_before')}")
            title = ("aggregate decode vs concurrency", "aggregate decode tok/s", "aggregate decode", "decode")
            if any(steady.values()) or any(span.values()) or any(flagged.values()):
                main.show_lines(title, "concurrent streams", "tok/s", steady, ghost=span, flagged=flagged,
                                vline=vline)
            else:
                main.show_empty(title)
            cats: list[str] = []
            for n in names:
                for c in (by_lane[n] or {}).get("categories") or {}:
                    if c not in cats:
                        cats.append(c)
            if cats:
                bars = {n: [_num((((by_lane[n] or {}).get("categories") or {}).get(c) or {})  # None: not run yet
                                 .get("per_stream_tok_s")) for c in cats] for n in names}
                starved = {(n, c) for n in names for c in cats
                           if ((((by_lane[n] or {}).get("categories") or {}).get(c) or {}).get("unreliable"))}
                side.show_bars(CATEGORY_TITLE, "category", "tok/s", cats, bars, flagged=starved)
            elif (results.get("config") or {}).get("per_category") is False:
                side.show_empty(CATEGORY_TITLE, "not run (--no-categories)")
            elif self.app.source_state() != "running":  # type: ignore[attr-defined]
                side.show_empty(CATEGORY_TITLE, "no category cell finished")
            else:
                side.show_empty(CATEGORY_TITLE)
            return
        if self.kind == "prefill":
            model = prefill_table(results, names)
            fitted = model.fit(width, pad=2)
            hidden = fitted.hidden
            table.set_units(fitted.units_note())
            table.set_legend(escape(" · ".join(x for x in (model.legend, f"+{len(hidden)} in report" if hidden
                                                           else "") if x)))
        else:
            cells_all = [c or {} for n in names for c in ((by_lane[n] or {}).get("lengths") or {}).values()]
            marks_meant = (["? starved"] if any(c.get("unreliable") for c in cells_all) else []) + (
                ["† unstable"] if any(c.get("unstable") for c in cells_all) else [])
            table.set_legend(escape(" · ".join(marks_meant)))
        lengths: list[str] = []
        for n in names:
            for k in (by_lane[n] or {}).get("lengths") or {}:
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
            cells = (by_lane[n] or {}).get("lengths") or {}
            starved |= {(n, label) for k, label in zip(lengths, labels) if (cells.get(k) or {}).get("unreliable")}
            bars[n] = [_num((cells.get(k) or {}).get("prefill_tok_s")) for k in lengths]  # None: not run yet
            for k, label in zip(lengths, labels):
                c = cells.get(k) or {}
                hit = _num(c.get("cache_hit_tok_s"))
                if hit:
                    marks.append((f"{n} cache hit {_tok(hit)} tok/s", label, bars[n][labels.index(label)]))
                if self.kind == "needles" and k in cells and not c.get("found"):
                    marks.append((f"{n} missed", label, bars[n][labels.index(label)]))
        # 'by prompt length' names the groups already (the repeat '(prompt tokens)' was cut at 100 columns)
        xlabel = "prompt length" if self.kind == "prefill" else "prompt tokens"
        main.show_bars(title, xlabel, "tok/s", labels, bars, marks, flagged=starved)
