"""Run the qeval tasks on one lane; read the recorded scores back; rescore a recording on request.

:func:`run_qeval` sends every task as one streaming ``/chat/completions``
request at temperature 0 through a :class:`~lanemon.workloads.harness.Harness`
(so it is recorded like every workload: ``meta={"bench": "qeval", "task": ID,
"kind": KIND}`` on each request, ``mark`` events "qeval start" / "qeval end"),
scores each reply once, as it finishes (code in the OS sandbox), and records
the verdict as a ``mark`` event ``{"label": "qeval score", "bench": "qeval",
"task": ID, "req": REQ, "passed": BOOL, "reason": TEXT}`` (or ``"skipped":
true`` with the reason, when no sandbox works for a code task).

:func:`qeval_results` rebuilds the run's JSON from a recording **without
running anything**: it reads the recorded verdicts (so ``report``,
``compare``, ``replay`` and ``export`` never execute a recording's code).
A reply with no recorded verdict (a recording made before verdicts were
recorded, or a run interrupted between reply and score) is listed under
``"skipped"`` with a reason that names ``lanemon qeval rescore``.

:func:`rescore` is that explicit command's engine: it scores the recorded
replies again (code through the same sandbox) and returns the result and the
verdict marks, which ``qeval rescore --write`` adds to a copy of the recording.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.records import Assembler, RequestRecord

from .bank import Task, load_bank
from .sandbox import UNSAFE_FLAG, SandboxLimits, SandboxUnavailable
from .scorers import score

__all__ = ["run_qeval", "qeval_results", "rescore", "score_record", "task_entry", "build_result", "BENCH",
           "MAX_TOKENS", "SCORE_LABEL", "NOT_SCORED"]

BENCH = "qeval"
MAX_TOKENS = 2048
SCORE_LABEL = "qeval score"
NOT_SCORED = ("not scored: the recording holds no verdict for this reply (recorded by an older lanemon, or "
              "interrupted before scoring); `lanemon qeval rescore RECORDING` scores it in the sandbox")
MAX_REASON = 500


def score_record(task: Task, rec: RequestRecord, limits: SandboxLimits | None) -> dict[str, Any]:
    """The verdict for one reply: ``{"passed", "reason"}`` or ``{"skipped": True, "reason"}``."""
    if rec.error is not None:
        return {"passed": False,
                "reason": f"request failed: {rec.error.get('message') or rec.error.get('cls') or 'error'}"[:MAX_REASON]}
    if getattr(rec, "outcome", None) == "truncated":  # not a clean completion: never scored as one
        return {"passed": False, "reason": "request failed: the stream ended without a finish_reason (truncated)"}
    try:
        passed, reason = score(task, rec.text, limits)
    except SandboxUnavailable as exc:
        return {"skipped": True, "reason": f"skipped: {exc}; pass {UNSAFE_FLAG} to run model code anyway"}
    if not passed and rec.finish_reason == "length":
        reason += " (reply cut at max_tokens)"
    verdict: dict[str, Any] = {"passed": passed, "reason": reason[:MAX_REASON]}
    if task.kind == "code" and limits is not None and limits.unsafe_no_sandbox:
        from .sandbox import sandbox_problem

        if sandbox_problem(limits) is not None:
            verdict["sandbox"] = "none"  # ran without a sandbox, as the user asked
    return verdict


def task_entry(task: Task, rec: RequestRecord, passed: bool, reason: str) -> dict[str, Any]:
    seconds = None
    if rec.sent_ns is not None and rec.end_ns is not None:
        seconds = round((rec.end_ns - rec.sent_ns) / 1e9, 6)
    return {"passed": passed, "reason": reason, "kind": task.kind, "prompt_tokens": rec.prompt_tokens,
            "completion_tokens": rec.completion_tokens, "seconds": seconds}


def build_result(lane: str | None, model: str | None, entries: dict[str, dict[str, Any]],
                 bank: dict[str, Task] | None = None, skipped: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``qeval run`` JSON: tasks in bank order (unknown ids last, in the given order).

    ``skipped`` (task id -> reason) appears only when some task was not scored; those tasks are in neither
    ``passed`` nor ``total``.
    """
    bank = bank if bank is not None else load_bank()
    order = [tid for tid in bank if tid in entries] + [tid for tid in entries if tid not in bank]
    tasks = {tid: entries[tid] for tid in order}
    out = {"lane": lane, "model": model, "passed": sum(1 for e in tasks.values() if e["passed"]),
           "total": len(tasks), "tasks": tasks}
    if skipped:
        out["skipped"] = {tid: skipped[tid] for tid in [t for t in bank if t in skipped] +
                          [t for t in skipped if t not in bank]}
    return out


async def run_qeval(harness, lane: str, tasks: list[Task], *, concurrency: int = 1,
                    limits: SandboxLimits | None = None, max_tokens: int = MAX_TOKENS,
                    entries: dict[str, dict[str, Any]] | None = None,
                    skipped: dict[str, str] | None = None,
                    on_result: Callable[[Task, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run ``tasks`` on ``lane``; returns the result dict (also fills ``entries``/``skipped`` as tasks finish).

    Every verdict is recorded as a "qeval score" mark as soon as it is known.
    """
    entries = entries if entries is not None else {}
    skipped = skipped if skipped is not None else {}
    sem = asyncio.Semaphore(max(1, concurrency))
    harness.mark("qeval start", lane, bench=BENCH, tasks=len(tasks))

    async def one(task: Task) -> None:
        async with sem:
            rec = await harness.request(
                lane, "chat", messages=[{"role": "user", "content": task.prompt}], max_tokens=max_tokens,
                extra={"temperature": 0}, purpose="qeval", meta={"bench": BENCH, "task": task.id, "kind": task.kind},
            )
        verdict = await asyncio.to_thread(score_record, task, rec, limits)
        redactor = getattr(harness.clients.get(lane), "redactor", None)  # the reason quotes what the model wrote
        if redactor is not None:
            verdict["reason"] = redactor.text(verdict["reason"], MAX_REASON)
        harness.mark(SCORE_LABEL, lane, bench=BENCH, task=task.id, req=rec.req, **verdict)
        if verdict.get("skipped"):
            skipped[task.id] = verdict["reason"]
            entry = {"skipped": True, "reason": verdict["reason"], "kind": task.kind}
        else:
            entries[task.id] = entry = task_entry(task, rec, verdict["passed"], verdict["reason"])
        if on_result is not None:
            on_result(task, entry)

    await asyncio.gather(*(one(t) for t in tasks))
    result = build_result(lane, harness.clients[lane].model, entries, skipped=skipped)
    harness.mark("qeval end", lane, bench=BENCH, passed=result["passed"], total=result["total"],
                 **({"skipped": len(skipped)} if skipped else {}))
    return result


def _records(events: Iterable[Event], lane: str | None, bank: dict[str, Task]
             ) -> tuple[str | None, dict[str, RequestRecord], dict[str, dict[str, Any]]]:
    """(lane, task id -> the last finished reply, request id -> its recorded verdict)."""
    asm = Assembler()
    latest: dict[str, RequestRecord] = {}
    verdicts: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev.kind == schema.MARK:
            d = ev.data
            if d.get("label") == SCORE_LABEL and d.get("bench") == BENCH and isinstance(d.get("req"), str):
                verdicts[d["req"]] = d
            continue
        if ev.kind not in schema.REQUEST_KINDS:
            continue
        rec = asm.apply(ev)
        if rec is not None and rec.meta.get("bench") == BENCH and rec.meta.get("task") in bank:
            if lane is None:
                lane = rec.lane
            if rec.lane == lane:
                latest[rec.meta["task"]] = rec  # a task sent twice: the last finished reply counts
    return lane, latest, verdicts


def _valid(verdict: dict[str, Any] | None) -> dict[str, Any] | None:
    """A recorded verdict with the right types (recordings are untrusted), else None."""
    if not verdict or not isinstance(verdict.get("reason"), str):
        return None
    if verdict.get("skipped") is True:
        return {"skipped": True, "reason": verdict["reason"][:MAX_REASON]}
    if type(verdict.get("passed")) is bool:
        return {"passed": verdict["passed"], "reason": verdict["reason"][:MAX_REASON]}
    return None


def qeval_results(events: Iterable[Event], lane: str | None = None) -> dict[str, Any]:
    """The ``qeval run`` JSON rebuilt from a recording's recorded verdicts -- nothing is executed.

    ``lane``: which lane's qeval requests to use (default: the first lane that has any).
    Requests for task ids the bank does not know are skipped.
    """
    bank = load_bank()
    lane, latest, verdicts = _records(events, lane, bank)
    entries: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for tid, rec in latest.items():
        verdict = _valid(verdicts.get(rec.req))
        if verdict is None:
            skipped[tid] = NOT_SCORED
        elif verdict.get("skipped"):
            skipped[tid] = verdict["reason"]
        else:
            entries[tid] = task_entry(bank[tid], rec, verdict["passed"], verdict["reason"])
    model = next((r.model for r in latest.values() if r.model), None)
    return build_result(lane, model, entries, bank, skipped)


def rescore(events: Iterable[Event], lane: str | None = None, limits: SandboxLimits | None = None,
            workers: int = 2) -> tuple[dict[str, Any], list[tuple[str, str, dict[str, Any]]]]:
    """Score a recording's replies again (code through the sandbox): ``(result, [(lane, req, verdict)])``.

    Only for the explicit ``lanemon qeval rescore``; nothing that merely reads a recording calls this.
    """
    bank = load_bank()
    lane, latest, _ = _records(events, lane, bank)
    recs = list(latest.values())
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        verdicts = list(pool.map(lambda r: score_record(bank[r.meta["task"]], r, limits), recs))
    entries: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    for rec, verdict in zip(recs, verdicts):
        tid = rec.meta["task"]
        if verdict.get("skipped"):
            skipped[tid] = verdict["reason"]
        else:
            entries[tid] = task_entry(bank[tid], rec, verdict["passed"], verdict["reason"])
    model = next((r.model for r in recs if r.model), None)
    marks = [(rec.lane, rec.req, {"task": rec.meta["task"], **v}) for rec, v in zip(recs, verdicts)]
    return build_result(lane, model, entries, bank, skipped), marks
