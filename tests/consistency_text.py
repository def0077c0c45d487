"""The text surfaces of tests/test_consistency_all.py: the headless tables a command prints and the markdown
report's tables, read as a reader reads them -- by the column label the metric catalogue gives
(measure/catalogue.py) -- and each figure held to the workload's typed result to the precision shown.

:func:`headless` renders a result with the printer the command itself calls on its typed result (cli/bench.py
``render``, cli/race.py and cli/gauntlet.py ``print_result``, cli/agree.py ``_print_agree`` / ``_print_kl``,
cli/qeval.py ``_print_run``), on the console a pipe gets (``output_console``: every column).
:func:`rich_tables` and :func:`md_tables` parse the text; :func:`check_labels` says which column labels the
catalogue does not give; :func:`check_figures` compares every figure of the tables it can place (a row names
its lane and level, length, rep or race) with the result's key the catalogue names for that label.
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass, field

from lanemon.measure.catalogue import CATALOGUE, BY_NAME

STATS = ("p50", "p90", "p99")


@dataclass
class Table:
    title: str
    head: list[str]
    rows: list[dict[str, str]] = field(default_factory=list)


CARRY = ("C", "Concurrency", "length", "Bench", "Lane", "lane")
"""Columns a blank cell of which carries the value of the row above (a level's second lane)."""


def _unique(head: list[str]) -> list[str]:
    """A label a second time is ``LABEL (again)``: no label of the catalogue's (one label, one figure)."""
    return [h if h not in head[:i] else f"{h} (again)" for i, h in enumerate(head)]


def _carry(rows: list[dict[str, str]], head: list[str]) -> list[dict[str, str]]:
    last: dict[str, str] = {}
    for row in rows:
        for k in CARRY:
            if k in row and not row[k] and k == head[0]:
                row[k] = last.get(k, "")
        last = row
    return rows


def rich_tables(text: str) -> list[Table]:
    """Every Rich box table of ``text``; a title is the text between the previous table and this one."""
    lines = text.splitlines()
    out, before, i = [], [], 0
    while i < len(lines):
        ln = lines[i]
        if not ln.startswith("┏"):
            before.append(ln)
            i += 1
            continue
        title = []  # a table's title is padded to the table's width; a sentence printed above it is not
        for prev in reversed(before[-3:]):
            if not prev.endswith(" "):
                break
            title.insert(0, prev.strip())
        heads: list[list[str]] = []
        i += 1
        while i < len(lines) and lines[i].startswith("┃"):
            heads.append([c.strip() for c in lines[i][1:-1].split("┃")])
            i += 1
        head = _unique([" ".join(p for p in parts if p) for parts in zip(*heads)])  # wrapped over lines
        rows = []
        while i < len(lines) and not lines[i].startswith("└"):
            if lines[i].startswith("│"):
                rows.append(dict(zip(head, (c.strip() for c in lines[i][1:-1].split("│")))))
            i += 1
        i += 1
        out.append(Table(" ".join(title) or (before[-1].strip() if before else ""), head, _carry(rows, head)))
        before = []
    return out


def md_tables(text: str) -> list[Table]:
    """Every markdown table of ``text``; its title is the heading it is under."""
    lines = text.splitlines()
    out, title = [], ""
    for i, ln in enumerate(lines):
        if ln.startswith("#"):
            title = ln.lstrip("#").strip()
        if ln.startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---") and (
                i == 0 or not lines[i - 1].startswith("|")):
            head = _unique([c.strip() for c in ln.strip().strip("|").split("|")])
            rows = []
            for body in lines[i + 2:]:
                if not body.startswith("|"):
                    break
                rows.append(dict(zip(head, (c.strip() for c in body.strip().strip("|").split("|")))))
            out.append(Table(title, head, _carry(rows, head)))
    return out


# ------------------------------------------------------------------------------------------------ labels

def _labels() -> dict[str, list[tuple[str, str | None]]]:
    out: dict[str, list[tuple[str, str | None]]] = {}
    for m in CATALOGUE:
        for text in {m.label, m.short} - {None, ""}:
            out.setdefault(text, []).append((m.name, None))
            for stat in STATS:
                out.setdefault(f"{text} {stat}", []).append((m.name, stat))
    return out


LABELS = _labels()
"""Every column label the catalogue gives: label -> [(figure, statistic)] (a few labels name two figures:
``requests``, ``tok/s``; the result's key says which)."""

KEYS = {"C", "lane", "Lane", "length", "Concurrency", "Category", "category", "Leader", "rank", "rep", "end",
        "kind", "status", "detail", "words", "", "Item", "Value", "Bench", "Engine", "found", "depth",
        "ok", "task", "id", "reason", "error kinds", "role", "message", "energy source", "race", "prompt",
        "winner", "First difference at", "Prompt", "where they part", "Turn", "Task", "verdict"}
"""Columns that name a row (its lane, level, length, rep, task, race...) or say a verdict in words: no figure
(``A verdict``: one lane's verdict in words)."""


def resolve(col: str, lanes: list[str]) -> tuple[str | None, list[tuple[str, str | None]]] | None:
    """(lane prefix or None, the catalogue's figures) a column label names, None when the catalogue gives no
    such label (``A tok/J``: lane A's tokens_per_joule)."""
    if col in LABELS:
        return None, LABELS[col]
    target = re.fullmatch(r"(TTFT|TPOT|E2E)≤\S+ (\S+)", col)  # one SLO target's column: 'TTFT≤0.05s met'
    if target and target.group(2) in LABELS:
        return None, [(name, f"target:{target.group(1).lower()}") for name, stat in LABELS[target.group(2)]
                      if stat is None]
    lane, _, rest = col.partition(" ")
    if lane in lanes and rest in LABELS:
        return lane, LABELS[rest]
    pair = lane.split("/")  # two lanes' ratio: 'B/A ratio' (its figure is on the row of the lane it divides)
    if len(pair) == 2 and all(x in lanes for x in pair) and rest in LABELS:
        return None, LABELS[rest]
    return None


def check_labels(tables: list[Table], lanes: list[str]) -> set[str]:
    """The column labels (``title :: label``, title cut at its first ' · ' or '(') the catalogue does not give."""
    bad = set()
    for t in tables:
        for col in t.head:
            lane, _, rest = col.partition(" ")
            if col not in KEYS and resolve(col, lanes) is None and not (lane in lanes and rest in KEYS):
                bad.add(f"{_short(t.title)} :: {col}")
    return bad


def _short(title: str) -> str:
    return re.split(r" · | \(|:", title)[0].strip()


# ------------------------------------------------------------------------------------------------ figures

_NUM = re.compile(r"^(max )?([-+]?[\d,]*\.?\d+)\s*(ms|s|%|×|x|tok/s|tok|req/s|W|J)?(?=$|[\s?†▲=]|\s*±)")


def shown(text: str) -> tuple[float, float, bool] | None:
    """(value in the result's unit, half its last shown digit, a max) of a table cell; None for a dash."""
    text = text.replace("?", " ").replace("†", " ").strip()
    if text in ("—", "–", "-", "") or text.split(" ", 1)[0] == "—":  # not measured, perhaps with a note ("— 5 burst")
        return None
    m = _NUM.match(text)
    if m is None:
        raise ValueError(text)
    is_max, num, unit = m.group(1) is not None, m.group(2).replace(",", ""), m.group(3)
    decimals = len(num.split(".")[1]) if "." in num else 0
    scale = {"ms": 1e-3, "%": 1e-2}.get(unit or "", 1.0)
    return float(num) * scale, 0.5 * 10 ** -decimals * scale, is_max


def _get(cell: dict, path: list[str]):
    for p in path:
        if not isinstance(cell, dict) or p not in cell:
            return KeyError
        cell = cell[p]
    return cell


ENGINE = ("prefix_hit_rate", "preemptions", "spec_acceptance_rate")
"""The engine's own counters: a cell's ``engine_counters`` holds them, only those its engine exports."""


def value_of(cell: dict, figures: list[tuple[str, str | None]], is_max: bool):
    """(key, value) of the first figure whose catalogue key the result's cell holds (KeyError: none)."""
    for name, stat in figures:
        if name in ENGINE and isinstance(cell.get("engine_counters"), dict):
            return f"engine_counters.{name}", cell["engine_counters"].get(name)
        counters = [k for k in BY_NAME[name].json_keys if k.startswith("engine_counters.")]
        if counters and isinstance(cell.get("engine_counters"), dict):  # carried only where the engine exports it
            return counters[0], cell["engine_counters"].get(counters[0].split(".", 1)[1])
        if stat and stat.startswith("target:"):  # targets.KEY.attainment, under the cell's slo block
            for key in BY_NAME[name].json_keys:
                path = ["slo", *key.replace("KEY", stat[7:]).split(".")]
                got = _get(cell, path)
                if got is not KeyError:
                    return ".".join(path), got
            continue
        for key in BY_NAME[name].json_keys:
            path = key.split(".")
            if stat is None:
                got = _get(cell, path)
                if isinstance(got, dict):
                    continue
            elif stat in key:
                path = key.replace(stat, "max").split(".") if is_max else path
                got = _get(cell, path)
            else:
                got = _get(cell, path)
                got = got.get("max" if is_max else stat, KeyError) if isinstance(got, dict) else KeyError
            if got is not KeyError:
                return ".".join(path) + (f".{'max' if is_max else stat}" if stat and stat not in key else ""), got
    return None, KeyError


def check_figures(tables: list[Table], result: dict, locate, lanes: list[str]) -> tuple[list[str], int]:
    """Mismatches, and how many figures were compared: each figure of a row ``locate(table, row, lane)`` places
    (a cell of the result) against the result's key for its label."""
    bad, n = [], 0
    for t in tables:
        for row in t.rows:
            for col, text in row.items():
                named = resolve(col, lanes) if col not in KEYS else None
                if named is None:
                    continue
                prefix, figures = named
                cell = locate(t, row, prefix, result)
                if cell is None:
                    continue
                where = f"{_short(t.title)} / {' '.join(row.get(k, '') for k in CARRY if k in row)} / {col}"
                if all(BY_NAME[f].unit == "bool" for f, _ in figures):
                    continue
                try:
                    got = shown(text)
                except ValueError:
                    bad.append(f"{where}: {text!r} is no figure")
                    continue
                key, want = value_of(cell, figures, bool(got and got[2]))
                if want is KeyError:
                    bad.append(f"{where}: the result's cell has no key for it ({[f for f, _ in figures]})")
                    continue
                n += 1
                if got is None:
                    if want is not None:
                        bad.append(f"{where}: shows {text!r}, the result's {key} is {want!r}")
                    continue
                if not isinstance(want, (int, float)) or abs(got[0] - want) > got[1] + 1e-9 * abs(want):
                    bad.append(f"{where}: shows {text!r}, the result's {key} is {want!r}")
    return bad, n


# ------------------------------------------------------------------------------------------------ locating

def _level(text: str) -> str | None:
    m = re.fullmatch(r"C(\d+)", text.split()[0]) if text else None
    return m.group(1) if m else None


def _lane(row: dict, prefix: str | None) -> str | None:
    name = prefix or (row.get("lane") or row.get("Lane") or "").split(" ")[0]
    return name or None


def locate(name: str):
    """The row placer of workload ``name``: (table, row, lane prefix, result) -> the result's cell, or None."""

    def levels(t, row, prefix, result):
        cat = row.get("Category") or row.get("category")
        if cat:  # a prompt category at C1: a lane's column, or the first two lanes' ratio (no lane)
            if prefix is None:
                by = (result.get("category_ratios") or {}).get("by_category") or {}
                return {"category_ratios": {"by_category": by[cat]}} if cat in by else None
            return result["lanes"].get(prefix, {}).get("categories", {}).get(cat)
        c = _level(row.get("C") or row.get("Concurrency") or "")
        if c is None:
            m = re.search(r"\bat C(\d+)\b", t.title)
            c = m.group(1) if m and "Category" not in row and "category" not in row else None
        lane = _lane(row, prefix)
        d = result["lanes"].get(lane, {}) if c and lane else {}
        cell = d.get("levels", {}).get(c)
        if cell is not None and isinstance(d.get("gain_per_doubling"), dict):  # a sweep's, by level, on its lane
            cell = {**cell, "gain_per_doubling": d["gain_per_doubling"].get(c)}
        return cell

    def lengths(t, row, prefix, result):
        lane, text = _lane(row, prefix), row.get("length", "")
        cells = result["lanes"].get(lane, {}).get("lengths", {}) if lane else {}
        for key, cell in cells.items():
            if text.replace(",", "") == key or text == f"{round(int(key) / 1000)}K":
                ratios = result.get("ratios") or {}
                if len(ratios.get("compared") or []) == 2:  # prefill_ratio (ratios.by_length) on the second's row
                    mine = (ratios.get("by_length") or {}).get(key) if lane == ratios["compared"][1] else None
                    cell = {**cell, "ratios": {"by_length": mine}}
                return cell
        return None

    def reps(t, row, prefix, result):
        lane = _lane(row, prefix)
        reps = result["lanes"].get(lane, {}).get("reps", []) if lane else []
        return reps[0] if len(reps) == 1 else None

    def races(t, row, prefix, result):
        lane = _lane(row, prefix)
        if lane is not None and re.match(r"\d+ races\b", t.title):  # the summary: a lane over every race
            return result["lanes"].get(lane)
        m = re.fullmatch(r"\d+", row.get("race", "")) or re.match(r"race (\d+)\b", t.title)
        number = int(m.group(1) if m.re.groups else m.group(0)) if m else None
        if number is None or lane is None or number > len(result["races"]):
            return None
        return result["races"][number - 1]["lanes"].get(lane)

    def agree(t, row, prefix, result):
        if "Prompt" in row:  # one prompt: its first differing word, each lane's words
            p = next((p for p in result["prompts"] if str(p["id"]) == row["Prompt"]), None)
            lanes = result["lanes"]
            if p is None or prefix not in (None, *lanes[:2]):
                return None
            return p if prefix is None else {k: p.get(k) for k in ("a_words", "b_words")[
                lanes.index(prefix):lanes.index(prefix) + 1]}
        bucket = row.get("words") or row.get("First difference at") or ""
        bucket = "exact" if bucket == "exact match" else bucket.removeprefix("word ").replace("–", "-")
        if bucket not in result["histogram"]:
            return None
        return {"histogram": result["histogram"][bucket], "histogram_share": result["histogram_share"][bucket]}

    def gauntlet(t, row, prefix, result):
        m = re.match(r"lane (\S+)", t.title)  # the headless table of one lane
        lane = m.group(1) if m else _lane(row, prefix)
        d = result["lanes"].get(lane) if lane else None
        if d is None:
            return None
        if "Turn" in row:  # one turn, the median over reps
            return next((c for c in d["by_turn"] if str(c["turn"]) == row["Turn"]), None)
        if "rep" in row:  # one rep: the lane's per-rep lists at its index
            r = int(row["rep"]) - 1
            keys = ("tool_calls", "malformed_calls", "turn_count", "wall_s", "ttft_sum_s", "decode_sum_s",
                    "first_prompt_tokens", "last_prompt_tokens")
            return {k: d[k][r] for k in keys} if 0 <= r < d["reps"] else None
        return d

    def qeval(t, row, prefix, result):
        lane = _lane(row, prefix) or (t.title.split()[1] if t.title.startswith("qeval ") else None)
        if lane != result["lane"] or "passed" not in row:
            return None
        return result if row.get("kind") == "all" else result["kinds"].get(row.get("kind"))

    def server(t, row, prefix, result):  # the engine's view: a bench's row of a lane, its ``server`` block in it
        lane = _lane(row, prefix)
        return result["lanes"].get(lane) if lane and row.get("Bench") == name else None

    placer = {"decode": levels, "sweep": levels, "prefill": lengths, "needles": lengths, "load": reps,
              "race": races, "agree": agree, "gauntlet": gauntlet, "qeval": qeval}.get(name, lambda *a: None)
    return lambda t, row, prefix, result: (server if t.title.startswith("Where the time goes") else placer)(
        t, row, prefix, result)


# ------------------------------------------------------------------------------------------------ rendering

def headless(name: str, result: dict, events=None, time_scale: float | None = None) -> str:
    """What the command prints off a terminal for ``result`` (its --json read back): the printer the command
    calls on its typed result, on the console a pipe gets (cli/common.output_console)."""
    from lanemon.cli import agree, bench, gauntlet, qeval, race
    from lanemon.cli.common import output_console
    from lanemon.results.agree import AgreeResult
    from lanemon.results.common import as_result
    from lanemon.results.gauntlet import GauntletResult
    from lanemon.results.kl import KlResult
    from lanemon.results.qeval import QevalResult
    from lanemon.results.race import RaceResult

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        console = output_console(None, terminal=False)
        if name in ("decode", "sweep", "prefill", "needles", "load"):
            from lanemon.results.decode import DecodeResult
            from lanemon.results.load import LoadResult
            from lanemon.results.needles import NeedleResult
            from lanemon.results.prefill import PrefillResult
            from lanemon.results.sweep import SweepResult

            cls = {"decode": DecodeResult, "sweep": SweepResult, "prefill": PrefillResult, "needles": NeedleResult,
                   "load": LoadResult}[name]
            bench.render(as_result(result, cls), console, time_scale=time_scale, events=events)
        elif name == "race":
            race.print_result(as_result(result, RaceResult), console)
        elif name == "gauntlet":
            gauntlet.print_result(as_result(result, GauntletResult), console)
        elif name == "agree":
            agree._print_agree(as_result(result, AgreeResult))
        elif name == "kl":
            agree._print_kl(as_result(result, KlResult))
        elif name == "qeval":
            qeval._print_run(as_result(result, QevalResult))
        else:
            raise KeyError(name)
    return buf.getvalue()
