"""Greedy agreement: do two lanes say the same thing at temperature 0?

The write-up's substitute for a KL divergence: the same raw-text prompts,
temperature 0, ``--tokens`` tokens each, on both lanes; per prompt the index
of the first word where the two continuations differ (words = whitespace-
separated).  A quantized lane typically diverges within a few words on
open-ended text; that is a signature, not a quality verdict.

Summary definitions (docs/AGREE.md):

* ``exact`` -- continuations identical word for word (whitespace between words aside).
* ``first_divergence_word`` -- 0-based index of the first differing word;
  for an exact match it is the number of words compared (they agree on all).
* ``median_first_divergence_word`` -- median of that over all prompts.
* ``agree_ge_10_words`` -- prompts whose first divergence is at word 10 or later (exact included).
* ``diverge_at_0`` -- prompts that differ from the first word.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import msgspec

from lanemon.measure import metrics
from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.records import RequestRecord, assemble, reiterable
from lanemon.results.agree import AgreeConfig, AgreePrompt, AgreeResult, AgreeSummary
from lanemon.workloads.harness import Harness

HISTOGRAM_BUCKETS = (("0", 0, 0), ("1", 1, 1), ("2", 2, 2), ("3-4", 3, 4), ("5-9", 5, 9), ("10-19", 10, 19),
                     ("20+", 20, 10**9))


def load_agree_prompts(path: Path | None = None) -> list[str]:
    """The shipped 40 prompts (or a user file: one prompt per line, # comments)."""
    if path is None:
        text = resources.files("lanemon.workloads").joinpath("data/agree-v1.txt").read_text(encoding="utf-8")
    else:
        from lanemon.config import read_user_text

        text = read_user_text(path, "--prompt-file")  # bounded, one-line ConfigError
    prompts = [line.rstrip("\n") for line in text.splitlines()]
    return [p for p in prompts if p.strip() and not p.lstrip().startswith("#")]


def first_divergence_word(a: str, b: str) -> tuple[int, bool]:
    """(index of the first differing word, exact?) -- see the module docstring."""
    wa, wb = a.split(), b.split()
    for i, (x, y) in enumerate(zip(wa, wb)):
        if x != y:
            return i, False
    if len(wa) == len(wb):
        return len(wa), True
    return min(len(wa), len(wb)), False


def summarize_agreement(divergences: Sequence[tuple[int, bool]]) -> AgreeSummary:
    words = [d for d, _ in divergences]
    hist = {label: 0 for label, _, _ in HISTOGRAM_BUCKETS}
    hist["exact"] = 0
    for d, exact in divergences:
        if exact:
            hist["exact"] += 1
            continue
        for label, lo, hi in HISTOGRAM_BUCKETS:
            if lo <= d <= hi:
                hist[label] += 1
                break
    return AgreeSummary(
        total=len(divergences),
        exact=sum(1 for _, e in divergences if e),
        median_first_divergence_word=metrics.median(words),
        agree_ge_10_words=sum(1 for d, e in divergences if e or d >= 10),
        diverge_at_0=sum(1 for d, e in divergences if d == 0 and not e),
        histogram=hist,
        histogram_share={k: round(v / len(divergences), 4) if divergences else None for k, v in hist.items()},
    )


def agree_config(raw: Any) -> AgreeConfig:
    """The start mark's ``config`` (from a recording: untrusted) as :class:`AgreeConfig`: keys it does not name
    left out; empty when it is not an object of the right types."""
    if not isinstance(raw, dict):
        return AgreeConfig()
    try:
        return msgspec.convert({k: v for k, v in raw.items() if k in AgreeConfig.__struct_fields__}, AgreeConfig,
                               strict=False)
    except msgspec.ValidationError:
        return AgreeConfig()


def agree_results(events: Iterable[Event]) -> AgreeResult:
    """The ``lanemon agree`` result (what ``--json`` prints, with the texts) from recorded events alone."""
    events = reiterable(events)
    config = AgreeConfig()
    interrupted = False
    for ev in events:
        if ev.kind == schema.MARK and ev.data.get("bench") == "agree":
            if ev.data.get("phase") == "start":
                config = agree_config(ev.data.get("config"))
            elif ev.data.get("phase") == "end":
                interrupted = bool(ev.data.get("interrupted"))
    recs = [r for r in assemble(events) if r.meta.get("bench") == "agree"]
    lanes = config.lanes or sorted({r.lane for r in recs if r.lane})
    by_prompt: dict[int, dict[str, RequestRecord]] = {}
    for r in recs:
        by_prompt.setdefault(int(r.meta.get("prompt_id", -1)), {})[r.lane] = r
    rows = []
    errors = 0
    divergences = []
    if len(lanes) >= 2:
        a, b = lanes[0], lanes[1]
        for pid in sorted(by_prompt):
            pair = by_prompt[pid]
            ra, rb = pair.get(a), pair.get(b)
            if ra is None or rb is None or not ra.ok or not rb.ok:
                errors += 1
                msg = next((r.error.message for r in (ra, rb) if r is not None and r.error), "missing")
                rows.append(AgreePrompt(id=pid, error=str(msg or "failed")))
                continue
            d, exact = first_divergence_word(ra.text, rb.text)
            divergences.append((d, exact))
            rows.append(AgreePrompt(id=pid, first_divergence_word=d, exact=exact, a_words=len(ra.text.split()),
                                    b_words=len(rb.text.split()), a_text=ra.text, b_text=rb.text))
    return AgreeResult(bench="agree", lanes=list(lanes[:2]), **msgspec.structs.asdict(summarize_agreement(divergences)),
                       errors=errors, prompts=rows, interrupted=interrupted, config=config)


def public(result: AgreeResult) -> AgreeResult:
    """What ``agree --json`` prints: the per-prompt rows without the full texts (they are in the recording)."""
    return msgspec.structs.replace(result, prompts=[msgspec.structs.replace(row, a_text=None, b_text=None)
                                                    for row in result.prompts])


async def run_agree(harness: Harness, prompts: Sequence[str], *, tokens: int = 128, lanes: Sequence[str] | None = None,
                    progress=None) -> None:
    """Send every prompt to both lanes at the same instant; everything lands in harness.events."""
    names = list(lanes or harness.names)[:2]
    config = {"lanes": names, "prompts": len(prompts), "tokens": tokens, "temperature": 0, "endpoint": "completions"}
    harness.mark("agree", bench="agree", phase="start", config=config)
    interrupted = True
    try:
        for i, prompt in enumerate(prompts):
            await asyncio.gather(*(
                harness.request(lane, "completions", prompt=prompt, max_tokens=tokens, extra={"temperature": 0},
                                purpose="agree", meta={"bench": "agree", "prompt_id": i})
                for lane in names
            ))
            if progress is not None:
                progress(i + 1, len(prompts))
        interrupted = False
    finally:
        harness.mark("agree end", bench="agree", phase="end", interrupted=interrupted)
