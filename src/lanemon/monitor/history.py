"""The history catalogue: one SQLite file in the data directory holding every session's per-lane summaries.

``catalogue.sqlite3`` (standard library ``sqlite3``, WAL journal) has a ``meta`` table (``schema_version``)
and a ``summaries`` table: one row per (session, lane, workload, level) -- the queryable columns plus the
whole :class:`~lanemon.measure.summary.LaneSummary` as JSON (docs/MONITOR.md, "History").  A session adds
its rows when its recording is saved (:func:`add_recording`); :func:`rebuild` recreates the file from the
recordings, so a corrupt or deleted catalogue loses nothing.  Both read the recording back the same way, so the
rows are the same whichever way they were made: a bench row (:data:`BENCH_ROWS`) holds that workload's own typed
result for its cell (reports/analyse.py, what the bench printed); other rows (a live session's probes, the
gauntlet, ...) the fold of measure/summary.py.
"""

from __future__ import annotations

import contextlib
import sqlite3
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from lanemon.config import data_dir
from lanemon.measure.metrics import tail_ok
from lanemon.measure.summary import LaneSummary, SummaryFold
from lanemon.recording.reader import Recording, RecordingError
from lanemon.results.analysis import Analysis
from lanemon.results.common import LoadConfig
from lanemon.results.decode import DecodeCell
from lanemon.results.load import LatencyPercentiles, LoadLane, LoadRep
from lanemon.results.needles import NeedleCell
from lanemon.results.prefill import PrefillCell
from lanemon.results.race import RaceResult

SCHEMA_VERSION = 4
"""2: rows carry the bench's own figures and what makes them comparable (measure/summary.py SUMMARY_VERSION);
3: prefill, needles and race rows too (``prefill_tok_s``); 4: a load row's ``requests`` column is the rep's own
``requests`` (warm-up included), its measured window's count the row's ``measured``."""
BENCH_ROWS = ("decode", "prefill", "needles", "race", "load")
"""Workloads whose rows take their figures from the bench's own typed result (what the bench printed)."""
FILE_NAME = "catalogue.sqlite3"
AUTO_ADD_MAX_BYTES = 256 << 20
"""A saved recording larger than this (256 MiB) is not summarised when its command ends (reading it back takes
about 70 ms per MiB here: sample_sessions/decode.jsonl, 8.5 MB, 0.6 s); ``--rebuild`` reads it."""
MAX_RECORDING_BYTES = 2 << 30
"""A recording larger than this (2 GiB) is not summarised (a note says so)."""

_COLUMNS = ("session", "lane", "workload", "level", "started", "started_s", "command", "model", "engine",
            "simulated", "requests", "ttft_p50", "tpot_p50", "e2e_p50", "tok_s", "goodput_rps", "slo_attainment")
_DDL = f"""
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS summaries (
    session TEXT NOT NULL, lane TEXT NOT NULL, workload TEXT NOT NULL, level TEXT NOT NULL,
    started TEXT, started_s REAL, command TEXT, model TEXT, engine TEXT, simulated INTEGER NOT NULL,
    requests INTEGER NOT NULL, ttft_p50 REAL, tpot_p50 REAL, e2e_p50 REAL, tok_s REAL, goodput_rps REAL,
    slo_attainment REAL, path TEXT, summary TEXT NOT NULL,
    PRIMARY KEY (session, lane, workload, level));
CREATE INDEX IF NOT EXISTS summaries_lane_time ON summaries (lane, started_s);
"""
_encode = msgspec.json.Encoder()
_decode = msgspec.json.Decoder(LaneSummary)


class CatalogueError(Exception):
    """The catalogue cannot be opened or is not one (the message says which file and why); ``lost``: a
    rebuild could not write every row (the command exits 4)."""

    def __init__(self, message: str, *, lost: bool = False) -> None:
        super().__init__(message)
        self.lost = lost


def default_path() -> Path:
    return data_dir() / FILE_NAME


def recordings_dir() -> Path:
    return data_dir() / "recordings"


@contextlib.contextmanager
def connect(path: Path | None = None) -> Iterator[sqlite3.Connection]:
    """Open (creating) the catalogue; WAL journal; refuses a file of another schema version."""
    path = Path(path) if path is not None else default_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, timeout=5.0)
    except (OSError, sqlite3.Error) as exc:
        raise CatalogueError(f"{path}: cannot open the history catalogue: {exc}") from None
    try:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_DDL)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if row is None:
                conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                conn.commit()
            elif row[0] != str(SCHEMA_VERSION):
                raise CatalogueError(f"{path}: history catalogue schema {row[0]!r}, this lanemon writes "
                                     f"{SCHEMA_VERSION}: run `lanemon history --rebuild`")
        except sqlite3.OperationalError as exc:  # the file is fine, the disk or its permissions are not
            raise CatalogueError(f"{path}: {unwritable(exc)}") from None
        except sqlite3.DatabaseError as exc:
            raise CatalogueError(f"{path}: not a usable history catalogue ({exc}): run `lanemon history "
                                 "--rebuild`") from None
        yield conn
    finally:
        conn.close()


def unwritable(exc: sqlite3.Error) -> str:
    """Why the catalogue could not be opened or written, in one line, never advising ``--rebuild`` (which
    deletes the file: a read-only catalogue or a full disk are no reason to lose it)."""
    text = str(exc)
    if "full" in text:
        return f"the history catalogue cannot be written: the disk is full ({text})"
    if "readonly" in text or "read-only" in text or "unable to open" in text or "access" in text:
        return (f"the history catalogue cannot be written ({text}): it or its folder is read-only; give "
                "lanemon write access or point --catalogue elsewhere")
    return f"the history catalogue cannot be used ({text})"


def summarize_recording(path: Path) -> list[LaneSummary]:
    """The per-lane summaries of one recording (RecordingError when it is not one, or not a regular file:
    a FIFO named ``*.jsonl`` would block the read for ever)."""
    path = Path(path)
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise RecordingError(f"{path}: not a regular file, not read")
        if st.st_size > MAX_RECORDING_BYTES:
            raise RecordingError(f"{path}: larger than {MAX_RECORDING_BYTES >> 30} GiB, not summarised")
    except OSError as exc:
        raise RecordingError(f"{path}: {exc.strerror or exc}") from None
    rec = Recording(path)
    rows = SummaryFold(rec.header, session=path.name).feed(rec.events()).summaries()
    benches = sorted({r.workload for r in rows} & set(BENCH_ROWS))
    if not benches:
        return rows
    from lanemon.reports.analyse import analyze

    return own_figures(rows, analyze(path, benches=benches))  # a second streaming pass, bench recordings only


def _median(values: Iterable[float | int | None]) -> float | int | None:
    xs = sorted(v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool))
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def _known(x: Any) -> Any:
    """A typed cell's optional figure: None where the cell leaves it out (``UNSET``)."""
    return None if x is msgspec.UNSET else x


def _decode_row(r: LaneSummary, cell: DecodeCell) -> LaneSummary:
    """A decode level's row: the bench's own cell."""
    n = cell.ttft_n or 0
    good = cell.goodput
    return msgspec.structs.replace(
        r, basis="decode results", requests=int(cell.requests or 0), error=int(cell.errors or 0),
        client_bound=int(cell.client_bound or 0), complete=int(cell.requests or 0) - int(cell.errors or 0),
        latency_n=n, tok_s=cell.aggregate_tok_s, steady_tok_s=cell.steady_tok_s,
        ttft_p50=cell.ttft_p50_s, ttft_p90=cell.ttft_p90_s if tail_ok(90, n) else None,
        ttft_p99=cell.ttft_p99_s if tail_ok(99, n) else None, ttft_max=cell.ttft_max_s,
        tpot_p50=_known(cell.tpot_p50_s), tpot_p90=None, tpot_p99=None, tpot_max=None,
        e2e_p50=None, e2e_p90=None, e2e_p99=None, e2e_max=None,
        decode_tok_s_p50=cell.per_stream_tok_s_p50, goodput_rps=good.rate_rps if good else None,
        slo_attainment=good.share if good else None)


def _prefill_row(r: LaneSummary, cell: PrefillCell | NeedleCell, basis: str) -> LaneSummary:
    """A prefill (or needles) length's row: the bench's own cell -- its TTFT and prefill rate, no decode figures
    (the bench prints none: its requests ask for a token or a short answer)."""
    if isinstance(cell, PrefillCell):
        requests, errors, good = int(cell.requests or 0), int(cell.errors or 0), cell.goodput
    else:  # a needle length: one request per run
        runs = _known(cell.runs)
        requests = len(runs) if runs else 1
        errors = sum(1 for x in runs if x.error) if runs else int(cell.error is not None)
        good = None
    bound = int(cell.client_bound or 0)
    return msgspec.structs.replace(
        r, basis=basis, requests=requests, error=errors, complete=requests - errors, client_bound=bound,
        latency_n=max(0, requests - errors - bound), ttft_p50=_known(cell.ttft_s), ttft_p90=None, ttft_p99=None,
        ttft_max=None, tpot_p50=None, tpot_p90=None, tpot_p99=None, tpot_max=None, e2e_p50=None, e2e_p90=None,
        e2e_p99=None, e2e_max=None, decode_tok_s_p50=None, tok_s=None, steady_tok_s=None,
        prefill_tok_s=_known(cell.prefill_tok_s), goodput_rps=good.rate_rps if good else None,
        slo_attainment=good.share if good else None)


def _race_row(r: LaneSummary, race: RaceResult) -> LaneSummary:
    """A lane's race row: the race's own summary of the lane (medians over the races it finished)."""
    lane = race.lanes[r.lane]
    ran = [x.lanes[r.lane] for x in race.races if r.lane in x.lanes]
    errors = sum(1 for x in ran if x.error is not None)
    good = lane.goodput
    return msgspec.structs.replace(
        r, basis="race results", requests=len(ran), error=errors, complete=int(lane.races_ok or 0),
        latency_n=int(lane.races_ok or 0), ttft_p50=lane.ttft_s, ttft_p90=None, ttft_p99=None, ttft_max=None,
        tpot_p50=None, tpot_p90=None, tpot_p99=None, tpot_max=None, e2e_p50=lane.total_s, e2e_p90=None,
        e2e_p99=None, e2e_max=None, decode_tok_s_p50=lane.decode_tok_s, tok_s=None, steady_tok_s=None,
        goodput_rps=good.rate_rps if good else None, slo_attainment=good.share if good else None)


def _load_row(r: LaneSummary, lane: LoadLane, config: LoadConfig | None) -> LaneSummary:
    """A load lane's row: the median over its reps of each rep's own figures.  ``requests`` is the rep's
    ``requests`` (every request it sent, warm-up included) and ``measured`` its measured window's; the outcomes and
    figures are over the measured window (the warm-up left out), as the rep's are."""
    reps = lane.reps
    cfg = config or LoadConfig()
    rate = cfg.rate
    level = f"{rate:g} req/s" if isinstance(rate, (int, float)) and cfg.arrival != "trace" else str(cfg.arrival or "")

    def med(get: Callable[[LoadRep], float | int | None]) -> Any:
        return _median(get(x) for x in reps)

    def pct(get: Callable[[LoadRep], LatencyPercentiles | None], q: str) -> Any:
        return med(lambda x: getattr(get(x), q) if get(x) is not None else None)

    return msgspec.structs.replace(
        r, basis="load results", level=level[:64], requests=int(med(lambda x: x.requests) or 0),
        measured=int(med(lambda x: x.measured) or 0),
        complete=int(med(lambda x: x.ok) or 0), error=int(med(lambda x: x.errors) or 0),
        tok_s=med(lambda x: x.output_tok_s), steady_tok_s=None,
        ttft_p50=pct(lambda x: x.ttft_s, "p50"), ttft_p90=pct(lambda x: x.ttft_s, "p90"),
        ttft_p99=pct(lambda x: x.ttft_s, "p99"), tpot_p50=pct(lambda x: x.tpot_s, "p50"),
        tpot_p90=pct(lambda x: x.tpot_s, "p90"), tpot_p99=pct(lambda x: x.tpot_s, "p99"),
        e2e_p50=pct(lambda x: x.e2e_s, "p50"), e2e_p90=pct(lambda x: x.e2e_s, "p90"),
        e2e_p99=pct(lambda x: x.e2e_s, "p99"),
        goodput_rps=med(lambda x: x.slo.goodput_rps if x.slo else None),
        slo_attainment=med(lambda x: x.slo.share if x.slo else None),
        duration_s=med(lambda x: x.slo.duration_s if x.slo else None) or r.duration_s)


def own_figures(rows: list[LaneSummary], analysis: Analysis) -> list[LaneSummary]:
    """Each bench row (:data:`BENCH_ROWS`) with the bench's own figures for its cell (``analysis``:
    reports/analyse.py over the same recording: each workload's typed result), so history says what the bench
    said; a row the results do not hold (an interrupted cell) keeps the fold's figures (``basis`` ``requests``)."""
    out = []
    for r in rows:
        if r.workload == "decode" and analysis.decode is not None:
            d = analysis.decode.lanes.get(r.lane)
            cell = d.levels.get(r.level) if d is not None else None
            if cell is not None:
                r = _decode_row(r, cell)
        elif r.workload == "prefill" and analysis.prefill is not None:
            p = analysis.prefill.lanes.get(r.lane)
            pc = p.lengths.get(r.level) if p is not None else None
            if pc is not None and not pc.skipped:
                r = _prefill_row(r, pc, "prefill results")
        elif r.workload == "needles" and analysis.needles is not None:
            nl = analysis.needles.lanes.get(r.lane)
            nc = nl.lengths.get(r.level) if nl is not None else None
            if nc is not None:
                r = _prefill_row(r, nc, "needles results")
        elif r.workload == "race" and analysis.race is not None and r.lane in analysis.race.lanes:
            r = _race_row(r, analysis.race)
        elif r.workload == "load" and analysis.load is not None:
            lane = analysis.load.lanes.get(r.lane)
            if lane is not None and lane.reps:
                r = _load_row(r, lane, analysis.load.config.load)
        out.append(r)
    return out


def insert(conn: sqlite3.Connection, rows: Iterable[LaneSummary], path: Path | None = None) -> int:
    n = 0
    marks = ", ".join("?" for _ in range(len(_COLUMNS) + 2))
    for s in rows:
        values = [getattr(s, c) for c in _COLUMNS]
        values[_COLUMNS.index("simulated")] = int(s.simulated)
        conn.execute(f"INSERT OR REPLACE INTO summaries ({', '.join(_COLUMNS)}, path, summary) VALUES ({marks})",
                     (*values, str(path) if path else None, _encode.encode(s).decode()))
        n += 1
    conn.commit()
    return n


def add_recording(path: Path, catalogue: Path | None = None) -> int:
    """Summarise one recording into the catalogue (replacing its earlier rows); returns the rows added."""
    rows = summarize_recording(path)
    with connect(catalogue) as conn:
        return insert(conn, rows, Path(path))


def rebuild(catalogue: Path | None = None, sources: Iterable[Path] | None = None) -> tuple[int, int, list[str]]:
    """Delete and recreate the catalogue from every recording in ``sources`` (default: the data directory's
    recordings).  Returns (recordings read, rows, problems)."""
    catalogue = Path(catalogue) if catalogue is not None else default_path()
    for suffix in ("", "-wal", "-shm"):
        try:
            Path(str(catalogue) + suffix).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:  # a read-only folder: nothing was deleted
            raise CatalogueError(f"{catalogue}{suffix}: cannot replace the history catalogue "
                                 f"({exc.strerror or exc})") from None
    files = sorted(sources) if sources is not None else sorted(recordings_dir().glob("*.jsonl"))
    try:
        with connect(catalogue) as conn:
            return _refill(conn, catalogue, files)
    except CatalogueError as exc:
        if exc.lost:
            raise
        raise CatalogueError(f"{exc}; the old catalogue was deleted, no row was written", lost=True) from None


def _refill(conn: sqlite3.Connection, catalogue: Path, files: list[Path]) -> tuple[int, int, list[str]]:
    read = rows = 0
    problems: list[str] = []
    for f in files:
        try:
            summaries = summarize_recording(f)
        except RecordingError as exc:
            problems.append(str(exc))
            continue
        try:
            rows += insert(conn, summaries, f)
        except sqlite3.Error as exc:  # a full disk mid-rebuild: what is there so far is kept
            raise CatalogueError(f"{catalogue}: {unwritable(exc)}; it holds {rows} rows from the first {read} "
                                 f"of {len(files)} recordings", lost=True) from None
        read += 1
    return read, rows, problems


def query(catalogue: Path | None = None, *, lane: str | None = None, since_s: float | None = None,
          workload: str | None = None, limit: int = 10_000) -> list[LaneSummary]:
    """Rows, oldest first (by session start), filtered; each decoded into a LaneSummary."""
    where, args = [], []  # type: list[str], list[Any]
    if lane:
        where.append("lane = ?")
        args.append(lane)
    if since_s is not None:
        where.append("started_s >= ?")
        args.append(since_s)
    if workload:
        where.append("workload = ?")
        args.append(workload)
    sql = "SELECT summary FROM summaries" + (" WHERE " + " AND ".join(where) if where else "")
    sql += " ORDER BY started_s, session, lane, workload, level LIMIT ?"
    out = []
    with connect(catalogue) as conn:
        for (text,) in conn.execute(sql, (*args, int(limit))):
            try:
                out.append(_decode.decode(text))
            except msgspec.DecodeError:
                continue  # a row written by another version: --rebuild rewrites it
    return out
