"""Measurement accuracy: lanemon's TTFT and decode tok/s against the simulator's ground truth.

    python bench/accuracy.py [--levels 1,16,64,256] [--max-tokens 32] [--time-scale 1.0] [--json out.json]

For each concurrency level C, C requests start together on a simulated lane
(a separate process); every request is matched to the simulator's own trace
record through the ``x-sim-request-id`` response header, and lanemon's TTFT and
per-stream decode rate are compared with the simulator's (arrival -> first
token write; token write times).  Reported: p50/p99 absolute TTFT error (ms)
and p50/p99 relative decode error (%).  The same wave is also read by a bare
httpx + orjson reader against the same ground truth: the part of the gap that
belongs to the transport and the simulator's own request handling, not to
lanemon's measurement.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))


async def run_level(url: str, c: int, max_tokens: int):
    from lanemon.config import LaneConfig
    from lanemon.workloads.harness import Harness

    h = Harness([LaneConfig("A", url)], keep_events=False)
    try:
        await h.connect()
        # warm up C pooled connections, so the measured wave does not pay C TCP/HTTP set-ups
        await asyncio.gather(*(h.request("A", "chat", prompt=f"warm up {i}", max_tokens=1) for i in range(c)))
        recs = await asyncio.gather(*(
            h.request("A", "chat", prompt=f"Write a Python function number {i} that adds two numbers.",
                      max_tokens=max_tokens, extra={"temperature": 0}) for i in range(c)))
    finally:
        await h.aclose()
    return recs


async def run_level_bare(url: str, c: int, max_tokens: int):
    """The same wave read by a bare httpx + orjson reader: the transport's own share of the gap."""
    import time

    import httpx
    import orjson

    async def one(client, i, prompt, tokens):
        body = orjson.dumps({"messages": [{"role": "user", "content": prompt}], "max_tokens": tokens,
                             "stream": True, "temperature": 0})
        t0 = time.perf_counter()
        first = None
        async with client.stream("POST", url + "/chat/completions", content=body,
                                 headers={"content-type": "application/json"}) as r:
            async for line in r.aiter_lines():
                if first is None and line.startswith("data: {") and '"content":"' in line and '"role"' not in line:
                    first = time.perf_counter()
        return r.headers.get("x-sim-request-id"), (first - t0) if first else None

    limits = httpx.Limits(max_connections=c + 8, max_keepalive_connections=c + 8)
    async with httpx.AsyncClient(limits=limits, timeout=600) as client:
        await asyncio.gather(*(one(client, i, f"warm up {i}", 1) for i in range(c)))
        return await asyncio.gather(*(
            one(client, i, f"Write a Python function number {i} that adds two numbers.", max_tokens)
            for i in range(c)))


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f} ms"


def main() -> int:
    from simproc import SimProcess
    from lanemon.measure.metrics import percentile, request_metrics

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="1,16,64,256")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--profile", default="tensorfold-exl3")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    rows = []
    sim = SimProcess(args.profile, args.time_scale)
    try:
        for c in [int(x) for x in args.levels.split(",")]:
            sim.clear_trace()
            recs = asyncio.run(run_level(sim.url, c, args.max_tokens))
            truth = {t["id"]: t for t in sim.trace()}
            ttft_err, dec_err, matched, failed = [], [], 0, 0
            for rec in recs:
                m = request_metrics(rec)
                t = truth.get(rec.server_request_id or "")
                if not rec.ok or t is None:
                    failed += 1
                    continue
                matched += 1
                ttft_err.append(abs(m.ttft_s - t["ttft_s"]) * 1000)
                times = t["token_times_s"]
                if m.decode_tok_s and len(times) > 1:
                    true_rate = (len(times) - 1) / (t["e2e_s"] - t["ttft_s"])
                    dec_err.append(abs(m.decode_tok_s - true_rate) / true_rate * 100)
            sim.clear_trace()
            try:
                bare = asyncio.run(run_level_bare(sim.url, c, args.max_tokens))
            except Exception as exc:  # the comparison reader failing must not hide lanemon's figures
                print(f"C{c}: bare httpx reader failed: {type(exc).__name__}", flush=True)
                bare = []
            truth = {t["id"]: t for t in sim.trace()}
            bare_err = [abs(ttft - truth[rid]["ttft_s"]) * 1000 for rid, ttft in bare if rid in truth and ttft]
            row = {"concurrency": c, "load_avg_1m": round(os.getloadavg()[0], 2),
                   "bare_httpx_ttft_abs_err_ms_p50": percentile(bare_err, 50),
                   "bare_httpx_ttft_abs_err_ms_p99": percentile(bare_err, 99), "requests": len(recs), "matched": matched, "failed": failed,
                   "ttft_abs_err_ms_p50": percentile(ttft_err, 50), "ttft_abs_err_ms_p99": percentile(ttft_err, 99),
                   "decode_rel_err_pct_p50": percentile(dec_err, 50), "decode_rel_err_pct_p99": percentile(dec_err, 99)}
            rows.append(row)
            print(f"C{c:<4} matched {matched:4}/{len(recs):<4} TTFT err p50 {row['ttft_abs_err_ms_p50']:.2f} ms "
                  f"p99 {row['ttft_abs_err_ms_p99']:.2f} ms   decode err p50 {row['decode_rel_err_pct_p50']:.2f}% "
                  f"p99 {row['decode_rel_err_pct_p99']:.2f}%   (bare httpx TTFT err p50 "
                  f"{_ms(row['bare_httpx_ttft_abs_err_ms_p50'])} p99 {_ms(row['bare_httpx_ttft_abs_err_ms_p99'])})"
                  f"   load {row['load_avg_1m']}",
                  flush=True)
    finally:
        sim.stop()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"benchmark": "accuracy", "profile": args.profile, "time_scale": args.time_scale,
                       "max_tokens": args.max_tokens, "levels": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
