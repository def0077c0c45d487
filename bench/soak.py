"""Soak: a bounded run of the dashboard under steady load, with memory sampled over time.

    python bench/soak.py [--minutes 10] [--streams 64] [--sample 10] [--json out.json]

The dashboard app runs headless under the pilot over the two simulated lanes
(separate processes) with ``--streams`` requests kept in flight and the session
recorded to a temporary file, like a real live session.  RSS is sampled every
``--sample`` seconds (with the load average); the result is the samples, the growth from the first sample
at ``--settle`` minutes to the last (issue 23's target: at most 2 MB after 5 minutes) and the growth
between the first and the last quarter of the run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))


class _MallInfo2(__import__("ctypes").Structure):
    """glibc's ``struct mallinfo2`` (2.33+): what malloc holds besides Python's own arenas."""

    _fields_ = [(name, __import__("ctypes").c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def _malloc_mb() -> dict[str, float]:
    """glibc malloc's in-use and free bytes over all its arenas (empty when this is not glibc 2.33+):
    RSS that grows while ``malloc_used_mb`` stays flat is free memory the allocator keeps, not data."""
    import ctypes

    try:
        fn = ctypes.CDLL(None).mallinfo2
    except (AttributeError, OSError):
        return {}
    fn.restype = _MallInfo2
    m = fn()
    return {"malloc_used_mb": round((m.uordblks + m.hblkhd) / 2**20, 2), "malloc_free_mb": round(m.fordblks / 2**20, 2)}


def _pymalloc() -> dict[str, float]:
    """Python's small-object allocator (``sys._debugmallocstats``, read from its stderr): arenas held, and the
    bytes in used blocks and free ones inside them.  Arenas that stay while the used bytes do not grow are
    fragmentation (a few live objects keeping each arena); about 20 ms a call at this soak's heap."""
    import re

    fd = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(fd, 2)
            os.close(fd)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")

    def get(key: str) -> int:
        m = re.search(re.escape(key) + r"\s*=\s*([\d,]+)", text)
        return int(m.group(1).replace(",", "")) if m else -1

    arena = get("# bytes in allocated blocks")
    return {"py_arenas": get("# arenas allocated current"), "py_used_mb": round(arena / 2**20, 2),
            "py_free_mb": round((get("# bytes in available blocks") + get("# bytes lost to pool headers")
                                 + get("# bytes lost to quantization") + get("# bytes lost to arena alignment")
                                 + 16384 * max(0, get("# unused pools") if get("# unused pools") >= 0 else 0)) / 2**20, 2)}


def _types() -> dict[str, int]:
    """Live objects the collector tracks, counted by type name (what grows per request shows here)."""
    import gc

    out: dict[str, int] = {}
    for o in gc.get_objects():
        k = type(o).__qualname__
        out[k] = out.get(k, 0) + 1
    return out


async def run(args) -> dict:
    import psutil

    from simproc import SimProcess
    from dashboard_scale import LoadSource
    from lanemon.config import LaneConfig
    from lanemon.recording.writer import Recorder, make_header
    from lanemon.ui.app import make_app

    sims = [SimProcess("tensorfold-exl3", 1.0), SimProcess("sglang-native", 1.0)]
    tmp = tempfile.mkdtemp()
    try:
        lanes = [LaneConfig("A", sims[0].url), LaneConfig("B", sims[1].url)]
        source = LoadSource(lanes, args.streams // 2, args.minutes * 60)
        recorder = Recorder(os.path.join(tmp, "soak.jsonl"), make_header("soak", source.lanes))
        source.bus.subscribe(recorder)
        app = make_app(source, refresh_hz=10)
        proc = psutil.Process()
        samples = []
        snap = None
        top: list[dict] = []
        grew_types: list = []
        if args.trace:
            import tracemalloc

            tracemalloc.start()
        async with app.run_test(size=(160, 45)) as pilot:
            t0 = time.monotonic()
            next_sample = t0
            while not source.finished:
                now = time.monotonic()
                if args.trace and snap is None and now - t0 >= args.settle * 60:
                    snap = tracemalloc.take_snapshot()
                    types0 = _types()
                if now >= next_sample:
                    samples.append({"t_s": round(now - t0, 1), "rss_mb": round(proc.memory_info().rss / 2**20, 1),
                                    "events": source.bus.published, "requests": source.requests,
                                    "load_1m": round(os.getloadavg()[0], 2), "py_blocks": sys.getallocatedblocks(),
                                    **_malloc_mb()})
                    if args.arenas:
                        samples[-1].update(_pymalloc())
                    if args.trace:
                        samples[-1]["traced_mb"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 2)
                    next_sample += args.sample
                await pilot.pause(0.5)
            if snap is not None:  # what grew after --settle, by source line (the app is still up)
                for st in tracemalloc.take_snapshot().compare_to(snap, "lineno")[:15]:
                    f = st.traceback[0]
                    top.append({"where": f"{f.filename}:{f.lineno}", "grew_kb": round(st.size_diff / 1024, 1),
                                "blocks": st.count_diff})
                types1 = _types()
                grew_types = sorted(((types1.get(k, 0) - types0.get(k, 0), k) for k in set(types0) | set(types1)),
                                    reverse=True)[:15]
            await pilot.press("q")
        recorder.close()
        q = max(1, len(samples) // 4)
        first = sum(s["rss_mb"] for s in samples[:q]) / q
        last = sum(s["rss_mb"] for s in samples[-q:]) / q
        after = [s for s in samples if s["t_s"] >= args.settle * 60]
        growth = round(after[-1]["rss_mb"] - after[0]["rss_mb"], 1) if len(after) >= 2 else None
        # the same growth from the mean of the first minute after --settle to the mean of the last minute:
        # one sample at each end moves with what is in flight and where the allocator was when it was taken
        head = [s["rss_mb"] for s in after if s["t_s"] < args.settle * 60 + 60]
        tail = [s["rss_mb"] for s in after if s["t_s"] >= after[-1]["t_s"] - 60]
        growth_mean = round(sum(tail) / len(tail) - sum(head) / len(head), 2) if len(after) >= 2 else None
        loads = [s["load_1m"] for s in samples]
        return {"benchmark": "soak", "rss_growth_after_settle_mb": growth,
                "rss_growth_after_settle_minute_means_mb": growth_mean, "settle_minutes": args.settle,
                "rss_at_settle_mb": after[0]["rss_mb"] if after else None,
                "rss_end_mb": samples[-1]["rss_mb"] if samples else None,
                "load_1m_min_max": [min(loads), max(loads)] if loads else None, "minutes": args.minutes, "streams": args.streams, "requests": source.requests,
                "events": source.bus.published, "recording_mb": round(os.path.getsize(recorder.path) / 2**20, 1),
                "rss_first_quarter_mb": round(first, 1), "rss_last_quarter_mb": round(last, 1),
                "rss_growth_mb": round(last - first, 1), "samples": samples, "grew_most": top,
                "objects_grew": [{"type": k, "count": n} for n, k in grew_types]}
    finally:
        for sim in sims:
            sim.stop()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--sample", type=float, default=10)
    ap.add_argument("--settle", type=float, default=5, help="minutes before the growth is counted (default 5)")
    ap.add_argument("--trace", action="store_true", help="tracemalloc: what grew after --settle, by source line "
                    "(slows the app)")
    ap.add_argument("--arenas", action="store_true", help="also sample Python's allocator (arenas, used and free "
                    "bytes in them) with every RSS sample")
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args()
    result = asyncio.run(run(args))
    for k, v in result.items():
        if k not in ("samples", "grew_most", "objects_grew"):
            print(f"{k:22} {v}")
    for row in result["grew_most"]:
        print(f"  {row['grew_kb']:9.1f} KB {row['blocks']:+7d} blocks  {row['where']}")
    for row in result["objects_grew"]:
        print(f"  {row['count']:+9d} objects  {row['type']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
