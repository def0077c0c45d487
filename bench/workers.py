"""Worker processes: ``lanemon bench load --workers N`` against a simulated lane in its own process.

    python bench/workers.py [--workers 1,2] [--reps 2] [--rate 10] [--requests 300] [--output-tokens 200]
                            [--time-scale 0.1] [--json workers.json]

For each rep and each N (alternating), the real CLI runs one open-loop constant-rate
cell (``--arrival constant --rate R --requests K --input-len fixed:32 --output-len
fixed:T --ignore-eos --chat --workers N --record``) against one simulator process.
From the recording and the simulator's own trace (GET /sim/trace) of the same
requests:

* tok/s delivered (the run's ``output_tok_s``) and the tokens the simulator wrote;
* events: every request must have ``request``, ``first_byte``, one ``token`` event
  per chunk the simulator wrote, ``usage`` and ``done`` -- expected vs recorded,
  so *lost* is counted, not assumed;
* TTFT error per request (lanemon's TTFT - the simulator's, matched through
  ``server_request_id``), p50 / p99;
* CPU seconds of the whole CLI (main process and its workers, ``wait4``) per 1k tokens.

The simulator shares the machine: on 2 cores it takes one of them at these rates.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

from peers import SimProcess, pct, rnd, run_child  # noqa: E402


def check_events(events, trace: dict[str, dict]) -> dict:
    """Expected vs recorded events of every request (matched to the trace through server_request_id)."""
    from lanemon.measure.metrics import request_metrics
    from lanemon.measure.records import assemble

    by_req: dict[str, Counter] = defaultdict(Counter)
    for e in events:
        if e.req:
            by_req[e.req][e.kind] += 1
    recs = assemble(events)
    expected = recorded = unmatched = 0
    errs = []
    for rec in recs:
        if not rec.server_request_id:
            continue
        t = trace.get(rec.server_request_id)
        if t is None:
            unmatched += 1
            continue
        chunks = len(t.get("chunk_tokens") or t.get("token_times_s") or [])
        # request, first_byte, usage, done + one token event per chunk the simulator wrote
        expected += 4 + chunks
        k = by_req[rec.req]
        recorded += k["request"] + k["first_byte"] + k["usage"] + k["done"] + k["token"]
        m = request_metrics(rec)
        if m.ttft_s is not None and t.get("ttft_s") is not None:
            errs.append((m.ttft_s - t["ttft_s"]) * 1000)
    return {"requests": len(recs), "unmatched": unmatched, "events_expected": expected,
            "events_recorded": recorded, "events_lost": expected - recorded,
            "ttft_err_ms": errs}


def one(args, sim: SimProcess, workers: int, rep: int, root: Path) -> dict:
    from lanemon.recording.reader import read_events

    work = root / f"w{workers}-r{rep}"
    work.mkdir(parents=True, exist_ok=True)
    sim.clear_trace()
    exe = str(Path(sys.executable).with_name("lanemon"))
    cmd = [exe, "bench", "load", "--lane", f"A={sim.url}", "--arrival", "constant", "--rate", str(args.rate),
           "--requests", str(args.requests), "--input-len", "fixed:32", "--output-len", f"fixed:{args.output_tokens}",
           "--ignore-eos", "--chat", "--workers", str(workers), "--seed", "1", "--json",
           "--record", str(work / "run.jsonl")]
    load0 = os.getloadavg()[0]
    child = run_child(cmd, dict(os.environ), work, args.timeout)
    load1 = os.getloadavg()[0]
    run = {"workers": workers, "rep": rep, "command": cmd, **child, "load_avg_1m": [round(load0, 2), round(load1, 2)]}
    if child["rc"] != 0:
        run["failed"] = (work / "stderr.txt").read_text(errors="replace")[-400:]
        return run
    res = json.loads((work / "stdout.txt").read_text())
    cell = res["lanes"]["A"]["reps"][0]
    trace = {t["id"]: t for t in sim.trace() if t.get("endpoint") == "chat.completions"}
    _, events, _ = read_events(work / "run.jsonl")
    kinds = Counter(e.kind for e in events)
    chk = check_events(events, trace)
    tokens = sum(t.get("completion_tokens") or 0 for t in trace.values())
    errs = chk.pop("ttft_err_ms")
    run.update({
        "output_tok_s": cell.get("output_tok_s"), "ok": cell.get("ok"), "errors": cell.get("errors"),
        "client_behind": cell.get("client_behind"), "send_lag_s": cell.get("send_lag_s"),
        "ttft_s": cell.get("ttft_s"), "tokens_streamed": tokens, "event_kinds": dict(kinds),
        "events_total": sum(kinds.values()), **chk,
        "ttft_abs_err_ms_p50": rnd(pct([abs(e) for e in errs], 50)),
        "ttft_abs_err_ms_p99": rnd(pct([abs(e) for e in errs], 99)),
        "cpu_s_per_1k_tokens": round(child["cpu_s"] / tokens * 1000, 3) if tokens else None,
    })
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--rate", type=float, default=10.0, help="requests per second (default 10)")
    ap.add_argument("--requests", type=int, default=300)
    ap.add_argument("--output-tokens", type=int, default=200)
    ap.add_argument("--time-scale", type=float, default=0.1, help="simulated lane speed (0.1: 10x real time)")
    ap.add_argument("--profile", default="tensorfold-exl3")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",")]
    root = Path(tempfile.mkdtemp(prefix="lanemon-workers-"))
    sim = SimProcess(args.profile, args.time_scale, stderr=root / "sim.log")
    runs = []
    try:
        for rep in range(args.reps):
            for n in (counts if rep % 2 == 0 else counts[::-1]):
                r = one(args, sim, n, rep, root)
                runs.append(r)
                if "failed" in r:
                    print(f"r{rep} workers {n}: FAILED {r['failed']}", flush=True)
                    continue
                print(f"r{rep} workers {n}: {r['output_tok_s']:8.0f} tok/s  ok {r['ok']}/{args.requests}  "
                      f"events {r['events_recorded']}/{r['events_expected']} (lost {r['events_lost']}, "
                      f"total recorded {r['events_total']})  TTFT err p50 {r['ttft_abs_err_ms_p50']} "
                      f"p99 {r['ttft_abs_err_ms_p99']} ms  send lag p99 {r['send_lag_s']['p99'] * 1000:.1f} ms  "
                      f"CPU {r['cpu_s']:.1f} s ({r['cpu_s_per_1k_tokens']}/1k tok)  load {r['load_avg_1m'][1]}",
                      flush=True)
    finally:
        sim.stop()
    summary = {}
    for n in counts:
        ok = [r for r in runs if r["workers"] == n and "failed" not in r]
        if ok:
            summary[str(n)] = {k: statistics.median(r[k] for r in ok if r[k] is not None)
                               for k in ("output_tok_s", "ttft_abs_err_ms_p50", "ttft_abs_err_ms_p99",
                                         "cpu_s_per_1k_tokens")}
            summary[str(n)]["events_lost"] = sum(r["events_lost"] for r in ok)
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"benchmark": "workers", "rate": args.rate, "requests": args.requests,
                                               "output_tokens": args.output_tokens, "time_scale": args.time_scale,
                                               "cpus": os.cpu_count(), "summary": summary, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
