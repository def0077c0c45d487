"""One process vs two local Ray nodes vs two worker processes: ``lanemon bench load`` on the same run (issue 41).

    python bench/ray_cluster.py [--modes one,ray2,proc2] [--reps 1] [--rate 10] [--requests 200]
                                [--output-tokens 100] [--time-scale 0.1] [--json ray_cluster.json]

A cluster of a head (no CPUs: nothing placed there) and two load-host nodes is
started once with ``ray.cluster_utils.Cluster`` (each node its own raylet on this
machine); ``ray2`` runs the CLI with ``--ray-address`` (one worker on each node),
``proc2`` with ``--workers 2``, ``one`` with ``--workers 1``, against one
simulator process, modes alternating per rep.  For each run: the sent rate against
the offered one, errors, events expected vs recorded, TTFT error against the
simulator's trace (p50 / p99 of |lanemon - simulator|), and CPU per 1k tokens:
the CLI with its waited-for children (``wait4``) plus, for ``ray2``, the worker
actors' own CPU (sampled from their processes, which are the raylets' children)
and, apart, what Ray's daemons (raylets, GCS) spent during the run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))

from peers import SimProcess, pct, rnd, run_child  # noqa: E402
from workers import check_events  # noqa: E402

RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def _cpu(p) -> float:
    t = p.cpu_times()
    return t.user + t.system


class RayCpu:
    """Samples the CPU of Ray's worker actors (by pid, the last reading kept) and of its daemons during a run."""

    def __init__(self) -> None:
        import psutil

        self.psutil = psutil
        self.actors: dict[int, float] = {}
        self.daemons0 = self._daemons()
        self.done = threading.Event()
        self.th = threading.Thread(target=self._loop, daemon=True)
        self.th.start()

    def _daemons(self) -> dict[int, float]:
        out = {}
        for p in self.psutil.process_iter(["cmdline"]):
            cmd = " ".join(p.info.get("cmdline") or [])
            if "raylet" in cmd or "gcs_server" in cmd:
                try:
                    out[p.pid] = _cpu(p)
                except self.psutil.Error:
                    pass
        return out

    def _loop(self) -> None:
        while not self.done.wait(0.1):
            for p in self.psutil.process_iter(["cmdline"]):
                if "_RayWorker" in " ".join(p.info.get("cmdline") or []):
                    try:
                        self.actors[p.pid] = _cpu(p)
                    except self.psutil.Error:
                        pass

    def stop(self) -> dict[str, float]:
        self.done.set()
        self.th.join()
        now = self._daemons()
        return {"actors_cpu_s": sum(self.actors.values()),
                "ray_daemons_cpu_s": sum(now[k] - self.daemons0.get(k, 0.0) for k in now)}


def one(args, sim: SimProcess, mode: str, rep: int, root: Path, address: str | None, requests: int | None = None) -> dict:
    from lanemon.recording.reader import read_events

    requests = requests or args.requests
    work = root / f"{mode}-r{rep}-n{requests}"
    work.mkdir(parents=True, exist_ok=True)
    sim.clear_trace()
    exe = str(Path(sys.executable).with_name("lanemon"))
    how = {"one": ["--workers", "1"], "proc2": ["--workers", "2"],
           "ray2": ["--ray-address", str(address), "--ray-log", str(work / "ray.log")]}[mode]
    cmd = [exe, "bench", "load", "--lane", f"A={sim.url}", "--arrival", "constant", "--rate", str(args.rate),
           "--requests", str(requests), "--input-len", "fixed:32", "--output-len", f"fixed:{args.output_tokens}",
           "--ignore-eos", "--chat", *how, "--seed", "1", "--json", "--record", str(work / "run.jsonl")]
    load0 = os.getloadavg()[0]
    sampler = RayCpu() if mode == "ray2" else None
    child = run_child(cmd, {**os.environ, **RAY_ENV}, work, args.timeout)
    ray_cpu = sampler.stop() if sampler else {}
    run = {"mode": mode, "rep": rep, "requests": requests, "command": cmd, **child, **ray_cpu,
           "load_avg_1m": [round(load0, 2), round(os.getloadavg()[0], 2)]}
    if child["rc"] != 0:
        run["failed"] = (work / "stderr.txt").read_text(errors="replace")[-600:]
        return run
    res = json.loads((work / "stdout.txt").read_text())
    cell = res["lanes"]["A"]["reps"][0]
    trace = {t["id"]: t for t in sim.trace() if t.get("endpoint") == "chat.completions"}
    _, events, _ = read_events(work / "run.jsonl")
    chk = check_events(events, trace)
    tokens = sum(t.get("completion_tokens") or 0 for t in trace.values())
    errs = chk.pop("ttft_err_ms")
    cpu = child["cpu_s"] + ray_cpu.get("actors_cpu_s", 0.0)
    stderr = (work / "stderr.txt").read_text(errors="replace")
    run.update({
        "sent_rate_rps": cell.get("sent_rate_rps"), "offered_rate_rps": args.rate, "ok": cell.get("ok"),
        "errors": cell.get("errors"), "bursts": cell.get("bursts"), "client_behind": cell.get("client_behind"),
        "send_lag_s": cell.get("send_lag_s"), "output_tok_s": cell.get("output_tok_s"), "tokens_streamed": tokens,
        **chk,
        "ttft_err_ms_p50": rnd(pct(errs, 50), 3), "ttft_abs_err_ms_p50": rnd(pct([abs(e) for e in errs], 50), 3),
        "ttft_abs_err_ms_p99": rnd(pct([abs(e) for e in errs], 99), 3),
        "cpu_s_lanemon": round(cpu, 2), "cpu_s_per_1k_tokens": round(cpu / tokens * 1000, 3) if tokens else None,
        "joined_line": next((ln for ln in stderr.splitlines() if "Ray cluster joined" in ln), None),
    })
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--modes", default="one,ray2,proc2")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--rate", type=float, default=10.0)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--output-tokens", type=int, default=100)
    ap.add_argument("--time-scale", type=float, default=0.1)
    ap.add_argument("--profile", default="tensorfold-exl3")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    modes = args.modes.split(",")
    root = Path(tempfile.mkdtemp(prefix="lanemon-raycluster-"))
    os.environ.update(RAY_ENV)
    cluster = None
    address = None
    if "ray2" in modes:
        from ray.cluster_utils import Cluster

        t0 = time.monotonic()
        cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
        cluster.add_node(num_cpus=1)
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        address = cluster.address
        print(f"cluster of a head and two nodes up in {time.monotonic() - t0:.1f} s", flush=True)
    sim = SimProcess(args.profile, args.time_scale, stderr=root / "sim.log")
    runs = []
    base = {}
    try:
        for rep in range(args.reps):
            for mode in (modes if rep % 2 == 0 else modes[::-1]):
                r = one(args, sim, mode, rep, root, address)
                runs.append(r)
                if "failed" in r:
                    print(f"r{rep} {mode}: FAILED {r['failed']}", flush=True)
                    continue
                print(f"r{rep} {mode:5}: sent {r['sent_rate_rps']} of {args.rate} req/s  ok {r['ok']} err "
                      f"{r['errors']}  events lost {r['events_lost']}  TTFT err p50 {r['ttft_err_ms_p50']} ms "
                      f"|p99| {r['ttft_abs_err_ms_p99']} ms  CPU {r['cpu_s_lanemon']} s "
                      f"({r['cpu_s_per_1k_tokens']}/1k tok)  Ray daemons {r.get('ray_daemons_cpu_s', 0):.1f} s  "
                      f"wall {r['wall_s']:.1f} s  load {r['load_avg_1m'][1]}  {r['joined_line'] or ''}", flush=True)
        for mode in modes:  # the start-up alone (one request): what a run costs before its first token
            b = one(args, sim, mode, 0, root, address, requests=1)
            if "failed" not in b:
                base[mode] = b
                print(f"{mode:5} start-up: CPU {b['cpu_s_lanemon']} s for {b['tokens_streamed']} tokens, wall "
                      f"{b['wall_s']:.1f} s", flush=True)
    finally:
        sim.stop()
        if cluster is not None:
            cluster.shutdown()
    for r in runs:
        b = base.get(r["mode"])
        if b and "failed" not in r and r["tokens_streamed"] > b["tokens_streamed"]:
            r["cpu_s_per_1k_tokens_beyond_startup"] = round((r["cpu_s_lanemon"] - b["cpu_s_lanemon"])
                                                            / (r["tokens_streamed"] - b["tokens_streamed"]) * 1000, 3)
            if "actors_cpu_s" in r and "actors_cpu_s" in b:
                r["actors_cpu_s_per_1k_tokens_beyond_startup"] = round(
                    (r["actors_cpu_s"] - b["actors_cpu_s"]) / (r["tokens_streamed"] - b["tokens_streamed"]) * 1000, 3)
                r["main_cpu_s_per_1k_tokens_beyond_startup"] = round(
                    (r["cpu_s"] - b["cpu_s"]) / (r["tokens_streamed"] - b["tokens_streamed"]) * 1000, 3)
    summary = {}
    for mode in modes:
        ok = [r for r in runs if r["mode"] == mode and "failed" not in r]
        if ok:
            summary[mode] = {k: statistics.median(r[k] for r in ok if r.get(k) is not None)
                             for k in ("sent_rate_rps", "ttft_err_ms_p50", "ttft_abs_err_ms_p99", "cpu_s_per_1k_tokens",
                                       "cpu_s_per_1k_tokens_beyond_startup", "actors_cpu_s_per_1k_tokens_beyond_startup",
                                       "main_cpu_s_per_1k_tokens_beyond_startup", "wall_s")
                             if any(r.get(k) is not None for r in ok)}
            summary[mode]["events_lost"] = sum(r["events_lost"] for r in ok)
            summary[mode]["errors"] = sum(r["errors"] or 0 for r in ok)
    print(json.dumps(summary, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"benchmark": "ray_cluster", "rate": args.rate, "requests": args.requests,
                                               "output_tokens": args.output_tokens, "time_scale": args.time_scale,
                                               "cpus": os.cpu_count(), "summary": summary, "runs": runs,
                                               "counts": dict(Counter(r["mode"] for r in runs))}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
