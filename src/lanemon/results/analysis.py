"""A recording's analysis: every bench's typed result, the session's environment and the warnings.

What :func:`lanemon.reports.analyse.analyze` returns and every report surface reads (the verdict, the sections, the
renderers, ``lanemon compare``, the history rows); ``lanemon report --format json`` prints it
(:func:`~lanemon.results.common.to_json_obj`).  Each bench field is exactly that bench's own results function's
result for the same events, so a report says what the run's ``--json`` said.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from lanemon.results.agree import AgreeResult
from lanemon.results.common import Num, Result
from lanemon.results.counters import EngineCounters
from lanemon.results.decode import DecodeResult
from lanemon.results.gauntlet import GauntletResult
from lanemon.results.kl import KlResult
from lanemon.results.load import LoadResult
from lanemon.results.needles import NeedleResult
from lanemon.results.prefill import PrefillResult
from lanemon.results.qeval import QevalCompare, QevalResult
from lanemon.results.race import RaceResult
from lanemon.results.sweep import SweepResult


class LaneInfo(Result, omit_defaults=False, kw_only=True):
    """One lane of the session: from the recording header, its ``lane`` events and its first requests."""

    name: str | None = None
    url: str | None = None
    model: str | None = None
    simulated: bool | UnsetType = UNSET
    """True for a lane lanemon's simulator served (reports/simulated.py); left out otherwise."""
    session_counters: EngineCounters | UnsetType = UNSET
    """What the engine did over the whole session (measure/counters.session_counters); left out without two
    successful ``/metrics`` scrapes.  Its figures are the engine's (only what it exports)."""


class Environment(Result, omit_defaults=False, kw_only=True):
    """Lanes, versions, date, command and host of a session (reports/analyse.environment).

    Every key the JSON report always carried has a default here only so that a partial analysis (a test's, the
    result screen's) converts; :func:`~lanemon.reports.analyse.environment` always sets them all, and
    ``omit_defaults`` is off so the JSON keeps them (``null`` included).  ``recording`` / ``recordings`` appear
    only when the analysis read files."""

    simulated: list[str] = []
    lanes: list[LaneInfo] = []
    lanemon: str | None = None
    reported_by: str | None = None
    schema: int | str | None = None
    created: str | None = None
    command: str | None = None
    host: dict[str, Any] = {}
    """The header's host block as recorded (untrusted JSON: platform, python, cpus, memory_bytes)."""
    duration_s: Num = None
    events: int = 0
    recording: str | None | UnsetType = UNSET
    recordings: list[str | None] | UnsetType = UNSET


class QevalLanes(Result, kw_only=True):
    """A recording's qeval runs: each lane's ``qeval run`` result and the paired comparison of the first two
    (what ``qeval compare`` prints; None with one lane)."""

    bench: Literal["qeval"]
    lanes: dict[str, QevalResult]
    compare: QevalCompare | None


class Analysis(Result, kw_only=True):
    """A recording's (or several recordings') analysis (docs/JSON.md, "report")."""

    environment: Environment
    decode: DecodeResult | None = None
    prefill: PrefillResult | None = None
    needles: NeedleResult | None = None
    sweep: SweepResult | None = None
    load: LoadResult | None = None
    race: RaceResult | None = None
    qeval: QevalLanes | None = None
    agree: AgreeResult | None = None
    kl: KlResult | None = None
    gauntlet: GauntletResult | None = None
    warnings: list[str]

    def bench(self, name: str) -> Any:
        """The result of bench ``name`` (one of :data:`BENCH_FIELDS`), None when the recording has none."""
        return getattr(self, name) if name in BENCH_FIELDS else None

    def benches(self) -> list[str]:
        """The benches this analysis holds, in report order."""
        return [b for b in BENCH_FIELDS if getattr(self, b) is not None]


BENCH_FIELDS = ("decode", "prefill", "needles", "sweep", "load", "race", "qeval", "agree", "kl", "gauntlet")
"""The bench fields of :class:`Analysis`, in report order."""

TYPED: dict[str, type[Result]] = {"decode": DecodeResult, "prefill": PrefillResult, "needles": NeedleResult,
                                  "sweep": SweepResult, "load": LoadResult, "race": RaceResult, "qeval": QevalLanes,
                                  "agree": AgreeResult, "kl": KlResult, "gauntlet": GauntletResult}
"""The benches whose results are typed, and their Struct."""


def as_analysis(obj: Any) -> Analysis:
    """``obj`` as an :class:`Analysis`: itself, or a JSON report read back (``report --format json``) or a
    hand-made dict of the same shape, converted (``msgspec.ValidationError`` names a bad key's path)."""
    if isinstance(obj, Analysis):
        return obj
    if isinstance(obj, dict):  # a partial one (a test's, a screen's) may leave out the environment and warnings
        obj = {"environment": {}, "warnings": [], **obj}
    return msgspec.convert(obj, Analysis, strict=False)
