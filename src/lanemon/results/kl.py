"""``lanemon kl``: one lane against the reference, and the whole result.

Part of the typed results (``lanemon.results``): see the package docstring.  Built by
:func:`lanemon.workloads.kl.kl_results` (from events alone); docs/AGREE.md says what every key means."""

from __future__ import annotations

from typing import Literal

from lanemon.results.common import Num, Result


class KlLane(Result):
    """One lane: its outcome and, for a compared lane that exposed logprobs, KL(reference || lane) per token
    (nats): the mean, p50 and p99 over every aligned position."""

    status: str | None
    """``ok``, ``not_exposed`` (the lane refused prompt logprobs), ``skipped`` (the reference exposes none) or
    ``error``."""
    message: str | None
    """The server's own message for a lane that refused, ``"reference"`` for the reference lane."""
    kl: Num
    kl_p50: Num
    kl_p99: Num
    positions: int
    """Aligned teacher positions the figures are over (0 for the reference)."""


class KlConfig(Result):
    """What the run was asked (the start mark's ``config``)."""

    reference: str | None = None
    lanes: list[str] | None = None
    prompts: int | None = None
    tokens: int | None = None
    k: int | None = None


class KlResult(Result):
    """``lanemon kl --json`` (workloads/kl.py): teacher-forced logprob divergence of each lane from the reference."""

    bench: Literal["kl"]
    reference: str | None
    estimator: str
    """``topk_tail`` (docs/AGREE.md): a lower bound of the full-vocabulary KL."""
    k: int | None
    """Logprobs per position (``--top-k``)."""
    lanes: dict[str, KlLane]
    interrupted: bool
    config: KlConfig
