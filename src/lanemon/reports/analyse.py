"""Everything a recording measured, as one typed :class:`~lanemon.results.analysis.Analysis` (pure, no Textual).

:func:`analyze` takes a :class:`~lanemon.recording.reader.Recording`, a path, a
``(header, events)`` pair or a plain list of events and returns an ``Analysis``: its ``environment`` (from the
header and lane/probe events), one field per bench the recording holds (``decode``, ``prefill``, ``needles``,
``sweep``, ``load``, ``race``, ``qeval``, ``agree``, ``kl``, ``gauntlet``; None for the others) and its
``warnings``; ``report --format json`` prints it (:func:`~lanemon.results.common.to_json_obj`).

Each bench field is exactly what that bench's own results function returns for the same events, as its typed
result
(:func:`lanemon.workloads.bench.decode.decode_results`,
:func:`lanemon.workloads.bench.prefill.prefill_results`,
:func:`lanemon.workloads.bench.needles.needle_results`,
:func:`lanemon.workloads.race.race_results`,
:func:`lanemon.workloads.agree.agree_results`,
:func:`lanemon.workloads.kl.kl_results`,
:func:`lanemon.workloads.gauntlet.results.gauntlet_results`), so a report built from a
recording says what ``--json`` said when the run finished.  qeval is per lane
(``qeval run LANE``): ``"qeval"`` is ``{"bench": "qeval", "lanes": {LANE:
qeval_results(events, lane=LANE)}, "compare": compare_runs(first, second) or
None}``, each lane's dict exactly what that run's ``--json`` printed, and the
paired comparison the one ``qeval compare`` prints.  Reports
(:mod:`lanemon.reports.render`) render the analysis.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from lanemon.measure.counters import session_counters
from lanemon.measure.records import compact_events, dropped_warning
from lanemon.measure.views import attach_engine_views
from lanemon import __version__
from lanemon import events as schema
from lanemon.recording.reader import Recording
from lanemon.events import Event
from lanemon.results.analysis import BENCH_FIELDS, TYPED, Analysis, Environment, LaneInfo, QevalLanes
from lanemon.results.common import Result, as_result, to_json_obj

BENCHES = BENCH_FIELDS
"""Bench names in report order."""

RESULT_FUNCTIONS: dict[str, tuple[str, str]] = {
    "decode": ("lanemon.workloads.bench.decode", "decode_results"),
    "prefill": ("lanemon.workloads.bench.prefill", "prefill_results"),
    "needles": ("lanemon.workloads.bench.needles", "needle_results"),
    "sweep": ("lanemon.workloads.bench.sweep", "sweep_results"),
    "load": ("lanemon.workloads.bench.load", "load_results"),
    "race": ("lanemon.workloads.race", "race_results"),
    "qeval": ("lanemon.workloads.qeval", "qeval_results"),
    "agree": ("lanemon.workloads.agree", "agree_results"),
    "kl": ("lanemon.workloads.kl", "kl_results"),
    "gauntlet": ("lanemon.workloads.gauntlet.results", "gauntlet_results"),
}

PER_LANE = {"qeval": ("lanemon.workloads.qeval", "compare_runs")}
"""Benches whose results function covers one lane (``fn(events, lane=NAME)``), with the function that
pairs two lanes' results; :func:`analyze` runs them per lane (see the module docstring)."""


def benches_in(events: Iterable[Event]) -> list[str]:
    """The benches whose requests or markers appear in ``events``, in report order."""
    seen: set[str] = set()
    for ev in events:
        if ev.kind in (schema.REQUEST, schema.MARK):
            bench = ev.data.get("bench")
            if bench in RESULT_FUNCTIONS:
                seen.add(bench)
    return [b for b in BENCHES if b in seen]


def interrupted_text(bench: str, result: Any) -> str | None:
    """What an interrupted run did not run, in words (None for a whole run).  Per-lane benches (qeval)
    say it per lane."""
    from lanemon.workloads.bench.run import interruption_text

    if isinstance(result, QevalLanes):
        cut = [name for name, r in result.lanes.items() if getattr(r, "interrupted", False)]
        return f"{bench} run interrupted on {', '.join(cut)}: the results cover only what finished" if cut else None
    if isinstance(result, Result):
        if not getattr(result, "interrupted", False):
            return None
        if bench in ("decode", "prefill", "needles", "load", "sweep"):  # a bench with a plan: what it did not run
            return interruption_text(bench, to_json_obj(result))  # run.py reads the JSON form
        return f"{bench} run interrupted: the results cover only what finished"  # no plan (race, agree, kl, ...)
    if not isinstance(result, dict):
        return None
    if bench in PER_LANE:
        cut = [name for name, r in (result.get("lanes") or {}).items() if isinstance(r, dict) and r.get("interrupted")]
        return f"{bench} run interrupted on {', '.join(cut)}: the results cover only what finished" if cut else None
    return interruption_text(bench, result)


def results_function(bench: str):
    """The results function for ``bench``, or None when that workload is not available."""
    module_name, attr = RESULT_FUNCTIONS[bench]
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return None
    return getattr(module, attr, None)


def lanes_of(bench: str, events: Iterable[Event]) -> list[str]:
    """Lanes with requests (or lane marks) of ``bench``, in order of first appearance."""
    out: list[str] = []
    for ev in events:
        if ev.lane and ev.kind in (schema.REQUEST, schema.MARK) and ev.data.get("bench") == bench \
                and ev.lane not in out:
            out.append(ev.lane)
    return out


def per_lane_results(bench: str, fn, events: Sequence[Event]) -> dict[str, Any]:
    """``{"bench", "lanes": {LANE: fn(events, lane=LANE)}, "compare": pair(first, second) | None}``."""
    lanes = {name: fn(events, lane=name) for name in lanes_of(bench, events)}
    return {"bench": bench, "lanes": lanes, "compare": _pair(bench, lanes)}


def _pair(bench: str, lanes: dict[str, Any]) -> Any:
    """The bench's paired comparison of its first two lanes, or None with fewer than two."""
    if len(lanes) < 2:
        return None
    module_name, attr = PER_LANE[bench]
    pair = getattr(importlib.import_module(module_name), attr)
    first, second = list(lanes)[:2]
    return pair(lanes[first], lanes[second], first, second)


def environment(header: dict[str, Any] | None, events: Sequence[Event] = (), *, count: int | None = None,
                last_t: int | None = None) -> Environment:
    """Lanes, versions, date, command and host of a session (from its header and lane events).  *count* /
    *last_t*: the full stream's event count and last ``t`` when *events* is a compact list
    (:func:`lanemon.measure.records.compact_events`)."""
    header = header or {}
    lanes: dict[str, LaneInfo] = {}
    for lane in header.get("lanes") or []:
        if isinstance(lane, dict) and lane.get("name"):
            lanes[lane["name"]] = LaneInfo(name=lane["name"], url=lane.get("url"), model=lane.get("model"))
    for ev in events:
        if ev.lane is None:
            continue
        if ev.kind == schema.LANE:
            info = lanes.setdefault(ev.lane, LaneInfo(name=ev.lane))
            info.url = info.url or ev.data.get("url")
            info.model = info.model or ev.data.get("model")
        elif ev.kind in (schema.PROBE, schema.REQUEST):
            info = lanes.setdefault(ev.lane, LaneInfo(name=ev.lane))
            if not info.model and ev.data.get("model"):
                info.model = ev.data["model"]
    duration = None
    if last_t is None and events:
        last_t = max(ev.t for ev in events)
    if last_t is not None:
        duration = round(last_t / 1e9, 3)
    from lanemon.reports.simulated import simulated_lanes

    simulated = simulated_lanes(header, events)
    for name in simulated:
        if name in lanes:
            lanes[name].simulated = True
    host = header.get("host")
    return Environment(
        simulated=simulated, lanes=list(lanes.values()), lanemon=header.get("lanemon"), reported_by=__version__,
        schema=header.get("version"), created=header.get("created"), command=header.get("command"),
        host=dict(host) if isinstance(host, dict) else {}, duration_s=duration,
        events=len(events) if count is None else count)


def _load(source: Any) -> tuple[dict[str, Any] | None, list[Event], list[str], str | None, dict[str, Any]]:
    """(header, events, warnings, path, environment keywords).  A recording is read in one streaming pass
    that folds each finished request's token events into its record (:func:`compact_events`): memory follows
    the requests, not the token chunks (docs/REPORTS.md, "Big recordings")."""
    if isinstance(source, (str, Path)):
        source = Recording(source)
    if isinstance(source, Recording):
        compact = compact_events(source.events())
        warnings = list(source.warnings) + ([dropped_warning(compact.dropped)] if compact.dropped else [])
        return (source.header, compact.events, warnings, str(source.path),
                {"count": compact.count, "last_t": compact.last_t})
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[0], (dict, type(None))):
        return source[0], list(source[1]), [], None, {}
    return None, list(source), [], None, {}


def analyze(source: Any, *, benches: Sequence[str] | None = None) -> Analysis:
    """Results of every bench in ``source`` plus the session's environment.

    ``source`` is a Recording, a path (``RecordingError`` if it is not a
    recording), a ``(header, events)`` pair or an iterable of events.
    ``benches`` restricts the analysis (default: whatever the events hold).
    """
    header, events, warnings, path, stream = _load(source)
    env = environment(header, events, **stream)
    for name, counters in session_counters(events).items():  # what each engine did over the session
        for lane in env.lanes:
            if lane.name == name:
                lane.session_counters = counters
    if path is not None:
        env.recording = path
    out: dict[str, Any] = {}
    for bench in benches or benches_in(events):
        fn = results_function(bench)
        if fn is None:
            warnings.append(f"the recording holds {bench} data but this lanemon cannot analyse it")
            continue
        try:
            result = per_lane_results(bench, fn, events) if bench in PER_LANE else fn(events)
            if bench in ("decode", "prefill", "needles", "load", "sweep"):  # the engine's own view beside ours
                result = attach_engine_views(result, events)  # server view, energy and cost, engine counters
            out[bench] = as_result(result, TYPED[bench]) if bench in TYPED else result
            cut_short = interrupted_text(bench, out[bench])
            if cut_short:  # first, so no reader takes a cut run for a whole one
                warnings.insert(0, cut_short)
        except Exception as exc:  # one broken bench must not hide the others
            warnings.append(f"{bench}: results could not be computed ({type(exc).__name__}: {exc})")
    return Analysis(environment=env, warnings=warnings, **out)


def _many_environment(envs: list[Environment]) -> Environment:
    """The environment of a report of several recordings (:func:`analyze_many`)."""
    import msgspec

    commands = list(dict.fromkeys(str(e.command) for e in envs if e.command))
    created = sorted(str(e.created) for e in envs if e.created)
    durations = [e.duration_s for e in envs if isinstance(e.duration_s, (int, float))]
    return msgspec.structs.replace(
        envs[0], recordings=[e.recording or None for e in envs],
        command=f"{len(envs)} recordings" + (f": {', '.join(commands)}" if commands else ""),
        created=(created[0] if created[0] == created[-1] else f"{created[0]} to {created[-1]}") if created else None,
        duration_s=round(sum(durations), 3) if durations else None,
        events=sum(int(e.events or 0) for e in envs))


def analyze_many(sources: Sequence[Any]) -> Analysis:
    """One analysis from several recordings (e.g. a decode, a prefill and a qeval run of the same lanes).

    Recordings are analysed one by one -- never merged event by event, since
    request ids and clocks are per recording -- and each bench section is taken
    from the first recording that holds it (a later duplicate is reported in
    ``warnings``), except per-lane benches (qeval) whose recordings hold
    different lanes: those are joined and paired.  The environment is the first recording's (lanes, host,
    versions), with ``recordings`` listing every file and the header's facts describing all of them:
    ``command`` (``11 recordings: agree, bench decode, ...``), ``created`` (the first to the last),
    ``duration_s`` and ``events`` (their sums).
    """
    if not sources:
        raise ValueError("no recording to analyse")
    analyses = [analyze(src) for src in sources]
    if len(analyses) == 1:
        return analyses[0]
    out: dict[str, Any] = {}
    first_of: dict[str, str] = {}
    warnings: list[str] = []
    for a in analyses:
        where = a.environment.recording or "a recording"
        warnings.extend(f"{where}: {w}" for w in a.warnings)
        for key in a.benches():
            value = a.bench(key)
            if key in out and key in PER_LANE and not set(value.lanes) & set(out[key].lanes):
                # one lane per recording (e.g. `qeval run A` and `qeval run B`): join them and pair them
                lanes = {**out[key].lanes, **value.lanes}
                out[key] = QevalLanes(bench="qeval", lanes=lanes, compare=_pair(key, lanes))
                continue
            if key in out:
                warnings.append(f"{key} appears in several recordings; the report uses the one named first on the "
                                f"command line ({first_of.get(key, 'a recording')}), not {where}")
                continue
            out[key] = value
            first_of[key] = where
    return Analysis(environment=_many_environment([a.environment for a in analyses]), warnings=warnings, **out)
