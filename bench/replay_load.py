#!/usr/bin/env python3
"""Replay load benchmark: generate a big realistic recording, then time opening,
folding and seeking it the way ``lanemon replay`` does (no terminal needed).

    python bench/replay_load.py                      # 1,000,000 events in a temp dir
    python bench/replay_load.py --events 200000 --keep /tmp/r.jsonl

The recording is two lanes (A, B) probing once a second with streamed 64-token
requests, a bench-cell marker every 10 minutes and a race (two racing requests
between start/end markers) every 30 minutes, some HTTP errors and probe
failures: the mix a long `lanemon demo`/`bench` session writes.

What is measured (each in a fresh process state, wall clock):

* ``open``: ``ReplaySession(path)``: header + the seek index (one pass over
  the file reading byte offsets, times and markers; no event is decoded);
* ``first frame``: open + the first 500 events folded into a ``SessionState``;
* ``full fold``: the whole recording published on the bus and folded into
  ``SessionState``, ``RaceState`` and the ``RequestTimeline``, with the
  app's snapshots at every checkpoint (= ``--speed max`` to the end, no UI);
* ``seek``: after the full fold, seeks backwards to the middle, -10 s, a
  marker, the start, then forward +10 s and to the end;
* peak RSS (``ru_maxrss``) after each stage.

Wall-clock and CPU time (``process_time``) are both printed: on a shared,
busy machine the CPU figures are the ones that compare across runs.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import orjson

MS = 1_000_000
S = 1_000_000_000


def rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux: ru_maxrss is KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def generate(path: Path, n_events: int, seed: int = 7, cell_every_s: int = 600, race_every_s: int = 1800) -> int:
    """Write a recording of about ``n_events`` events; returns the exact count.

    A bench-cell marker every ``cell_every_s`` and a race every ``race_every_s`` seconds."""
    import random

    from lanemon.recording.writer import make_header
    from lanemon.events import Event

    rnd = random.Random(seed)
    lanes = [
        {"name": "A", "url": "http://127.0.0.1:8001/v1", "model": "deepseek-v4.1-flash-exl3"},
        {"name": "B", "url": "http://127.0.0.1:8888/v1", "model": "deepseek-v4.1-flash"},
    ]
    profile = {"A": (0.17, 148.0), "B": (0.22, 134.0)}
    words = [" the", " lane", " harbour", " token", " model", " prefill", " decode", " cache", ",", "."]
    buf: list[tuple[int, int, bytes]] = []  # (t, seq, line) for the current window, sorted before writing
    seq = 0
    count = 0

    def emit(ev: Event) -> None:
        nonlocal seq
        seq += 1
        buf.append((ev.t, seq, orjson.dumps(ev.to_json_obj()) + b"\n"))

    with path.open("wb") as fh:
        fh.write(orjson.dumps(make_header("demo", lanes)) + b"\n")
        for lane in lanes:
            emit(Event(0, "lane", lane["name"], None, dict(lane)))
        cycle = 0
        race_no = 0
        req_no = 0
        t_lane = {"A": 5 * MS, "B": 9 * MS}
        next_cell = cell_every_s * S
        next_race = race_every_s * S
        while count + len(buf) < n_events:
            horizon = min(t_lane.values())
            for name, start in list(t_lane.items()):
                if start > horizon + 2 * S:
                    continue
                ok = rnd.random() > 0.003
                lat = (11 if name == "A" else 18) / 1000 * (0.8 + 0.4 * rnd.random())
                if ok:
                    emit(Event(start, "probe", name, None, {"ok": True, "latency_s": round(lat, 4),
                                                           "models": [lanes[0 if name == "A" else 1]["model"]]}))
                else:
                    emit(Event(start, "probe", name, None, {"ok": False, "cls": "connect",
                                                           "message": "connection refused"}))
                    t_lane[name] = start + S
                    continue
                req_no += 1
                req = f"{name}-{req_no}"
                t = start + int(lat * S)
                emit(Event(t, "request", name, req, {"endpoint": "chat", "purpose": "probe", "max_tokens": 64,
                                                     "prompt_chars": 52}))
                ttft0, tps0 = profile[name]
                ttft = int(ttft0 * (0.9 + 0.3 * rnd.random()) * S)
                if rnd.random() < 0.004:
                    emit(Event(t + ttft, "error", name, req, {"cls": "http", "status": 503,
                                                              "message": "503 Service Unavailable: engine overloaded"}))
                    t_lane[name] = t + ttft + S
                    continue
                emit(Event(t + ttft - 2 * MS, "first_byte", name, req, {"status": 200}))
                step = int(S / (tps0 * (0.9 + 0.2 * rnd.random())))
                tt = t + ttft
                for _ in range(64):
                    emit(Event(tt, "token", name, req, {"text": rnd.choice(words)}))
                    tt += step
                emit(Event(tt, "usage", name, req, {"prompt_tokens": 24, "completion_tokens": 64,
                                                    "total_tokens": 88}))
                emit(Event(tt, "done", name, req, {"finish_reason": "length", "chunks": 64}))
                t_lane[name] = tt + S
            now = min(t_lane.values())
            if now >= next_cell:
                cycle += 1
                emit(Event(next_cell, "mark", None, None, {"label": "cell", "bench": "decode",
                                                           "cell": cycle, "concurrency": 1 + cycle % 4}))
                next_cell += cell_every_s * S
            if now >= next_race:
                race_no += 1
                t0 = next_race
                emit(Event(t0, "mark", None, None, {"label": f"race {race_no}", "bench": "race", "phase": "start",
                                                    "race": race_no, "prompt": "Write a haiku about lanes.",
                                                    "lanes": ["A", "B"], "max_tokens": 32}))
                end = t0
                for name in ("A", "B"):
                    req = f"race{race_no}-{name}"
                    emit(Event(t0 + MS, "request", name, req, {"endpoint": "completions", "purpose": "race",
                                                               "bench": "race", "race": race_no, "max_tokens": 32}))
                    tt = t0 + int(profile[name][0] * S)
                    for _ in range(32):
                        emit(Event(tt, "token", name, req, {"text": rnd.choice(words)}))
                        tt += int(S / profile[name][1])
                    emit(Event(tt, "done", name, req, {"finish_reason": "length", "chunks": 32}))
                    end = max(end, tt)
                emit(Event(end + MS, "mark", None, None, {"label": f"race {race_no}", "bench": "race",
                                                          "phase": "end", "race": race_no}))
                next_race += race_every_s * S
            # flush everything older than the slowest lane (nothing earlier can still come)
            cutoff = min(t_lane.values())
            if len(buf) > 20000:
                buf.sort()
                keep = [row for row in buf if row[0] >= cutoff]
                out = [row for row in buf if row[0] < cutoff]
                fh.write(b"".join(line for _, _, line in out))
                count += len(out)
                buf = keep
        buf.sort()
        fh.write(b"".join(line for _, _, line in buf))
        count += len(buf)
    return count


async def measure(path: Path, n: int) -> dict[str, float]:
    from lanemon.folds.race import RaceState
    from lanemon.sessions.sources import ReplaySession
    from lanemon.folds.dashboard import SessionState

    out: dict[str, float] = {"events": n, "file_mb": path.stat().st_size / 2**20}
    out["rss_before_mb"] = rss_mb()

    t0, c0 = time.perf_counter(), time.process_time()
    session = ReplaySession(path, speed=math.inf)
    out["open_s"] = time.perf_counter() - t0
    out["open_cpu_s"] = time.process_time() - c0
    out["rss_open_mb"] = rss_mb()
    state = SessionState([(d["name"], d.get("url", ""), d.get("model")) for d in session.lanes])
    races = RaceState()
    folds: list = [state, races]
    try:  # the dashboard's per-request timeline, where this tree has it
        from lanemon.folds.requests import RequestTimeline

        folds.append(RequestTimeline())
    except ImportError:
        pass
    for fold in folds:
        session.bus.subscribe(fold.apply)
    from lanemon.ui.app import copy_fold  # the app's own snapshot copy

    def snapshot():
        return [copy_fold(f.__dict__) for f in folds]

    def restore(snap) -> None:
        for fold, saved in zip(folds, snap):
            fold.__dict__.clear()
            fold.__dict__.update(copy_fold(saved))

    session.attach_state(snapshot, restore)

    # first frame: the dashboard draws after its first timer tick; we count 500 events folded
    first = asyncio.get_running_loop().create_future()

    def watch(_ev) -> None:
        if state.events >= 500 and not first.done():
            first.set_result(time.perf_counter())

    session.bus.subscribe(watch)
    t1, c1 = time.perf_counter(), time.process_time()
    await session.run()
    out["full_fold_cpu_s"] = time.process_time() - c1
    out["first_frame_s"] = out["open_s"] + (first.result() - t1 if first.done() else math.nan)
    out["full_fold_s"] = time.perf_counter() - t1
    out["fold_events_per_cpu_s"] = state.events / out["full_fold_cpu_s"]
    out["rss_fold_mb"] = rss_mb()
    assert state.events == n, (state.events, n)

    total = session.duration_ns
    seeks = [
        ("seek_back_to_middle_s", lambda: session.seek(total // 2)),
        ("seek_back_10s_s", lambda: session.seek_relative(-10.0)),
        ("seek_prev_marker_s", lambda: session.seek_marker(-1)),
        ("seek_forward_10s_s", lambda: session.seek_relative(10.0)),
        ("seek_to_start_s", lambda: session.seek(0)),
        ("seek_start_to_end_s", lambda: session.seek(total)),
        ("seek_end_to_90pct_s", lambda: session.seek(total * 9 // 10)),
    ]
    for name, do in seeks:
        t2, c2 = time.perf_counter(), time.process_time()
        await do()
        out[name] = time.perf_counter() - t2
        out[name[:-2] + "_cpu_s"] = time.process_time() - c2
    out["rss_peak_mb"] = rss_mb()
    out["snapshots"] = len(session.snapshots)
    out["load_avg_1min"] = os.getloadavg()[0]
    out["cpus"] = os.cpu_count() or 0
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, help="write the recording here and keep it (reused if it exists)")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "big.jsonl"
        t0 = time.perf_counter()
        if path.exists():
            n = sum(1 for _ in path.open("rb")) - 1
            print(f"reusing {path}: {n:,} events")
        else:
            n = generate(path, args.events)
            print(f"generated {path}: {n:,} events, {path.stat().st_size / 2**20:.0f} MiB "
                  f"in {time.perf_counter() - t0:.1f} s")
        # measure in a child process so generation's memory does not count towards peak RSS
        if os.environ.get("_LANEMON_BENCH_CHILD") != "1":
            import subprocess

            env = dict(os.environ, _LANEMON_BENCH_CHILD="1")
            return subprocess.call([sys.executable, __file__, "--keep", str(path)], env=env)
        result = asyncio.run(measure(path, n))
    for key, value in result.items():
        print(f"{key:24} {value:,.3f}" if isinstance(value, float) else f"{key:24} {value:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
