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
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import msgspec

from lanemon import events as schema
from lanemon.events import Event
from lanemon.measure.metrics import median, round_or_none
from lanemon.measure.records import Assembler, RequestRecord
from lanemon.results.qeval import QevalKind, QevalResult, QevalTask

from .bank import KINDS, Task, load_bank
from .sandbox import UNSAFE_FLAG, SandboxLimits, SandboxUnavailable
from .scorers import score

__all__ = ["run_qeval", "qeval_results", "rescore", "score_record", "task_entry", "build_result", "task_figures", "BENCH",
           "MAX_TOKENS", "SCORE_LABEL", "NOT_SCORED", "Verdict"]

BENCH = "qeval"
MAX_TOKENS = 2048
SCORE_LABEL = "qeval score"
NOT_SCORED = ("not scored: the recording holds no verdict for this reply (recorded by an older lanemon, or "
              "interrupted before scoring); `lanemon qeval rescore RECORDING` scores it in the sandbox")
MAX_REASON = 500


class Verdict(msgspec.Struct, kw_only=True):
    """One reply's verdict, as its "qeval score" mark records it: passed or not, with the reason; or skipped (no
    sandbox for a code task), with the reason; ``sandbox="none"`` when code ran without one, as the user asked."""

    reason: str
    passed: bool = False
    skipped: bool = False
    sandbox: str | None = None

    def mark_data(self) -> dict[str, bool | str]:
        """The mark's keys: ``{"passed", "reason"[, "sandbox"]}`` or ``{"skipped": true, "reason"}``."""
        if self.skipped:
            return {"skipped": True, "reason": self.reason}
        out: dict[str, bool | str] = {"passed": self.passed, "reason": self.reason}
        if self.sandbox is not None:
            out["sandbox"] = self.sandbox
        return out


def score_record(task: Task, rec: RequestRecord, limits: SandboxLimits | None) -> Verdict:
    """The verdict for one reply (scored now: code runs in the sandbox)."""
    if rec.error is not None:
        return Verdict(passed=False, reason=f"request failed: {rec.error.message or rec.error.cls or 'error'}"[:MAX_REASON])
    if getattr(rec, "outcome", None) == "truncated":  # not a clean completion: never scored as one
        return Verdict(passed=False, reason="request failed: the stream ended without a finish_reason (truncated)")
    try:
        passed, reason = score(task, rec.text, limits)
    except SandboxUnavailable as exc:
        return Verdict(skipped=True, reason=f"skipped: {exc}; pass {UNSAFE_FLAG} to run model code anyway")
    if not passed and rec.finish_reason == "length":
        reason += " (reply cut at max_tokens)"
    verdict = Verdict(passed=passed, reason=reason[:MAX_REASON])
    if task.kind == "code" and limits is not None and limits.unsafe_no_sandbox:
        from .sandbox import sandbox_problem

        if sandbox_problem(limits) is not None:
            verdict.sandbox = "none"  # ran without a sandbox, as the user asked
    return verdict


def task_entry(task: Task, rec: RequestRecord, passed: bool, reason: str) -> QevalTask:
    seconds = None
    if rec.sent_ns is not None and rec.end_ns is not None:
        seconds = round((rec.end_ns - rec.sent_ns) / 1e9, 6)
    return QevalTask(passed=passed, reason=reason, kind=task.kind, prompt_tokens=rec.prompt_tokens,
                     completion_tokens=rec.completion_tokens, seconds=seconds)


class TaskFigures(NamedTuple):
    """The run's figures over its scored tasks (``QevalResult``'s fields of the same names)."""

    median_s: float | None
    median_tok_s: float | None
    kinds: dict[str, QevalKind]


def _medians(tasks: Sequence[QevalTask]) -> tuple[float | None, float | None]:
    """The median seconds per task and the median completion tokens / seconds (E2E)."""
    secs = [t.seconds for t in tasks if t.seconds is not None]
    rates = [t.completion_tokens / t.seconds for t in tasks if t.completion_tokens and t.seconds]
    return round_or_none(median(secs), 6), round_or_none(median(rates), 2)


def task_figures(tasks: Iterable[QevalTask]) -> TaskFigures:
    """The figures every qeval surface shows (measure/catalogue.py, ``qeval_*``), over the scored ``tasks``: the
    median seconds per task and median reply rate (completion tokens / seconds, E2E), and per kind (the bank's
    kinds first, in their order) passed, total and the same two medians."""
    tasks = list(tasks)
    kinds = [k for k in KINDS if any(t.kind == k for t in tasks)]
    kinds += [k for k in dict.fromkeys(t.kind for t in tasks) if k not in kinds]
    by_kind = {}
    for k in kinds:
        of = [t for t in tasks if t.kind == k]
        med_s, med_tok_s = _medians(of)
        by_kind[k] = QevalKind(passed=sum(1 for t in of if t.passed), total=len(of), median_s=med_s,
                               median_tok_s=med_tok_s)
    return TaskFigures(*_medians(tasks), kinds=by_kind)


def build_result(lane: str | None, model: str | None, entries: dict[str, QevalTask],
                 bank: dict[str, Task] | None = None, skipped: dict[str, str] | None = None) -> QevalResult:
    """The ``qeval run`` result: tasks in bank order (unknown ids last, in the given order).

    ``skipped`` (task id -> reason) appears only when some task was not scored; those tasks are in neither
    ``passed`` nor ``total``.
    """
    bank = bank if bank is not None else load_bank()
    order = [tid for tid in bank if tid in entries] + [tid for tid in entries if tid not in bank]
    tasks = {tid: entries[tid] for tid in order}
    out = QevalResult(lane=lane, model=model, passed=sum(1 for e in tasks.values() if e.passed), total=len(tasks),
                      tasks=tasks, **task_figures(tasks.values())._asdict())
    if skipped:
        out.skipped = {tid: skipped[tid] for tid in [t for t in bank if t in skipped] +
                       [t for t in skipped if t not in bank]}
    return out


async def run_qeval(harness, lane: str, tasks: list[Task], *, concurrency: int = 1,
                    limits: SandboxLimits | None = None, max_tokens: int = MAX_TOKENS,
                    entries: dict[str, QevalTask] | None = None,
                    skipped: dict[str, str] | None = None,
                    on_result: Callable[[Task, Verdict], None] | None = None) -> QevalResult:
    """Run ``tasks`` on ``lane``; returns the result (also fills ``entries``/``skipped`` as tasks finish).

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
            verdict.reason = redactor.text(verdict.reason, MAX_REASON)
        harness.mark(SCORE_LABEL, lane, bench=BENCH, task=task.id, req=rec.req, **verdict.mark_data())
        if verdict.skipped:
            skipped[task.id] = verdict.reason
        else:
            entries[task.id] = task_entry(task, rec, verdict.passed, verdict.reason)
        if on_result is not None:
            on_result(task, verdict)

    await asyncio.gather(*(one(t) for t in tasks))
    result = build_result(lane, harness.clients[lane].model, entries, skipped=skipped)
    harness.mark("qeval end", lane, bench=BENCH, passed=result.passed, total=result.total,
                 **({"skipped": len(skipped)} if skipped else {}))
    return result


def _records(events: Iterable[Event], lane: str | None, bank: dict[str, Task]
             ) -> tuple[str | None, dict[str, RequestRecord], dict[str, Verdict]]:
    """(lane, task id -> the last finished reply, request id -> its recorded verdict, when it is a valid one)."""
    asm = Assembler()
    latest: dict[str, RequestRecord] = {}
    verdicts: dict[str, Verdict] = {}
    for ev in events:
        if ev.kind == schema.MARK:
            d = ev.data
            if d.get("label") == SCORE_LABEL and d.get("bench") == BENCH and isinstance(d.get("req"), str):
                verdict = _valid(d)
                if verdict is None:
                    verdicts.pop(d["req"], None)  # the last mark for a reply counts, even an invalid one
                else:
                    verdicts[d["req"]] = verdict
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


def _valid(mark: Mapping[str, object]) -> Verdict | None:
    """A recorded verdict mark's data with the right types (recordings are untrusted), else None."""
    reason = mark.get("reason")
    if not isinstance(reason, str):
        return None
    if mark.get("skipped") is True:
        return Verdict(skipped=True, reason=reason[:MAX_REASON])
    passed = mark.get("passed")
    if type(passed) is bool:
        return Verdict(passed=passed, reason=reason[:MAX_REASON])
    return None


def qeval_results(events: Iterable[Event], lane: str | None = None) -> QevalResult:
    """The ``qeval run`` result rebuilt from a recording's recorded verdicts -- nothing is executed.

    ``lane``: which lane's qeval requests to use (default: the first lane that has any).
    Requests for task ids the bank does not know are skipped.
    """
    bank = load_bank()
    lane, latest, verdicts = _records(events, lane, bank)
    entries: dict[str, QevalTask] = {}
    skipped: dict[str, str] = {}
    for tid, rec in latest.items():
        verdict = verdicts.get(rec.req)
        if verdict is None:
            skipped[tid] = NOT_SCORED
        elif verdict.skipped:
            skipped[tid] = verdict.reason
        else:
            entries[tid] = task_entry(bank[tid], rec, verdict.passed, verdict.reason)
    model = next((r.model for r in latest.values() if r.model), None)
    return build_result(lane, model, entries, bank, skipped)


def rescore(events: Iterable[Event], lane: str | None = None, limits: SandboxLimits | None = None,
            workers: int = 2) -> tuple[QevalResult, list[tuple[str, str, str, Verdict]]]:
    """Score a recording's replies again (code through the sandbox): ``(result, [(lane, req, task, verdict)])``.

    Only for the explicit ``lanemon qeval rescore``; nothing that merely reads a recording calls this.
    """
    bank = load_bank()
    lane, latest, _ = _records(events, lane, bank)
    recs = list(latest.values())
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        verdicts = list(pool.map(lambda r: score_record(bank[r.meta["task"]], r, limits), recs))
    entries: dict[str, QevalTask] = {}
    skipped: dict[str, str] = {}
    for rec, verdict in zip(recs, verdicts):
        tid = rec.meta["task"]
        if verdict.skipped:
            skipped[tid] = verdict.reason
        else:
            entries[tid] = task_entry(bank[tid], rec, verdict.passed, verdict.reason)
    model = next((r.model for r in recs if r.model), None)
    marks = [(rec.lane, rec.req, rec.meta["task"], v) for rec, v in zip(recs, verdicts)]
    return build_result(lane, model, entries, bank, skipped), marks
