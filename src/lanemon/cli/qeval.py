"""`lanemon qeval run` / `compare` / `rescore`: the quality gate.

``run`` sends the 75 shipped tasks (or a subset) to one lane at temperature 0,
scores each reply once (code in the bubblewrap sandbox) and records every
verdict; ``compare`` pairs two run files by task id (kept / broke / fixed /
both failed) with an exact McNemar test; ``rescore`` scores a recording's
replies again -- the only command that runs a recording's code (reading one
never does).  Output is headless (a Rich summary
on stdout, progress on stderr) or one JSON object with ``--json``; there is no
TUI for qeval.  JSON shapes: docs/JSON.md, "qeval".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lanemon.untrusted import json_visible, rich_escape
from lanemon.cli.common import (EXIT_INTERRUPTED, EXIT_OK, DataLost, UsageError, add_workload_args, err, open_recorder, positive_float, positive_int, recording_saved, run_interruptible, workload_lanes, write_output)

if TYPE_CHECKING:
    from lanemon.results.qeval import QevalResult

RUN_DESCRIPTION = """\
Run the qeval tasks (code, json, math, format; 75 shipped) on one lane over
/v1/chat/completions at temperature 0 and score every reply: code runs with
hidden tests in a sandboxed subprocess (never in lanemon's process), JSON is
checked for keys/types/values, math answers are extracted from prose and
compared exactly, format replies are checked against their constraints.

Model code runs only inside bubblewrap (bwrap): new user, pid, network, ipc
and uts namespaces, an empty environment, a read-only view of the
interpreter, a small tmpfs work directory, resource limits, and a kill of the
whole sandbox at --timeout.  Without a working bwrap the code tasks are
skipped (and counted as skipped), unless --unsafe-run-code-without-sandbox is
given.  Every verdict is recorded, so `report`, `compare`, `replay` and
`export` read it instead of running the code again.

Output is headless: progress on stderr, a summary on stdout (--headless is
the default for this command; there is no qeval TUI), or one JSON object with
--json.  -o writes the same JSON to a file for `lanemon qeval compare`.  The
run is recorded like every workload (requests carry meta bench=qeval).
"""

COMPARE_DESCRIPTION = """\
Pair two `qeval run` result files by task id: kept (both pass), broke (A
passes, B fails), fixed (A fails, B passes), both failed; p is the exact
two-sided McNemar test on the discordant pairs.  Tasks present in only one
file are left out (and counted).
"""

RESCORE_DESCRIPTION = """\
Score the qeval replies in a recording again, in the same sandbox `qeval run`
uses (code tasks run in bubblewrap; skipped without it unless
--unsafe-run-code-without-sandbox).  This is the only command that runs a
recording's model code: `report`, `compare`, `replay` and `export` read the
verdicts recorded when the task ran, and list replies without one as "not
scored".  Prints the result like `qeval run` (or --json, -o FILE); --write OUT
writes a copy of the recording with these verdicts recorded (marked
rescored), which the readers then use.  Only open recordings you trust enough
to run their code in the sandbox.
"""


def add_sandbox_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--timeout", type=positive_float, default=10.0, metavar="S",
                   help="wall-clock limit per code task in the sandbox (default 10 s)")
    p.add_argument("--bwrap", metavar="PATH", help="the bubblewrap binary (default: bwrap on PATH)")
    p.add_argument("--unsafe-run-code-without-sandbox", dest="unsafe_no_sandbox", action="store_true",
                   help="when bubblewrap is missing or does not work here, run model-written code as a plain "
                        "child process with your user's rights instead of skipping the code tasks "
                        "(NOT a sandbox: only for models and replies you trust)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("qeval", help="quality gate: 75 auto-scored tasks on a lane; compare two runs",
                       description="The quality gate: `qeval run LANE` scores a lane on the shipped tasks, "
                                   "`qeval compare A.json B.json` pairs two runs (McNemar), "
                                   "`qeval rescore REC` scores a recording's replies again in the sandbox.")
    qsub = p.add_subparsers(dest="qeval_command", metavar="SUBCOMMAND")
    r = qsub.add_parser("run", help="run the tasks on one lane", description=RUN_DESCRIPTION,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("target_lane", metavar="LANE", help="a lane name (with --demo: A or B)")
    r.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the result JSON here")
    r.add_argument("--tasks", metavar="IDS|KINDS",
                   help="comma-separated task ids and/or kinds (code, json, math, format); default: all")
    r.add_argument("--concurrency", type=positive_int, default=1, metavar="N",
                   help="requests in flight at once (default 1: single stream, as in the write-up)")
    add_sandbox_args(r)
    r.add_argument("--max-tokens", type=positive_int, default=2048, metavar="N",
                   help="max_tokens per reply (default 2048)")
    add_workload_args(r)
    for action in r._actions:  # qeval has no TUI: --headless is what it always does; say so in --help
        if "--headless" in action.option_strings:
            action.help = "progress on stderr, the summary on stdout: the default and only mode (qeval has no TUI)"
    c = qsub.add_parser("compare", help="pair two run files (kept/broke/fixed, McNemar p)",
                        description=COMPARE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("a", type=Path, metavar="A.json")
    c.add_argument("b", type=Path, metavar="B.json")
    c.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    s = qsub.add_parser("rescore", help="score a recording's replies again, in the sandbox",
                        description=RESCORE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("recording", type=Path, metavar="RECORDING.jsonl")
    s.add_argument("--lane", metavar="LANE", help="which lane's replies (default: every lane with qeval replies)")
    s.add_argument("--json", action="store_true", help="print the result as one JSON object (with several lanes: lane -> result)")
    s.add_argument("-o", "--output", type=Path, metavar="FILE", help="write the result JSON here")
    s.add_argument("--write", type=Path, metavar="OUT.jsonl",
                   help="write a copy of the recording with the new verdicts recorded")
    add_sandbox_args(s)

    def dispatch(args: argparse.Namespace) -> int:
        if args.qeval_command == "run":
            return cmd_run(args)
        if args.qeval_command == "compare":
            return cmd_compare(args)
        if args.qeval_command == "rescore":
            return cmd_rescore(args)
        p.print_help(sys.stderr)
        return 2

    p.set_defaults(func=dispatch)


def _dump(obj: Any) -> str:
    import orjson

    return json_visible(orjson.dumps(obj, option=orjson.OPT_INDENT_2).decode()) + "\n"  # bidi, zero-width: \uXXXX


def cmd_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from lanemon.workloads.harness import Harness, LaneDown
    from lanemon.workloads.qeval import KINDS, select_tasks
    from lanemon.results.qeval import QevalTask
    from lanemon.workloads.qeval.run import Verdict, build_result, run_qeval

    try:
        tasks = select_tasks(args.tasks)
    except KeyError as exc:
        raise UsageError(f"--tasks: unknown task id(s) or kind(s): {exc.args[0]} "
                         f"(kinds: {', '.join(KINDS)}; ids: see docs/QEVAL.md)") from None
    if args.output is not None and args.output.parent and not args.output.parent.exists():
        raise UsageError(f"-o: directory {args.output.parent} does not exist")
    limits = sandbox_limits(args)
    sandbox_notice(limits, sum(1 for t in tasks if t.kind == "code"))
    errcon = Console(stderr=True)
    with workload_lanes(args) as lanes:
        by_name = {lane.name: lane for lane in lanes}
        if args.target_lane not in by_name:
            raise UsageError(f"unknown lane {args.target_lane!r} (lanes: {', '.join(by_name) or 'none'})")
        lane = by_name[args.target_lane]
        recorder = open_recorder(args, "qeval", [lane.public()], {"qeval": {"lane": lane.name, "tasks": len(tasks)}})
        harness = Harness([lane], recorder=recorder)
        entries: dict[str, QevalTask] = {}
        skipped: dict[str, str] = {}
        progress = Progress(TextColumn("qeval {task.description}"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("[green]{task.fields[ok]} passed"), TimeElapsedColumn(),
                            console=errcon, transient=False)
        bar = progress.add_task(lane.name, total=len(tasks), ok=0)

        def on_result(task, verdict: Verdict) -> None:
            progress.update(bar, advance=1, ok=sum(1 for e in entries.values() if e.passed))
            if verdict.skipped:
                pass  # counted in the summary; the reason was said once at the start
            elif not verdict.passed:
                progress.console.print(f"[red]✗[/] {task.id}: {rich_escape(verdict.reason)}", highlight=False,
                                       soft_wrap=True)

        down: list[str] = []

        async def go():
            try:
                await harness.connect()
            except LaneDown as exc:
                down.append(str(exc))
                return None
            with progress:
                return await run_qeval(harness, lane.name, tasks, concurrency=args.concurrency, limits=limits,
                                       max_tokens=args.max_tokens, entries=entries, skipped=skipped,
                                       on_result=on_result)

        result, interrupted = run_interruptible(go, cleanup=harness.aclose)
        recording_saved(recorder)
        if down:
            err(down[0])
            return 1
        if result is None:
            result = build_result(lane.name, harness.clients[lane.name].model, entries, skipped=skipped)
            err(f"interrupted: {result.total} of {len(tasks)} tasks finished")
    _emit(args, result, lambda: _print_run(result))
    return EXIT_INTERRUPTED if interrupted else EXIT_OK


def sandbox_limits(args: argparse.Namespace):
    from lanemon.workloads.qeval.sandbox import SandboxLimits

    return SandboxLimits(timeout_s=args.timeout, bwrap=args.bwrap, unsafe_no_sandbox=args.unsafe_no_sandbox)


def sandbox_notice(limits, code_tasks: int) -> None:
    """Say once, before anything runs, when code tasks will be skipped or run without a sandbox."""
    from lanemon.workloads.qeval.sandbox import UNSAFE_FLAG, sandbox_problem

    if not code_tasks:
        return
    problem = sandbox_problem(limits)
    if problem is None:
        return
    if limits.unsafe_no_sandbox:
        err(f"WARNING: {problem}; {UNSAFE_FLAG} was given, so {code_tasks} code task(s) run model-written code "
            "WITHOUT a sandbox, as a plain child process with your user's rights")
    else:
        err(f"qeval: {code_tasks} code task(s) will be skipped: {problem}; {UNSAFE_FLAG} runs them without one "
            "(not isolated)")


def _emit(args: argparse.Namespace, payload: QevalResult | dict[str, QevalResult],
          show: Callable[[], object]) -> None:
    """The result JSON to ``-o`` (when given) and to stdout with ``--json``; else ``show()`` prints the tables."""
    from lanemon.results.common import to_json_obj
    from lanemon.results.qeval import QevalResult

    payload = (to_json_obj(payload) if isinstance(payload, QevalResult) else
               {lane: to_json_obj(r) for lane, r in payload.items()})
    if args.output is not None:
        write_output(args.output, _dump(payload), make_dirs=False)  # run and rescore check the folder first
    if args.json:
        sys.stdout.write(_dump(payload))
    else:
        show()


def _print_run(result: QevalResult) -> None:
    """The run's table (per kind, then all the tasks) and its misses; every figure is the result's
    (workloads/qeval/run.py ``task_figures``), labelled by the catalogue."""
    from rich.console import Console
    from rich.table import Table

    from lanemon.measure.catalogue import label
    from lanemon.reports.format import secs, tok

    con = Console()
    tasks = result.tasks
    model = f" · {rich_escape(result.model)}" if result.model else ""
    table = Table(title=f"qeval {rich_escape(result.lane)}{model}")
    for col in ("kind", label("qeval_passed"), label("qeval_tasks"), label("qeval_median_s"), label("qeval_tok_s")):
        table.add_column(col, justify="left" if col == "kind" else "right")
    kinds = result.kinds or {}
    for kind, k in [*kinds.items(), ("all", result)]:
        table.add_row(kind, str(k.passed), str(k.total), secs(k.median_s), tok(k.median_tok_s))
    con.print(table)
    misses = [(tid, e) for tid, e in tasks.items() if not e.passed]
    for tid, e in misses:
        con.print(f"  [red]✗[/] {rich_escape(tid)} ({rich_escape(e.kind)}): {rich_escape(e.reason)}",
                  highlight=False, soft_wrap=True)
    skipped = result.skipped
    if skipped:
        reasons = list(dict.fromkeys(skipped.values()))
        con.print(f"  [yellow]skipped {len(skipped)}[/] (not in the score): {rich_escape(reasons[0])}",
                  highlight=False, soft_wrap=True)
    med = f"; median {secs(result.median_s)} per task" if result.median_s else ""
    skip = f", {len(skipped)} skipped" if skipped else ""
    con.print(f"{rich_escape(result.lane)} {result.passed}/{result.total}{skip}{med}", highlight=False)


def _load_run(path: Path) -> QevalResult:
    import json

    import msgspec

    from lanemon.results.common import as_result
    from lanemon.results.qeval import QevalResult

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), dict) or not all(
            isinstance(e, dict) and "passed" in e for e in data["tasks"].values()):
        raise UsageError(f"{path} is not a `lanemon qeval run` result (expected a 'tasks' object)")
    try:
        return as_result(data, QevalResult)
    except msgspec.ValidationError as exc:
        raise UsageError(f"{path} is not a `lanemon qeval run` result: {exc}") from None


def cmd_compare(args: argparse.Namespace) -> int:
    from lanemon.results.common import to_json_obj
    from lanemon.workloads.qeval import compare_line, compare_runs

    a, b = _load_run(args.a), _load_run(args.b)
    name_a, name_b = a.lane or args.a.stem, b.lane or args.b.stem
    if name_a == name_b:
        name_a, name_b = args.a.stem, args.b.stem
    result = compare_runs(a, b, name_a, name_b)
    if args.json:
        sys.stdout.write(_dump(to_json_obj(result)))
        return 0
    print(compare_line(result))
    for label, ids in (("broke", result.broke_ids), ("fixed", result.fixed_ids),
                       ("both failed", result.both_failed_ids)):
        if ids:
            print(f"  {label} ({len(ids)}): {', '.join(ids)}")
    if result.left_out:
        print(f"  left out {result.left_out} task(s) present in only one file")
    return 0


def cmd_rescore(args: argparse.Namespace) -> int:
    from lanemon.events import MARK, Event
    from lanemon.recording.reader import Recording, RecordingError
    from lanemon.recording.writer import Recorder
    from lanemon.reports.analyse import lanes_of
    from lanemon.results.qeval import QevalResult
    from lanemon.workloads.qeval import load_bank, rescore
    from lanemon.workloads.qeval.run import BENCH, SCORE_LABEL, Verdict

    try:
        rec = Recording(args.recording)
        events = list(rec.events())
    except RecordingError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"cannot read {args.recording}: {exc.strerror or exc}") from None
    for warning in rec.warnings:
        err(f"warning: {warning}")
    lanes = lanes_of(BENCH, events)
    if args.lane is not None:
        if args.lane not in lanes:
            raise UsageError(f"{args.recording}: no qeval replies for lane {args.lane!r} "
                             f"(lanes with qeval replies: {', '.join(lanes) or 'none'})")
        lanes = [args.lane]
    if not lanes:
        raise UsageError(f"{args.recording}: no qeval replies to score")
    for path in (args.output, args.write):
        if path is not None and path.parent and not path.parent.exists():
            raise UsageError(f"directory {path.parent} does not exist")
    limits = sandbox_limits(args)
    bank = load_bank()
    code_tasks = {ev.data.get("task") for ev in events if ev.kind == "request" and ev.data.get("bench") == BENCH
                  and ev.lane in lanes and ev.data.get("task") in bank and bank[ev.data["task"]].kind == "code"}
    sandbox_notice(limits, len(code_tasks))
    results: dict[str, QevalResult] = {}
    verdicts: dict[str, tuple[str, str, Verdict]] = {}
    for lane in lanes:
        result, marks = rescore(events, lane=lane, limits=limits)
        results[lane] = result
        for lane_name, req, task, verdict in marks:
            verdicts[req] = (lane_name, task, verdict)
    if args.write is not None:
        last = {ev.req: i for i, ev in enumerate(events) if ev.req in verdicts}
        after: dict[int, list[str]] = {}
        for req, i in last.items():
            after.setdefault(i, []).append(req)
        try:
            out = Recorder(args.write, rec.header)
        except OSError as exc:
            raise UsageError(f"cannot create {args.write}: {exc.strerror or exc}") from None
        with out:
            for i, ev in enumerate(events):
                if ev.kind == MARK and ev.data.get("label") == SCORE_LABEL and ev.data.get("req") in verdicts:
                    continue  # replaced by the new verdict
                out(ev)
                for req in after.get(i, ()):
                    lane_name, task, verdict = verdicts[req]
                    out(Event(ev.t, MARK, lane_name, None, {"label": SCORE_LABEL, "bench": BENCH, "req": req,
                                                            "task": task, **verdict.mark_data(),
                                                            "rescored": True}))
        if out.failed:
            raise DataLost(f"{out.failed}; {out.outcome()}")
        err(f"recording with the new verdicts: {out.path} ({out.events} events)")
    payload = results[lanes[0]] if len(lanes) == 1 else results

    def show() -> None:
        for lane in lanes:
            _print_run(results[lane])

    _emit(args, payload, show)
    return 0
