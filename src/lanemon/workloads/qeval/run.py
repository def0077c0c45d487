"""Run the qeval tasks on one lane, and rebuild the same result from a recording.

:func:`run_qeval` sends every task as one streaming ``/chat/completions``
request at temperature 0 through a :class:`~lanemon.workloads.harness.Harness`
(so it is recorded like every workload: ``meta={"bench": "qeval", "task": ID,
"kind": KIND}`` on each request, ``mark`` events "qeval start" / "qeval end"),
and scores each reply as it finishes.  :func:`qeval_results` re-scores the
same replies from recorded events (the client records every token's text), so
``qeval_results(harness.events)`` equals the run's JSON.
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
from .sandbox import SandboxLimits
from .scorers import score

__all__ = ["run_qeval", "qeval_results", "task_entry", "build_result", "BENCH", "MAX_TOKENS"]

BENCH = "qeval"
MAX_TOKENS = 2048


def _score_record(task: Task, rec: RequestRecord, limits: SandboxLimits | None) -> tuple[bool, str]:
    if rec.error is not None:
        return False, f"request failed: {rec.error.get('message') or rec.error.get('cls') or 'error'}"
    passed, reason = score(task, rec.text, limits)
    if not passed and rec.finish_reason == "length":
        reason += " (reply cut at max_tokens)"
    return passed, reason


def task_entry(task: Task, rec: RequestRecord, passed: bool, reason: str) -> dict[str, Any]:
    seconds = None
    if rec.sent_ns is not None and rec.end_ns is not None:
        seconds = round((rec.end_ns - rec.sent_ns) / 1e9, 6)
    return {"passed": passed, "reason": reason, "kind": task.kind, "prompt_tokens": rec.prompt_tokens,
            "completion_tokens": rec.completion_tokens, "seconds": seconds}


def build_result(lane: str | None, model: str | None, entries: dict[str, dict[str, Any]],
                 bank: dict[str, Task] | None = None) -> dict[str, Any]:
    """The ``qeval run`` JSON: tasks in bank order (unknown ids last, in the given order)."""
    bank = bank if bank is not None else load_bank()
    order = [tid for tid in bank if tid in entries] + [tid for tid in entries if tid not in bank]
    tasks = {tid: entries[tid] for tid in order}
    return {"lane": lane, "model": model, "passed": sum(1 for e in tasks.values() if e["passed"]),
            "total": len(tasks), "tasks": tasks}


async def run_qeval(harness, lane: str, tasks: list[Task], *, concurrency: int = 1,
                    limits: SandboxLimits | None = None, max_tokens: int = MAX_TOKENS,
                    entries: dict[str, dict[str, Any]] | None = None,
                    on_result: Callable[[Task, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run ``tasks`` on ``lane``; returns the result dict (also fills ``entries`` as tasks finish)."""
    entries = entries if entries is not None else {}
    sem = asyncio.Semaphore(max(1, concurrency))
    harness.mark("qeval start", lane, bench=BENCH, tasks=len(tasks))

    async def one(task: Task) -> None:
        async with sem:
            rec = await harness.request(
                lane, "chat", messages=[{"role": "user", "content": task.prompt}], max_tokens=max_tokens,
                extra={"temperature": 0}, purpose="qeval", meta={"bench": BENCH, "task": task.id, "kind": task.kind},
            )
        passed, reason = await asyncio.to_thread(_score_record, task, rec, limits)
        entries[task.id] = task_entry(task, rec, passed, reason)
        if on_result is not None:
            on_result(task, entries[task.id])

    await asyncio.gather(*(one(t) for t in tasks))
    result = build_result(lane, harness.clients[lane].model, entries)
    harness.mark("qeval end", lane, bench=BENCH, passed=result["passed"], total=result["total"])
    return result


def qeval_results(events: Iterable[Event], lane: str | None = None, limits: SandboxLimits | None = None,
                  workers: int = 4) -> dict[str, Any]:
    """The ``qeval run`` JSON rebuilt from recorded events (re-scored from the recorded reply text).

    ``lane``: which lane's qeval requests to use (default: the first lane that has any).
    Requests for task ids the bank does not know are skipped.
    """
    bank = load_bank()
    asm = Assembler()
    records: list[RequestRecord] = []
    for ev in events:
        if ev.kind not in schema.REQUEST_KINDS:
            continue
        rec = asm.apply(ev)
        if rec is not None and rec.meta.get("bench") == BENCH and rec.meta.get("task") in bank:
            if lane is None:
                lane = rec.lane
            if rec.lane == lane:
                records.append(rec)
    latest: dict[str, RequestRecord] = {}
    for rec in records:  # a task sent twice: the last finished reply counts
        latest[rec.meta["task"]] = rec
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        scored = list(pool.map(lambda r: _score_record(bank[r.meta["task"]], r, limits), latest.values()))
    entries = {rec.meta["task"]: task_entry(bank[rec.meta["task"]], rec, passed, reason)
               for rec, (passed, reason) in zip(latest.values(), scored)}
    model = next((r.model for r in latest.values() if r.model), None)
    return build_result(lane, model, entries, bank)
