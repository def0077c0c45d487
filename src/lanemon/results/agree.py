"""``lanemon agree``: one prompt and the whole result.

Part of the typed results (``lanemon.results``): see the package docstring.  Built by
:func:`lanemon.workloads.agree.agree_results` (from events alone); docs/AGREE.md says what every key means."""

from __future__ import annotations

from typing import Literal

from lanemon.results.common import Num, Result


class AgreePrompt(Result):
    """One prompt: where the two continuations first differ, or why it was not compared (``error``).  ``a_text`` /
    ``b_text`` are in the report's analysis, not in ``agree --json`` (the recording holds them)."""

    id: int
    first_divergence_word: int | None = None
    exact: bool | None = None
    a_words: int | None = None
    b_words: int | None = None
    a_text: str | None = None
    b_text: str | None = None
    error: str | None = None


class AgreeConfig(Result):
    """What the run was asked (the start mark's ``config``)."""

    lanes: list[str] | None = None
    prompts: int | None = None
    tokens: int | None = None
    temperature: Num = None
    endpoint: str | None = None


class AgreeSummary(Result):
    """Over the prompts compared (docs/AGREE.md): exact matches, the median first differing word, prompts agreeing
    for ten words or more, prompts differing from the first word, and the histogram of first differing words (each bucket's prompts and
    share).  The figures are the catalogue's ``agree_*`` entries (measure/catalogue.py)."""

    total: int
    exact: int
    median_first_divergence_word: Num
    agree_ge_10_words: int
    diverge_at_0: int
    histogram: dict[str, int]
    histogram_share: dict[str, Num]
    """Each bucket's prompts / the prompts compared (``total``), rounded to 4 places; None when none was compared."""


class AgreeResult(AgreeSummary):
    """``lanemon agree --json`` (workloads/agree.py): where two lanes' greedy replies first differ, by word."""

    bench: Literal["agree"]
    lanes: list[str]
    errors: int
    prompts: list[AgreePrompt]
    interrupted: bool
    config: AgreeConfig
