"""`lanemon demo`'s own CPU, two checkouts alternating (A B A B), per thread: is a change a saving?

    python bench/demo_cpu_ab.py SRC_A SRC_B [--size 160x45] [--seconds 30] [--settle 10] [--rounds 2]

Each run starts `lanemon demo --no-record` from SRC (a src/ folder, e.g. a `git archive` of the old commit and
$PWD/src) in a detached tmux pane of the given size, waits SETTLE s, then reads utime+stime of the lanemon process
(/proc/PID/stat: not its two simulator children, which are separate processes) and of each of its threads
(/proc/PID/task/*/stat, grouped by thread name) over SECONDS s.  Prints one line per run: % of a core for the
process and its threads, the load average; then the mean of each side and B/A.  Needs tmux and Linux's /proc."""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

PY = "/work/main/.venv/bin/python"
HZ = os.sysconf("SC_CLK_TCK")


def _ticks(path: str) -> int:
    with open(path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)


def _threads(pid: int) -> dict[str, int]:
    out: dict[str, int] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            key = "main" if tid == str(pid) else name
            out[key] = out.get(key, 0) + _ticks(f"/proc/{pid}/task/{tid}/stat")
        except OSError:
            pass  # a thread ended between the listing and the read
    return out


def _find_pid(session: str) -> int:
    for _ in range(200):
        pane = subprocess.run(["tmux", "display", "-p", "-t", session, "#{pane_pid}"], capture_output=True,
                              text=True).stdout.strip()
        if pane:
            cands = [pane] + subprocess.run(["pgrep", "-P", pane], capture_output=True, text=True).stdout.split()
            for p in cands:
                try:
                    with open(f"/proc/{p}/cmdline", "rb") as f:
                        if b"lanemon\0demo" in f.read():
                            return int(p)
                except OSError:
                    pass
        time.sleep(0.1)
    raise SystemExit("demo did not start")


def run_once(src: str, size: str, seconds: float, settle: float) -> dict[str, float]:
    cols, rows = size.split("x")
    name = f"meas-ab-{os.getpid()}-{time.monotonic_ns()}"
    cmd = f"cd /tmp && PYTHONPATH={src} exec {PY} -m lanemon demo --no-record"
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", cols, "-y", rows, cmd], check=True)
    try:
        pid = _find_pid(name)
        time.sleep(settle)
        t0, c0, th0 = time.monotonic(), _ticks(f"/proc/{pid}/stat"), _threads(pid)
        time.sleep(seconds)
        t1, c1, th1 = time.monotonic(), _ticks(f"/proc/{pid}/stat"), _threads(pid)
        span = t1 - t0
        res = {"process": 100 * (c1 - c0) / HZ / span}
        for k, v in th1.items():
            res[k] = 100 * (v - th0.get(k, 0)) / HZ / span
        return res
    finally:
        subprocess.run(["tmux", "send-keys", "-t", name, "q"], stderr=subprocess.DEVNULL)
        time.sleep(1.5)
        subprocess.run(["tmux", "kill-session", "-t", name], stderr=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("src_a")
    ap.add_argument("src_b")
    ap.add_argument("--size", default="160x45")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    runs: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for i in range(a.rounds):
        for side, src in (("A", a.src_a), ("B", a.src_b)) if i % 2 == 0 else (("B", a.src_b), ("A", a.src_a)):
            l0 = os.getloadavg()[0]
            r = run_once(src, a.size, a.seconds, a.settle)
            l1 = os.getloadavg()[0]
            runs[side].append(r)
            busy = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r.items(), key=lambda kv: -kv[1]) if v >= 0.05)
            print(f"{side} {a.size} round {i}: {busy} (% of a core; load {l0:.1f} -> {l1:.1f})", flush=True)
    ma = statistics.mean(r["process"] for r in runs["A"])
    mb = statistics.mean(r["process"] for r in runs["B"])
    print(f"{a.size}: A {ma:.2f} %  B {mb:.2f} %  B/A {mb / ma:.2f}  ({a.rounds} rounds of {a.seconds:.0f} s)")


if __name__ == "__main__":
    main()
