"""One table model per bench result, rendered by the CLI (Rich), the TUI bench screen and the report.

A :class:`ResultTable` holds labelled columns and text cells (pure, no Rich, no Textual).  Every column has a
``drop`` rank: 0 is never dropped (the lane, the level, the result's main figure); when a renderer has fewer
columns of characters than the table needs, :meth:`ResultTable.fit` first shortens the labels that have a short
form, then drops the columns with the highest rank, one at a time, and says which it hid -- so a number is never
drawn without its label, the lane is never blank, and nothing collapses to a zero-width column.

Builders: :func:`decode_table` (the decode ladder) and reports/prefill_table.py's ``prefill_table`` (the
prefill ladder) -- both rendered by the CLI, the TUI bench screen and the report --, :func:`load_table`
(``bench load``: CLI and report) and :func:`sweep_table` (``bench sweep``: CLI and report).  With ``--slo``
they carry goodput (vLLM's: requests meeting every target per second) and whether each target held
(:mod:`lanemon.measure.slo`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from lanemon.measure.catalogue import metric
from lanemon.reports.format import num, pct
from lanemon.results.common import UNSET, CellGoodput, Energy, LoadConfig, Slo
from lanemon.results.counters import EngineCounters
from lanemon.results.decode import DecodeFigures, DecodeResult, LeaderChange, LevelLead
from lanemon.results.load import LatencyPercentiles, LoadResult, LoadSlo, SendLag
from lanemon.results.sweep import SweepResult

# cell tags: how a renderer may colour a cell (the text alone must say it)
WARN, BAD, GOOD, STRONG = "warn", "bad", "good", "strong"


@dataclass(frozen=True)
class Column:
    label: str
    drop: int = 0          # 0: never dropped; higher ranks are dropped first when the width is short
    align: str = "right"   # right | left
    short: str | None = None  # a narrower label, used before any column is dropped
    detail: bool = False   # says more about a mark another column already shows (the report's width): see fit()
    metric: str | None = None  # the catalogue's figure (measure/catalogue.py) a figure column shows
    clip: bool = False     # free text (a reason, a message): cut between words, with "…", before columns go
    unit: str | None = None  # the unit of a figure outside the catalogue (KL's nats/token), for units_note()


#: columns that say which row it is (or why), not a figure: the only ones without a catalogue entry
KEY_COLUMNS = ("C", "lane", "rep", "length", "Leader", "error kinds")


def fig(name: str, drop: int, stat: str | None = None, *, align: str = "right", short: str | None = None,
        detail: bool = False, prefix: str | None = None, short_prefix: str | None = None,
        use_short: bool = False) -> Column:
    """A figure's column, labelled by the catalogue (KeyError for a figure it does not hold: such a figure cannot
    be shown).  ``stat`` follows the label (``TTFT p50``), ``prefix`` leads it (``TTFT≤0.5s met``); the short
    label is the catalogue's short form with the same words unless ``short`` says otherwise; ``use_short``
    builds the full label on the short form (a detail column: ``steady min–max``)."""
    m = metric(name)
    base = (m.short or m.label) if use_short else m.label
    label = " ".join(x for x in (prefix, base, stat) if x)
    if short is None and (m.short or short_prefix):
        short = " ".join(x for x in (short_prefix or prefix, m.short or m.label, stat) if x)
    return Column(label, drop, align, None if short == label else short, detail, name)


@dataclass(frozen=True)
class Cell:
    text: str
    tag: str | None = None


@dataclass
class ResultTable:
    key: str                       # decode | load | sweep
    title: str
    columns: list[Column]
    rows: list[list[Cell]]
    notes: list[str] = field(default_factory=list)
    legend: str = ""               # what the marks in the cells mean
    group_ends: set[int] = field(default_factory=set)  # row indices that end a group (a level)
    hidden: list[str] = field(default_factory=list)    # labels fit() dropped

    # ------------------------------------------------------------------ width
    def labels(self) -> list[str]:
        return [c.label for c in self.columns]

    def text_rows(self) -> list[list[str]]:
        return [[c.text for c in row] for row in self.rows]

    def col_widths(self) -> list[int]:
        return [max([_cells(col.label)] + [_cells(row[j].text) for row in self.rows])
                for j, col in enumerate(self.columns)]

    def width(self, pad: int = 3) -> int:
        """Characters the table needs with ``pad`` per column (Rich's box: 2 padding + 1 rule) plus 1."""
        return sum(w + pad for w in self.col_widths()) + 1

    def fit(self, width: int | None, pad: int = 3) -> "ResultTable":
        """This table for ``width`` characters: first the detail columns go (the highest rank first: each says
        more about a mark a kept column shows -- the Leader's ratio behind ``▲``/``=``, the reps' range behind
        ``†``, the kinds of errors behind ``err`` -- so they are not named among the hidden), then short labels,
        then the highest-ranked droppable columns one by one (``hidden`` names them).  None: as is."""
        if width is None or self.width(pad) <= width:
            return self
        t = self
        while t.width(pad) > width and any(c.detail for c in t.columns):
            _, j = max((c.drop, j) for j, c in enumerate(t.columns) if c.detail)
            t = t._without(j)
        if t.width(pad) <= width:
            return t
        full = [c.label for c in t.columns]
        t = replace(t, columns=[replace(c, label=c.short or c.label) for c in t.columns])
        while t._least_width(pad) > width:
            cands = [(c.drop, j) for j, c in enumerate(t.columns) if c.drop > 0]
            if not cands:
                break
            _, j = max(cands)
            t = replace(t._without(j), hidden=t.hidden + [full[j]])
            full = full[:j] + full[j + 1:]
        return t._clipped(width, pad)

    def _least_width(self, pad: int) -> int:
        """The width with every free-text column (``clip``) cut to :data:`CLIP_MIN` (or its label's width)."""
        return sum(min(w, max(CLIP_MIN, _cells(c.label))) if c.clip else w
                   for c, w in zip(self.columns, self.col_widths())) + pad * len(self.columns) + 1

    def _clipped(self, width: int, pad: int) -> "ResultTable":
        """The free-text columns cut between words to the room the others leave (shared out evenly)."""
        clip = [j for j, c in enumerate(self.columns) if c.clip]
        over = self.width(pad) - width
        if not clip or over <= 0:
            return self
        widths = self.col_widths()
        room = sum(widths[j] for j in clip) - over
        caps: dict[int, int] = {}
        for k, j in enumerate(sorted(clip, key=lambda j: widths[j])):  # the narrow ones first: they may need less
            share = room // (len(clip) - k)
            caps[j] = max(min(widths[j], share), CLIP_MIN, _cells(self.columns[j].label))
            room -= caps[j]
        rows = [[replace(c, text=clip_words(c.text, caps[j])) if j in caps else c for j, c in enumerate(row)]
                for row in self.rows]
        return replace(self, rows=rows)

    def _without(self, j: int) -> "ResultTable":
        return replace(self, columns=self.columns[:j] + self.columns[j + 1:], rows=[r[:j] + r[j + 1:] for r in self.rows])

    def hidden_note(self) -> str:
        return hidden_text(self.hidden)

    def units_note(self) -> str:
        """The units the shown labels leave out (a short label: ``steady``, not ``steady tok/s``): ``steady, span,
        stream in tok/s``; empty where every label that should name its unit does (the catalogue's full label names
        it; a time's cells and a count's carry their own)."""
        by_unit: dict[str, list[str]] = {}
        for c in self.columns:
            if c.unit and c.unit not in c.label:  # a figure outside the catalogue names its own unit
                by_unit.setdefault(c.unit, []).append(c.label)
                continue
            m = metric(c.metric) if c.metric else None
            if m and m.unit not in ("s", "requests") and m.unit in m.label.split() and m.unit not in c.label.split():
                by_unit.setdefault(m.unit, []).append(c.label)
        return " · ".join(f"{', '.join(labels)} in {unit}" for unit, labels in by_unit.items())


def _cells(text: str) -> int:
    """Terminal cells of plain text (every character of ours is one cell wide)."""
    return len(text)


def hidden_text(labels: Sequence[str]) -> str:
    """What a fitted table hid (:attr:`ResultTable.hidden`, of one table or several), as a note."""
    return (f"hidden at this width: {', '.join(labels)} (a wider terminal, the report or --json shows them)"
            if labels else "")


CLIP_MIN = 16
"""The narrowest a free-text column is cut to before a droppable column goes instead."""


def clip_words(text: str, width: int) -> str:
    """``text`` in ``width`` cells: whole if it fits, else cut after the last whole word that leaves room for
    ``…`` (a word ends at a space or before an opening bracket or a comma; a single word longer than the room is
    cut inside: nothing shorter would say more)."""
    if _cells(text) <= width:
        return text
    head = text[:max(1, width - 1)]
    cut = head
    if text[len(head)] not in " ([{,;" and " " in head:  # the cut fell inside a word: end at the word before it
        cut = head[:head.rindex(" ")]
    return cut.rstrip().rstrip(",;:·([{").rstrip() + "…"


# ------------------------------------------------------------------ number words
def rate(v: Any) -> str:
    x = num(v)
    if x is None:
        return "—"
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def secs(v: Any) -> str:
    x = num(v)
    if x is None:
        return "—"
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


def share(v: Any) -> str:
    x = num(v)
    return "—" if x is None else f"{x * 100:.0f} %"


def tail(d: LatencyPercentiles | SendLag) -> str:
    """A p99 cell that says what it rests on (reports/format.py pct: ``max 0.38 s (n=8)`` when too few
    samples carry that percentile)."""
    return pct(d.p99, 99, d.n, d.max, secs)


_SLO_LABEL = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "E2E"}


def slo_targets_text(slo: dict[str, float] | None) -> str:
    return ", ".join(f"{_SLO_LABEL.get(k, k.upper())} ≤ {v:g} s" for k, v in (slo or {}).items()) or "no SLO"


def slo_cell(j: LoadSlo | CellGoodput | Slo | None) -> Cell:
    """``held`` / ``broke TTFT`` (the targets whose percentile was over the limit)."""
    if j is None or j.held is None:
        return Cell("—")
    if j.held:
        return Cell("held", GOOD)
    broke = [_SLO_LABEL.get(k, k) for k, t in j.targets.items() if not t.held]
    return Cell("broke " + "+".join(broke) if broke else "broke", BAD)


def goodput_cells(g: CellGoodput | None) -> list[Cell]:
    """A cell's goodput (``92% 3.1/s``: the share of its requests within the SLO and their rate) and
    whether the SLO held."""
    share_, rate_ = (num(g.share), num(g.rate_rps)) if g is not None else (None, None)
    return [Cell(f"{share_ * 100:.0f}% {rate_:.1f}/s" if share_ is not None and rate_ is not None else "—"),
            slo_cell(g)]


def slo_columns(slo: dict[str, float] | None) -> list[Column]:
    """goodput, held, and one attainment column per target."""
    if not slo:
        return []
    cols = [fig("goodput", 1), fig("slo_held", 1)]
    for k, v in slo.items():
        lab = _SLO_LABEL.get(k, k.upper())
        cols.append(fig("slo_attainment", 4, prefix=f"{lab}≤{v:g}s", short_prefix=lab))
    return cols


def slo_cells(j: LoadSlo | None, slo: dict[str, float] | None) -> list[Cell]:
    """A load rep's goodput, whether the SLO held, and each target's attainment."""
    if not slo:
        return []
    out = [Cell(rate(j.goodput_rps if j else None)), slo_cell(j)]
    for k in slo:
        t = j.targets.get(k) if j else None
        out.append(Cell(share(t.attainment if t else None)))
    return out


def slo_note(slo: dict[str, float] | None) -> str:
    if not slo:
        return ""
    return (f"goodput: requests meeting every target ({slo_targets_text(slo)}) per second (vLLM's definition); "
            "SLO held when p90 TTFT, median TPOT and p90 E2E of the completed requests are within their targets; "
            "'met': the share of all requests (errors miss) within that target")


# ------------------------------------------------------------------ load
def load_table(result: LoadResult, lanes: Sequence[str] | None = None) -> ResultTable:
    """``bench load``: one row per lane and rep."""
    cfg = result.config.load or LoadConfig()
    slo = result.config.slo or None
    what = f"{cfg.arrival or '?'} arrivals" + (f" at {cfg.rate:g} req/s" if cfg.rate else "")
    by_lane = result.lanes
    names = [n for n in (lanes or by_lane) if n in by_lane]
    multi = any(len(by_lane[n].reps) > 1 for n in names)
    cols = [Column("lane", 0, "left")] + ([Column("rep", 3)] if multi else []) + [
        fig("measured", 6), fig("ok", 5), fig("errors", 2), fig("scheduled_rps", 7), fig("sent_rps", 6),
        fig("served_rps", 0), fig("served_tok_s", 0), fig("ttft", 2, "p50"), fig("ttft", 3, "p99"),
        fig("tpot", 3, "p50"), fig("e2e", 4, "p99"), fig("send_lag", 5, "p99")] + slo_columns(slo)
    reps = [r for n in names for r in by_lane[n].reps]
    energy = any(num(r.energy_j) is not None for r in reps)
    cost = any(num(r.usd_per_1m_output_tokens) is not None for r in reps)
    eng = engine_columns([r.engine_counters for r in reps])
    if energy:
        cols += [fig("tokens_per_joule", 2), fig("gpu_power", 4)]
    if cost:
        cols += [fig("usd_per_1m", 3)]
    cols += [fig(name, 5) for name in eng]
    rows: list[list[Cell]] = []
    notes: list[str] = []
    for lane in names:
        for i, r in enumerate(by_lane[lane].reps):
            who = f"{lane}{f' rep {i + 1}' if multi else ''}"
            served = Cell(rate(r.completed_rate_rps) + (" behind" if r.lane_behind else ""),
                          BAD if r.lane_behind else None)
            if r.completed_rate_rps is None and r.completed_rate_reason:
                served = Cell("none", WARN)  # not 0 req/s beside tokens of requests still running
                notes.append(f"{who}: served req/s none: {r.completed_rate_reason} (its tok/s are tokens of "
                             "requests still running at the window's end)")
            row = [Cell(lane, STRONG)] + ([Cell(str(i + 1))] if multi else []) + [
                Cell(str(r.measured)), Cell(str(r.ok)), Cell(str(r.errors), BAD if r.errors else None),
                Cell(rate(r.scheduled_rate_rps)), Cell(rate(r.sent_rate_rps)), served, Cell(rate(r.output_tok_s)),
                Cell(secs(r.ttft_s.p50)), Cell(tail(r.ttft_s)), Cell(secs(r.tpot_s.p50)), Cell(tail(r.e2e_s)),
                Cell(tail(r.send_lag_s) + (" behind" if r.client_behind else ""), WARN if r.client_behind else None)
            ] + slo_cells(r.slo, slo)
            if energy:
                row += [Cell(plus_minus(r.tokens_per_joule, r.tokens_per_joule_uncertainty, 2)),
                        Cell(plus_minus(r.gpu_power_w_mean, power_uncertainty(r.energy_uncertainty_j, r.energy_window_s), 1))]
            if cost:
                row += [Cell(fixed(r.usd_per_1m_output_tokens, 2))]
            row += engine_cells(r.engine_counters, eng)
            rows.append(row)
            if r.workers_lost:  # a load host lost mid-rep (docs/WORKERS.md, "Failure handling")
                lost = ", ".join(f"{w.host or '?'} ({(w.node or '?')[:12]})" for w in r.workers_lost)
                notes.append(f"{who}: workers_lost: load host {lost} lost; its requests in flight are errors, "
                             f"{r.not_sent} it had not sent are not sent (no figure from them)")
            apart = ", ".join(f"{n} {k}" for k, n in (("truncated", r.truncated), ("empty", r.empty),
                                                      ("bursts", r.bursts)) if n)
            if apart:
                notes.append(f"{who}: {apart} (counted apart, no figure from them)")
            notes += engine_notes(who, r, energy, cost)
    if energy or cost:
        shown = ", ".join(metric(n).label for n in (["tokens_per_joule", "gpu_power"] if energy else [])
                          + (["usd_per_1m"] if cost else []))
        notes.append(f"{shown}: the lane's GPUs over each rep's measured window, per output token served in it"
                     + ("" if cost else "; no $/1M tok: no lane has a cost_per_hour (--cost NAME=USD_PER_HOUR)")
                     + " (docs/GPU.md)")
    if eng:
        notes.append(f"{', '.join(metric(n).label for n in eng)}: the engine's own /metrics counters between the "
                     "rep's edges (the whole rep: warm-up, cool-down and the drain included)")
    if slo:
        notes.append(slo_note(slo))
    return ResultTable("load", f"open-loop load · {what}", cols, rows, notes)


def fixed(v: Any, digits: int) -> str:
    x = num(v)
    return "—" if x is None else f"{x:,.{digits}f}"


def plus_minus(v: Any, u: Any, digits: int) -> str:
    """*v* ± its uncertainty *u* (docs/GPU.md: every energy figure carries one); just *v* where *u* is unknown."""
    x, e = num(v), num(u)
    return fixed(x, digits) if x is None or e is None else f"{fixed(x, digits)} ±{e:,.{digits}f}"


def power_uncertainty(energy_uncertainty_j: object, energy_window_s: object) -> float | None:
    """The mean GPU power's uncertainty: the energy's over the window."""
    u, s = num(energy_uncertainty_j), num(energy_window_s)
    return u / s if u is not None and s else None


#: run-scoped engine counters a result table can show: their keys, which are their catalogue names
ENGINE_COLUMNS = ("prefix_hit_rate", "preemptions", "spec_acceptance_rate")


def engine_columns(blocks: Sequence[Any]) -> list[str]:
    """The engine-counter columns some block has a figure for (measure/counters.py)."""
    blocks = [b for b in blocks if isinstance(b, EngineCounters)]
    return [c for c in ENGINE_COLUMNS if any(getattr(b, c) not in (None, UNSET) for b in blocks)]


def engine_cells(c: EngineCounters | Any, columns: Sequence[str]) -> list[Cell]:
    out = []
    for key in columns:
        v = num(getattr(c, key)) if isinstance(c, EngineCounters) else None
        if v is None:
            out.append(Cell("—"))
        elif key == "preemptions":
            out.append(Cell(f"{v:,.0f}", WARN if v else None))
        else:
            out.append(Cell(f"{v * 100:.0f} %"))
    return out


def engine_notes(who: str, r: Energy, energy: bool, cost: bool) -> list[str]:
    """Why a rep's energy or cost is unknown, and what its engine counters say beyond the columns (ranks,
    restarts, LoRA adapters)."""
    out = []
    # a lane with telemetry whose energy was withheld (its exporter's interval against the window) says so even
    # when no rep has a figure (energy_update_s: the source's learned interval, None without telemetry)
    told = energy or num(r.energy_update_s) is not None
    why = [x for x in (r.energy_reason if told and num(r.energy_j) is None else None,
                       r.cost_reason if cost and num(r.usd_per_1m_output_tokens) is None else None) if x]
    if why:
        out.append(f"{who}: {'; '.join(dict.fromkeys(str(w) for w in why))}")
    c = r.engine_counters
    if isinstance(c, EngineCounters) and (c.ranks or c.restarts or c.lora_adapters):
        from lanemon.measure.counters import counters_text

        out.append(f"{who}: the engine: {counters_text(c)}")
    return out


# ------------------------------------------------------------------ sweep
def sweep_table(result: SweepResult, lanes: Sequence[str] | None = None) -> ResultTable:
    """``bench sweep``: one row per level and lane (level-major), the knee's figure (span tok/s) and its gain
    per doubling, with the level's goodput and whether the SLO held."""
    slo = result.slo or result.config.slo or None
    by_lane = result.lanes
    names = [n for n in (lanes or by_lane) if n in by_lane]
    levels = sorted({int(c) for n in names for c in by_lane[n].levels})
    knee_gain = num(result.knee_gain) or 0.1
    cols = [Column("C", 0), Column("lane", 0, "left"), fig("aggregate_tok_s", 0, short="tok/s"),
            fig("gain_per_doubling", 1), fig("steady_tok_s", 4), fig("ttft", 3, "p90"),
            fig("tpot", 3, "p50", short="TPOT"), fig("errors", 2)]
    if slo:
        cols += [fig("goodput", 1), fig("slo_held", 1)]
    rows: list[list[Cell]] = []
    ends: set[int] = set()
    starved = False
    for c in levels:
        first = True
        for n in names:
            d = by_lane[n]
            cell = d.levels.get(str(c))
            if cell is None:
                continue
            gain = d.gain_per_doubling.get(str(c))
            flag = " ?" if cell.unreliable else ""
            starved = starved or bool(flag)
            row = [Cell(f"C{c}" if first else ""), Cell(n, STRONG),
                   Cell(rate(cell.aggregate_tok_s) + flag, WARN if flag else None),
                   Cell("—" if gain is None else f"{gain * 100:+.0f} %", WARN if gain is not None and gain < knee_gain
                        else None),
                   Cell(rate(cell.steady_tok_s)),
                   Cell(pct(num(cell.ttft_p90_s), 90, cell.ttft_n, num(cell.ttft_max_s), secs)),
                   Cell(secs(num(cell.tpot_p50_s))),
                   Cell(str(cell.errors or 0), BAD if cell.errors else None)]
            if slo:
                row += [Cell(rate(cell.goodput.rate_rps if cell.goodput else None)), slo_cell(cell.goodput)]
            rows.append(row)
            first = False
        if rows:
            ends.add(len(rows) - 1)
    notes = [sweep_finding(result, n) for n in names]
    x = result.crossover
    if x:
        notes.append(f"crossover: {crossover_text(x)}")
    if slo:
        notes.append(slo_note(slo))
    legend = "? lanemon starved at this level (not judged)" if starved else ""
    return ResultTable("sweep", f"concurrency sweep · aggregate decode tok/s, first send → last end (knee: a doubling "
                       f"gains under {knee_gain * 100:.0f} %)", cols, rows, notes, legend, ends)


def crossover_text(x: LeaderChange) -> str:
    """``B overtakes A between C2 and C4`` (a sweep's crossover: its decode levels')."""
    a, b = x.between
    return f"{x.leader_after} overtakes {x.leader_before} between C{a} and C{b}"


def sweep_finding(result: SweepResult, lane: str) -> str:
    """``A: knee at C16 (...); SLO held up to C8; best 318 tok/s``."""
    d = result.lanes[lane]
    knee_gain = num(result.knee_gain) or 0.1
    if d.knee:
        rests = d.rests_on or [None, None]
        what = f"knee at C{d.knee} (C{rests[1]} gained under {knee_gain * 100:.0f} % a doubling)"
        if not d.knee_reliable:
            what += ", unreliable: lanemon itself was starved at these levels"
    elif d.stopped == "slo":
        what = (f"SLO held up to C{d.slo_holds_to}, broke at the next level" if d.slo_holds_to
                else "SLO broken already at the first level")
    else:
        what = {"errors": "stopped on errors", "max_level": "no knee up to --max-level",
                "cut": "cut short (interrupted)", "running": "running"}.get(d.stopped, str(d.stopped))
    if result.slo and d.stopped != "slo" and d.slo_held:
        held = [int(c) for c, ok in d.slo_held.items() if ok]
        broke = [int(c) for c, ok in d.slo_held.items() if not ok]
        what += (f"; SLO held at every level run (to C{max(held)})" if not broke and held
                 else f"; SLO broke at C{', C'.join(str(c) for c in sorted(broke))}" if broke else "")
    return f"{lane}: {what}; best {rate(d.max_aggregate_tok_s)} tok/s"


# ------------------------------------------------------------------ decode
def decode_table(result: DecodeResult | None, lanes: Sequence[str] | None = None) -> ResultTable:
    """The decode ladder (the CLI, the TUI bench screen and the report draw this one model): one row per level
    and lane (level-major).  ``steady`` (tokens while all C streams ran / that window) leads, ``span`` (first
    send → last end) beside it (results made before the steady figure: the span alone, judged); ``?`` marks a
    cell run while lanemon itself was starved (not judged), ``†`` unstable reps, ``▲`` the level's leader by the
    steady figure beyond the noise band, ``=`` a tie inside it.  ``result`` None (nothing yet): no rows.

    Detail columns (:meth:`ResultTable.fit` drops them first, where the width is short; the report, which has no
    width limit, keeps them): the reps' range of the leading figure (``steady min`` / ``steady max``; the span's
    where there is no steady figure; both in ``--json``) where a cell ran more than one rep, the Leader with its
    ratio (:func:`leader_text`) with two lanes or more, what the errors were (truncated, empty, bursts)."""
    from lanemon.reports.data import decode_levels, level_leads

    by_lane = result.lanes if result is not None else {}
    names = [n for n in (lanes or []) if n in by_lane] + [n for n in by_lane if n not in (lanes or [])]
    per = {n: decode_levels(result, n) for n in names}
    cells = [c for n in names for c in per[n].values()]
    with_steady = any(num(c.steady_tok_s) is not None for c in cells)
    show_ttfo = any(c.reasoning_tokens for c in cells)
    show_chunks = any((num(c.tokens_per_chunk) or 1) > 1.05 for c in cells)
    slo = (result.config.slo if result is not None else None) or None
    show_goodput = any(c.goodput is not None for c in cells)
    steady_range = with_steady and any(len(c.steady_reps or []) > 1 for c in cells)
    span_range = not steady_range and any(len(c.reps or []) > 1 for c in cells)  # the leading figure's range
    show_leader = sum(1 for n in names if per[n]) >= 2
    show_kinds = any(num(c.truncated) or num(c.empty) or num(c.bursts) for c in cells)
    cols = [Column("C", 0), Column("lane", 0, "left")]
    if with_steady:
        cols += [fig("steady_tok_s", 0), fig("aggregate_tok_s", 3)]
    else:
        cols += [fig("aggregate_tok_s", 0)]
    cols += [fig("ttft", 1, "p50", short="TTFT"), fig("ttft", 5, "p90")]
    if show_ttfo:
        cols += [fig("ttfo", 4, "p50", short="TTFO"), fig("reasoning_tokens", 6)]
    cols += [fig("per_stream_tok_s", 2)]
    if show_chunks:
        cols += [fig("tokens_per_chunk", 7), fig("itl", 7, "p50")]
    if show_goodput:
        cols += [fig("goodput", 1), fig("slo_held", 1)]
    cols += [fig("errors", 1), fig("requests", 8)]
    if steady_range:  # the reps' range: one figure per column (the result's steady_min / steady_max)
        cols += [fig("steady_min", 11, detail=True), fig("steady_max", 11, detail=True)]
    if span_range:
        cols += [fig("span_min", 12, detail=True), fig("span_max", 12, detail=True)]
    if show_leader:
        cols += [Column("Leader", 9, "left", detail=True)]
    if show_kinds:
        cols += [Column("error kinds", 10, "left", detail=True)]  # words: what the err count was
    leads = level_leads(result, names) if show_leader and result is not None else {}
    levels = sorted({lvl for n in names for lvl in per[n]})
    rows: list[list[Cell]] = []
    ends: set[int] = set()
    for lvl in levels:
        first = True
        lead = leads.get(lvl)
        leader = lead.leader if lead is not None else None
        for n in names:
            c = per[n].get(lvl)
            if c is None:
                continue
            flag = "?" if c.unreliable else ""
            tie = leader == "tie" and lead is not None and n in (lead.pair or [])
            mark = " ▲" if leader == n else (" =" if tie else "")
            row = [Cell(f"C{lvl}" if first else ""), Cell(n + mark, STRONG if leader == n else None)]
            if with_steady:
                row.append(Cell(rate(c.steady_tok_s) + flag + ("†" if c.steady_unstable else ""),
                                WARN if flag else None))
            row += [Cell(rate(c.aggregate_tok_s) + flag + ("†" if c.unstable else ""),
                         None if with_steady or not flag else WARN),
                    Cell(secs(c.ttft_p50_s)),
                    Cell(pct(c.ttft_p90_s, 90, c.ttft_n, c.ttft_max_s, secs))]
            if show_ttfo:
                row += [Cell(secs(c.ttfo_s)),
                        Cell(f"{c.reasoning_tokens or 0}" + (" est." if c.reasoning_estimated else ""))]
            row.append(Cell(rate(c.per_stream_tok_s_p50) + (" est." if c.tokens_estimated else "")))
            if show_chunks:
                tpc = num(c.tokens_per_chunk)
                itl = num(c.itl_p50_s)
                row += [Cell(f"{tpc:.2f}" if tpc else "—"), Cell("—" if itl is None else f"{itl * 1000:.1f} ms")]
            if show_goodput:
                row += goodput_cells(c.goodput)
            errs = int(num(c.errors) or 0)
            row += [Cell(str(errs), BAD if errs else None), Cell(str(c.requests or 0))]
            if steady_range:
                row += [Cell(rate(c.steady_min)), Cell(rate(c.steady_max))]
            if span_range:
                row += [Cell(rate(c.min)), Cell(rate(c.max))]
            if show_leader:
                row.append(Cell(leader_text(lead) if first else ""))
            if show_kinds:
                row.append(Cell(error_kinds(c), BAD if errs else None))
            rows.append(row)
            first = False
        if rows:
            ends.add(len(rows) - 1)
    notes = []
    if any(c.tokens_estimated for c in cells):
        notes.append("est.: token counts estimated from chunks (the lane sent no usage block)")
    if show_ttfo and any(c.reasoning_estimated for c in cells):
        notes.append(reasoning_note(cells))
    if show_goodput:
        notes.append("goodput: share of requests meeting every target and their rate (per second of the reps' "
                     f"first send → last end); {slo_targets_text(slo)}")
    basis = ("steady = tokens while all C streams ran / that window; span = first send → last end" if with_steady
             else "span = first send → last end (recorded before the steady figure: levels judged on it)")
    return ResultTable("decode", f"decode ladder · {basis}", cols, rows, notes, decode_legend(result), ends)


def reasoning_note(cells: Sequence[DecodeFigures]) -> str:
    """What the ``est.`` beside a reasoning count means: chunks carrying both reasoning and answer split by their
    text (the usage block said the chunk's tokens, not how many reasoned), or reasoning counted as chunks."""
    split = sum(int(num(c.reasoning_split_estimated) or 0) for c in cells if c.reasoning_estimated)
    chunked = any(c.reasoning_estimated and not c.reasoning_split_estimated for c in cells)
    out = []
    if split:
        out.append(f"{split} chunk{'s' if split != 1 else ''} carrying the end of the reasoning and the start of the "
                   "answer split by the length of each part's text (usage gave the chunk's tokens, not how many "
                   "reasoned)")
    if chunked:
        out.append("reasoning counted as chunks (the lane did not say how many tokens each reasoning chunk held)")
    return "est. (reasoning tok): " + "; ".join(out)


def rep_range(reps: Sequence[float | int | None] | None) -> str:
    """``118–122`` over a cell's reps; ``—`` with one rep."""
    vals = [v for v in (num(r) for r in reps or []) if v is not None]
    return f"{rate(min(vals))}–{rate(max(vals))}" if len(vals) > 1 else "—"


def leader_text(x: LevelLead | None) -> str:
    """A level's Leader from :func:`lanemon.reports.data.level_leads`: ``B (1.18×)`` beyond the noise band,
    ``tie`` inside it, ``not judged (starved)`` when lanemon was starved while a cell ran; the band is added when
    the reps widened it past its default."""
    if x is None:
        return "—"
    if x.unreliable:
        return "not judged (starved)"
    band = f"band {x.band * 100:.1f} % from the reps" if x.band_from_reps else ""
    if x.leader == "tie":
        return "tie" + (f" ({band})" if band else "")
    if x.leader and x.ratio:
        return f"{x.leader} ({x.ratio:.2f}×{', ' + band if band else ''})"
    return "—"


def error_kinds(c: DecodeFigures) -> str:
    """``3 err (1 truncated, 1 empty)``: a cell's requests that gave no figure, the outcomes apart (counted in
    its errors); bursts (complete, no per-stream rate) are said too.  ``—`` when there are none."""
    errs, bursts = int(num(c.errors) or 0), int(num(c.bursts) or 0)
    if not errs and not bursts:
        return "—"
    parts = [f"{int(num(n) or 0)} {k}" for k, n in (("truncated", c.truncated), ("empty", c.empty)) if num(n)]
    text = f"{errs} err" + (f" ({', '.join(parts)})" if parts else "")
    return text + (f", {bursts} burst" if bursts else "")


def decode_legend(result: DecodeResult | None) -> str:
    """What the decode table's marks mean, short (only the marks it can show; ▲ / = with two lanes)."""
    by_lane = result.lanes if result is not None else {}
    cells = [c for d in by_lane.values() for c in d.levels.values()]
    parts = ["▲ leads", "= tie"] if sum(1 for d in by_lane.values() if d.levels) >= 2 else []
    if any(c.unreliable for c in cells):
        parts.append("? starved")
    if any(c.unstable or c.steady_unstable for c in cells):
        parts.append("† unstable")
    return " · ".join(parts)


# ------------------------------------------------------------------ Rich (the CLI)
TAG_STYLE = {WARN: "yellow", BAD: "red", GOOD: "green", STRONG: "bold"}


def rich_table(t: ResultTable, width: int | None):
    """A Rich table of ``t`` fitted to ``width``: every column no_wrap, so none collapses."""
    from rich.table import Table
    from rich.text import Text

    t = t.fit(width)
    rt = Table(title=t.title, title_justify="left", caption=t.legend or None, caption_justify="left")
    for c in t.columns:
        rt.add_column(c.label, justify="left" if c.align == "left" else "right", no_wrap=True)
    for i, row in enumerate(t.rows):
        rt.add_row(*[Text(c.text, style=TAG_STYLE.get(c.tag or "", "")) for c in row], end_section=i in t.group_ends)
    return rt, t


def print_table(console, t: ResultTable) -> None:
    """Print ``t`` fitted to the console, then its notes and what was hidden (plain text, never markup)."""
    width = console.width if console.width else None
    rt, fitted = rich_table(t, width)
    console.print(rt)
    for note in fitted.notes + [x for x in (fitted.units_note(), fitted.hidden_note()) if x]:
        console.print(note, markup=False, highlight=False, style="dim")
