"""Teacher-forced logprob divergence between lanes (``lanemon kl``).

Method (docs/AGREE.md):

1. The reference lane continues each prompt greedily (temperature 0): that
   text is the shared teacher.
2. Every lane -- the reference included -- is asked for the log-probabilities
   of ``prompt + teacher`` with ``echo: true, logprobs: k, max_tokens: 1`` on
   ``/v1/completions``: its top-k distribution at every teacher position.
3. Per position, :func:`kl_topk` estimates KL(reference || lane) from the two
   top-k lists; the lane's figure is the mean over all aligned positions
   (p50 and p99 too).

A lane that refuses (HTTP 4xx: logprobs or prompt logprobs not supported) is
reported as ``not_exposed`` with the server's own message -- a clean,
recorded outcome, not a failure of lanemon.

Estimator (``topk_tail``): with reference top-k tokens S (probabilities p_i)
and tail mass p_tail = 1 - sum(p_i), and the lane's probabilities q_i for
i in S taken from its own top-k (a token of S missing from the lane's top-k
gets an equal share of the lane's leftover mass, capped at the lane's
smallest listed probability), and q_tail = 1 - sum(q_i over S):

    KL ~= sum_{i in S} p_i log(p_i / q_i) + p_tail log(p_tail / q_tail)

It is exact when both distributions put all their mass on S (the tail bucket
then vanishes), and a lower bound of the full-vocabulary KL otherwise (the
tail is merged into one bucket; by the log-sum inequality merging never
raises KL).  Probabilities are floored at 1e-10.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from lanemon.measure import metrics
from lanemon import events as schema
from lanemon.events import Event
from lanemon.results.kl import KlConfig, KlLane, KlResult
from lanemon.workloads.harness import Harness

FLOOR = 1e-10
EXIT_NOT_EXPOSED = 3


def kl_topk(ref_top: Mapping[str, float], lane_top: Mapping[str, float]) -> float:
    """KL(reference || lane) at one position from two top-k logprob maps (natural log)."""
    if not ref_top:
        raise ValueError("reference top-k is empty")
    p = {t: math.exp(lp) for t, lp in ref_top.items()}
    q_listed = {t: math.exp(lp) for t, lp in lane_top.items()}
    missing = [t for t in p if t not in q_listed]
    q_left = max(0.0, 1.0 - sum(q_listed.values()))
    q: dict[str, float] = {}
    for t in p:
        if t in q_listed:
            q[t] = q_listed[t]
    if missing:
        cap = min(q_listed.values()) if q_listed else 1.0
        share = q_left / len(missing) if q_left > 0 else FLOOR
        for t in missing:
            q[t] = min(cap, share)
    p_tail = max(0.0, 1.0 - sum(p.values()))
    q_tail = max(0.0, 1.0 - sum(q.values()))
    kl = 0.0
    for t, pt in p.items():
        if pt > 0:
            kl += pt * math.log(max(pt, FLOOR) / max(q[t], FLOOR))
    if p_tail > FLOOR:
        kl += p_tail * math.log(max(p_tail, FLOOR) / max(q_tail, FLOOR))
    return max(0.0, kl)


def positions_from_echo(choice: Mapping[str, Any], start_offset: int) -> dict[int, tuple[str, dict[str, float]]]:
    """{text offset: (token, top-k map)} for the echoed tokens at or after ``start_offset``."""
    lp = choice.get("logprobs") or {}
    offsets = lp.get("text_offset") or []
    tokens = lp.get("tokens") or []
    tops = lp.get("top_logprobs") or []
    out: dict[int, tuple[str, dict[str, float]]] = {}
    for off, tok, top in zip(offsets, tokens, tops):
        if off is None or off < start_offset or not isinstance(top, dict) or not top:
            continue
        out[int(off)] = (tok, {str(k): float(v) for k, v in top.items() if v is not None})
    return out


def lane_divergence(ref: Mapping[int, tuple[str, dict[str, float]]],
                    lane: Mapping[int, tuple[str, dict[str, float]]]) -> list[float]:
    """Per-position KL over positions where both lanes scored the same teacher token."""
    out = []
    for off, (tok, ref_top) in ref.items():
        other = lane.get(off)
        if other is None or other[0] != tok:
            continue
        out.append(kl_topk(ref_top, other[1]))
    return out


def kl_config(raw: Any) -> KlConfig:
    """The start mark's ``config`` (from a recording: untrusted) as :class:`KlConfig`: keys it does not name left
    out; empty when it is not an object of the right types."""
    if not isinstance(raw, dict):
        return KlConfig()
    try:
        return msgspec.convert({k: v for k, v in raw.items() if k in KlConfig.__struct_fields__}, KlConfig,
                               strict=False)
    except msgspec.ValidationError:
        return KlConfig()


def _text(value: Any) -> str | None:
    """A recorded ``status`` or ``message`` (untrusted): a string, else None."""
    return value if isinstance(value, str) else None


def kl_results(events: Iterable[Event]) -> KlResult:
    """The ``lanemon kl`` result (what ``--json`` prints) from recorded events (the per-lane outcome marks)."""
    config = KlConfig()
    outcomes: dict[str, tuple[str | None, str | None]] = {}
    per_lane_values: dict[str, list[float]] = {}
    interrupted = False
    for ev in events:
        if ev.kind != schema.MARK or ev.data.get("bench") != "kl":
            continue
        d = ev.data
        if d.get("phase") == "start":
            config = kl_config(d.get("config"))
        elif d.get("phase") == "end":
            interrupted = bool(d.get("interrupted"))
        elif d.get("phase") == "lane" and ev.lane:
            outcomes[ev.lane] = (_text(d.get("status")), _text(d.get("message")))
        elif d.get("phase") == "prompt" and ev.lane:
            per_lane_values.setdefault(ev.lane, []).extend(d.get("kl") or [])
    lanes = {}
    for name, (status, message) in outcomes.items():
        s = metrics.summarize(per_lane_values.get(name, []))
        ok = status == "ok" and s.n
        lanes[name] = KlLane(status=status, message=message, kl=s.mean if ok else None,
                             kl_p50=s.p50 if ok else None, kl_p99=s.p99 if ok else None, positions=s.n)
    return KlResult(bench="kl", reference=config.reference, estimator="topk_tail", k=config.k, lanes=lanes,
                    interrupted=interrupted, config=config)


async def run_kl(harness: Harness, prompts: Sequence[str], *, reference: str, tokens: int = 32, k: int = 5,
                 progress=None) -> None:
    """Run the teacher-forced comparison; outcomes are MARK events on the harness bus."""
    names = harness.names
    if reference not in names:
        raise ValueError(f"reference lane {reference!r} is not one of {', '.join(names)}")
    config = {"reference": reference, "lanes": names, "prompts": len(prompts), "tokens": tokens, "k": k}
    harness.mark("kl", bench="kl", phase="start", config=config)
    status: dict[str, tuple[str, str | None]] = {}
    interrupted = True
    try:
        for i, prompt in enumerate(prompts):
            # 1. the teacher text from the reference lane (greedy)
            rec = await harness.request(reference, "completions", prompt=prompt, max_tokens=tokens,
                                        extra={"temperature": 0}, purpose="kl",
                                        meta={"bench": "kl", "prompt_id": i, "run": "teacher"})
            if rec.error:
                status.setdefault(reference, ("error", rec.error.message))
                continue
            text = prompt + rec.text
            # 2. teacher-forced logprobs on every lane still answering
            scored: dict[str, dict[int, tuple[str, dict[str, float]]]] = {}
            for lane in names:
                if lane in status and status[lane][0] != "ok":
                    continue
                client = harness.clients[lane]
                body = client.build_body("completions", prompt=text, max_tokens=1,
                                         extra={"temperature": 0, "echo": True, "logprobs": k})
                body["stream"] = False
                body.pop("stream_options", None)
                code, obj, _secs, err = await client.post_json("completions", body)
                if err is not None:
                    kind = "not_exposed" if code is not None and 400 <= code < 500 else "error"
                    status[lane] = (kind, err)
                    continue
                try:
                    choice = obj["choices"][0]
                except (KeyError, IndexError, TypeError):
                    status[lane] = ("error", "answer has no choices[0]")
                    continue
                pos = positions_from_echo(choice, len(prompt))
                if not pos:
                    status[lane] = ("not_exposed", "the lane answered without prompt logprobs")
                    continue
                status.setdefault(lane, ("ok", None))
                scored[lane] = pos
            ref_pos = scored.get(reference)
            if ref_pos is not None:
                for lane, pos in scored.items():
                    if lane != reference:
                        harness.mark(f"kl {lane} prompt {i}", lane=lane, bench="kl", phase="prompt", prompt_id=i,
                                     kl=lane_divergence(ref_pos, pos))
            if progress is not None:
                progress(i + 1, len(prompts))
        interrupted = False
    finally:
        for lane in names:
            st, msg = status.get(lane, ("ok", None))
            if lane == reference and st == "ok":
                msg = "reference"
            elif lane != reference and status.get(reference, ("ok",))[0] != "ok" and st == "ok":
                st, msg = "skipped", "the reference lane exposes no logprobs"
            harness.mark(f"kl {lane}", lane=lane, bench="kl", phase="lane", status=st, message=msg)
        harness.mark("kl end", bench="kl", phase="end", interrupted=interrupted)
