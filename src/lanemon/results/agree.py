"""``lanemon agree``: one prompt and the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Literal

from lanemon.results.common import Num, Obj, Result


class AgreePrompt(Result):
    id: int
    first_divergence_word: int | None = None
    exact: bool | None = None
    a_words: int | None = None
    b_words: int | None = None
    a_text: str | None = None
    b_text: str | None = None
    error: str | None = None


class AgreeResult(Result):
    """``lanemon agree --json`` (workloads/agree.py): where two lanes' greedy replies first differ, by word."""

    bench: Literal["agree"]
    lanes: list[str]
    total: int
    exact: int
    median_first_divergence_word: Num = None
    agree_ge_10_words: int | None = None
    diverge_at_0: int | None = None
    histogram: dict[str, int] = {}
    errors: int | None = None
    prompts: list[AgreePrompt] = []
    interrupted: bool = False
    config: Obj = None
