"""``bench needles``: one run, a prompt length, a lane, the whole result.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

from typing import Literal

from lanemon.results.common import UNSET, BenchConfig, Num, Obj, Opt, Result, RunState, Spread


class NeedleRun(Result, kw_only=True):
    """One rep of a length: was its key found, what the lane answered (None when the request failed: ``error``)."""

    rep: int
    found: bool | None
    key: str
    answer: str | None
    depth: Num
    prompt_tokens: int | None
    ttft_s: Num
    prefill_tok_s: Num
    error: str | None


class NeedleCell(Spread, kw_only=True):
    """A prompt length of ``bench needles`` (docs/JSON.md): the headline run (the first not found, else the
    first), whether every answered run found its key, the count found, every run.  A length beyond the lane's
    context was not sent: ``skipped`` with its ``error`` and counts of 0, nothing else."""

    found: bool | None
    error: str | None
    found_count: int
    runs_count: int
    key: str | Opt = UNSET
    answer: str | None | Opt = UNSET
    depth: Num | Opt = UNSET
    prompt_tokens: int | None | Opt = UNSET
    ttft_s: Num | Opt = UNSET
    prefill_tok_s: Num | Opt = UNSET
    runs: list[NeedleRun] | Opt = UNSET
    skipped: bool | None = None


class NeedleLane(Result, kw_only=True):
    lengths: dict[str, NeedleCell]
    error: str | None = None
    server: Obj = None


class NeedleResult(RunState, kw_only=True):
    """``bench needles --json`` (docs/JSON.md)."""

    bench: Literal["needles"]
    lanes: dict[str, NeedleLane]
    config: BenchConfig
