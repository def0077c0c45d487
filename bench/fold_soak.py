"""Fold soak: the app's folds fed a long synthetic session at full speed, memory traced (no sockets, no screen).

    python bench/fold_soak.py [--minutes 30] [--streams 64] [--tokens 64] [--top 12]

What ``bench/soak.py`` measures in real time (30 minutes for 30 minutes), this replays in seconds: every
event a 64-stream session would publish (requests of ``--tokens`` token chunks, a ``client_load`` window
every 0.5 s, a ``host`` sample and a ``/metrics`` scrape per lane every second), stamped with session time
and handed to the app's own ``_fold`` (dashboard, series, race, timeline and gauntlet folds), as the live
app does.  ``tracemalloc`` snapshots at minute 5 and at the end: the growth between them, and the source
lines that grew most (where memory is kept per request instead of per unit of time).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tracemalloc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

NS = 1_000_000_000


class _Source:
    mode = "live"
    speed = None
    recording_path = None
    finished = False
    paused = False

    def __init__(self, lanes):
        from lanemon.bus import EventBus

        self.bus = EventBus()
        self.lanes = [{"name": n, "url": f"http://{n}", "model": "m"} for n in lanes]

    async def run(self):
        return None

    def stop(self):
        return None


def events(minutes: float, streams: int, tokens: int, seed: int = 0):
    """The events of a closed-loop session in time order (a generator: nothing is kept here)."""
    import heapq

    from lanemon.events import Event

    rng = random.Random(seed)
    end = int(minutes * 60 * NS)
    heap: list = []  # (t, seq, kind, payload)
    seq = 0
    lanes = ("A", "B")
    for i in range(streams):
        heap.append((rng.randrange(0, NS), seq, "start", (lanes[i % 2], i)))
        seq += 1
    for k in range(1, int(minutes * 120) + 1):
        heap.append((k * NS // 2, seq, "load", None))
        seq += 1
    for k in range(1, int(minutes * 60) + 1):
        heap.append((k * NS, seq, "tick", None))
        seq += 1
    heapq.heapify(heap)
    n = 0
    while heap:
        t, _, kind, p = heapq.heappop(heap)
        if t > end and kind == "start":
            continue
        if kind == "load":
            yield Event(t, "client_load", data={"t0": t - NS // 2, "lag_ms": 1.0 + rng.random(), "lag_mean_ms": 0.5,
                                                "samples": 5, "cpu_pct": 40.0, "proc_cpu_pct": 30.0,
                                                "bound": rng.random() < 0.01, "threshold_ms": 20.0})
        elif kind == "tick":
            yield Event(t, "host", data={"cpu_pct": 40.0, "mem_pct": 30.0, "net_rx_Bps": 1e5, "net_tx_Bps": 1e5})
            for lane in lanes:
                yield Event(t, "server_metrics", lane, data={"ok": True, "running": 32.0, "waiting": 1.0,
                                                             "kv_usage": 0.4, "gen_tok_s": 900.0})
        elif kind == "start":
            lane, i = p
            req = f"{lane}-{n}"
            n += 1
            yield Event(t, "request", lane, req, {"endpoint": "chat", "purpose": "load", "model": "m",
                                                  "max_tokens": tokens, "prompt_chars": 40})
            ttft = int(rng.uniform(0.05, 0.3) * NS)
            gap = int(rng.uniform(0.02, 0.04) * NS)
            yield Event(t + ttft // 2, "first_byte", lane, req, {})
            tt = t + ttft
            for j in range(tokens):
                yield Event(tt + j * gap, "token", lane, req, {"text": "x", "n": 1})
            te = tt + tokens * gap
            yield Event(te, "usage", lane, req, {"prompt_tokens": 12, "completion_tokens": tokens})
            yield Event(te, "done", lane, req, {"finish_reason": "length", "status": 200})
            if te < end:
                heapq.heappush(heap, (te + 1, seq, "start", (lane, i)))
                seq += 1
    return


def run(args) -> dict:
    from lanemon.ui.app import make_app

    app = make_app(_Source(["A", "B"]))
    fold = app._fold
    tracemalloc.start(args.frames)
    mark_ns = int(args.baseline * 60 * NS)
    snap0 = None
    traced0 = 0
    requests = 0
    marks = []
    next_mark = NS * 60
    for ev in events(args.minutes, args.streams, args.tokens):
        if snap0 is None and ev.t >= mark_ns:
            snap0 = tracemalloc.take_snapshot()
            traced0 = tracemalloc.get_traced_memory()[0]
        if ev.t >= next_mark:
            marks.append({"minute": round(ev.t / NS / 60, 1), "traced_mb": round(tracemalloc.get_traced_memory()[0] / 2**20, 2),
                          "requests": requests})
            next_mark += NS * 60
        if ev.kind == "done":
            requests += 1
        fold(ev)
    snap1 = tracemalloc.take_snapshot()
    traced1 = tracemalloc.get_traced_memory()[0]
    top = []
    if snap0 is not None:
        for st in snap1.compare_to(snap0, "lineno")[: args.top]:
            frame = st.traceback[0]
            top.append({"where": f"{os.path.relpath(frame.filename)}:{frame.lineno}", "grew_kb": round(st.size_diff / 1024, 1),
                        "count_diff": st.count_diff})
    return {"benchmark": "fold_soak", "minutes": args.minutes, "streams": args.streams, "requests": requests,
            "traced_at_baseline_mb": round(traced0 / 2**20, 2), "traced_end_mb": round(traced1 / 2**20, 2),
            "growth_after_baseline_mb": round((traced1 - traced0) / 2**20, 2), "per_minute": marks, "top": top}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--baseline", type=float, default=5, help="minute of the first snapshot")
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--frames", type=int, default=1)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    r = run(args)
    for k, v in r.items():
        if k not in ("top", "per_minute"):
            print(f"{k:26} {v}")
    print("grew most between the snapshots:")
    for row in r["top"]:
        print(f"  {row['grew_kb']:10.1f} KB  {row['count_diff']:+8d} blocks  {row['where']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(r, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
