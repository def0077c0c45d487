"""``bench needles``: one run, a prompt length, a lane, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Literal

from lanemon.results.common import BenchConfig, Num, Obj, Result, RunState, Spread


class NeedleRun(Result):
    rep: int | None = None
    found: bool | None = None
    key: str | None = None
    answer: str | None = None
    depth: Num = None
    prompt_tokens: int | None = None
    ttft_s: Num = None
    prefill_tok_s: Num = None
    error: str | None = None


class NeedleCell(Spread):
    """A prompt length of ``bench needles`` (docs/JSON.md): the headline run, the count found, every run."""

    found: bool | None = None
    key: str | None = None
    answer: str | None = None
    depth: Num = None
    prompt_tokens: int | None = None
    ttft_s: Num = None
    prefill_tok_s: Num = None
    error: str | None = None
    found_count: int | None = None
    runs_count: int | None = None
    runs: list[NeedleRun] = []


class NeedleLane(Result):
    lengths: dict[str, NeedleCell] = {}
    server: Obj = None


class NeedleResult(RunState):
    """``bench needles --json`` (docs/JSON.md)."""

    bench: Literal["needles"]
    lanes: dict[str, NeedleLane]
    config: BenchConfig
