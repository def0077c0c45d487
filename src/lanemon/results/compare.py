"""``lanemon compare``: one figure OLD vs NEW (a row), a side's session, the whole comparison.

What :func:`lanemon.reports.compare.compare` and ``compare_lanes`` return, what ``compare --format json`` prints
(docs/JSON.md, "compare") and what the table, Markdown, HTML and the compare screen read.  Every key is always
carried (``null`` included), so ``omit_defaults`` is off.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Literal

from msgspec import UNSET, UnsetType

from lanemon.results.common import Num, Result


class Judgement(Result, omit_defaults=False, kw_only=True):
    """One metric's OLD vs NEW (reports/compare.judge): the ratio, the better side and whether the change is
    significant, and on what it rests."""

    ratio: Num = None
    better: Literal["old", "new"] | None = None
    significant: bool = False
    basis: str = ""
    band: Num = None
    """The shared noise band (relative) the change was held against; None for counts and missing sides."""
    beyond_band: bool | None = None
    p: Num = None
    """The uncorrected p-value of the row's test (None when not tested)."""
    test: Literal["permutation", "mcnemar"] | None = None


class CompareRow(Result, omit_defaults=False, kw_only=True):
    """One aligned figure: what it is, both values, and the judgement (:class:`Judgement`'s fields, then
    ``p_adjusted``; docs/COMPARE.md)."""

    bench: str
    lane: str
    cell_kind: str
    cell: str
    metric: str
    label: str
    unit: str
    direction: Literal["higher", "lower"]
    old: Num = None
    new: Num = None
    old_range: list[float] | None = None
    new_range: list[float] | None = None
    old_reps: int = 0
    new_reps: int = 0
    unreliable: bool = False
    ratio: Num = None
    better: Literal["old", "new"] | None = None
    significant: bool = False
    basis: str = ""
    band: Num = None
    beyond_band: bool | None = None
    p: Num = None
    test: Literal["permutation", "mcnemar"] | None = None
    p_adjusted: Num = None
    """Benjamini-Hochberg over the comparison's tested rows (None when the row was not tested)."""


class OnlyIn(Result, omit_defaults=False, kw_only=True):
    """A cell only one side holds."""

    bench: str
    lane: str
    cell_kind: str
    cell: str


class SideLane(Result, omit_defaults=False, kw_only=True):
    name: str | None = None
    model: str | None = None
    url: str | None = None


class Side(Result, omit_defaults=False, kw_only=True):
    """One side's session (its environment); ``lane``: the lane it plays, comparing two lanes of one session."""

    simulated: list[str] = []
    recording: str | None = None
    created: str | None = None
    command: str | None = None
    lanemon: str | None = None
    duration_s: Num = None
    lanes: list[SideLane] = []
    lane: str | UnsetType = UNSET


class CompareSummary(Result, omit_defaults=False, kw_only=True):
    significant_better: int = 0
    significant_worse: int = 0
    noise: int = 0
    tested: int = 0
    untested_beyond_band: int = 0
    unreliable: int = 0
    rows: int = 0
    only_old: int = 0
    only_new: int = 0


class Comparison(Result, omit_defaults=False, kw_only=True):
    """``lanemon compare --format json`` (docs/JSON.md, "compare")."""

    mode: Literal["sessions", "lanes"]
    simulated: list[str] = []
    old: Side
    new: Side
    rows: list[CompareRow] = []
    only_old: list[OnlyIn] = []
    only_new: list[OnlyIn] = []
    summary: CompareSummary
    noise_bands: dict[str, float] = {}
    alpha: float
    min_reps: int
    correction: str = "benjamini-hochberg"
    warnings: list[str] = []
    interrupted: list[str] = []
    lead: list[str] = []
    """The headline every compare starts with (reports/compare_text.lead)."""
