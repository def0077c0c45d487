"""``qeval run`` (a task's verdict, one lane's run) and ``qeval compare`` (two runs paired by task id).

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from msgspec import UNSET

from lanemon.results.common import Num, Opt, Result


class QevalTask(Result):
    """One scored task: its verdict and reason, and the reply's size and time (``seconds``: sent -> last byte)."""

    passed: bool
    reason: str
    kind: str
    prompt_tokens: int | None
    completion_tokens: int | None
    seconds: Num


class QevalKind(Result):
    """The scored tasks of one kind (``kinds.KIND``): the catalogue's ``qeval_*`` figures over them."""

    passed: int
    total: int
    median_s: Num
    median_tok_s: Num


class QevalResult(Result):
    """``qeval run --json`` (and ``qeval rescore --json`` of one lane; docs/JSON.md, "qeval").  ``skipped`` (task id
    -> reason) only when some task was not scored: those are in neither ``passed`` nor ``total``."""

    lane: str | None
    model: str | None
    passed: int
    total: int
    tasks: dict[str, QevalTask]
    skipped: dict[str, str] = {}
    median_s: Num | Opt = UNSET
    """The median over the scored tasks of ``seconds`` (catalogue ``qeval_median_s``; null when none has one)."""
    median_tok_s: Num | Opt = UNSET
    """The median over the scored tasks of completion tokens / ``seconds`` (catalogue ``qeval_tok_s``)."""
    kinds: dict[str, QevalKind] | Opt = UNSET
    """Per task kind, in the bank's order of kinds (code, json, math, format, then any other): its figures.  The
    three keys are absent only from a file an older lanemon wrote (``qeval compare`` reads those)."""


class QevalSide(Result):
    """One side of a paired comparison: its name and score over the tasks both runs hold."""

    name: str
    passed: int
    total: int


class QevalCompare(Result):
    """``qeval compare --json``: kept (both pass), broke (A passes, B fails), fixed (the reverse), both failed,
    the exact two-sided McNemar p on the discordant pairs, and the tasks only one run holds (``left_out``)."""

    a: QevalSide
    b: QevalSide
    kept: int
    broke: int
    fixed: int
    both_failed: int
    p_value: float
    kept_ids: list[str]
    broke_ids: list[str]
    fixed_ids: list[str]
    both_failed_ids: list[str]
    left_out: int
