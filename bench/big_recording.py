"""Make a big recording (issue 24 item 7): the shipped decode bench, every token chunk split into K chunks
spread evenly over the gap before it, so the file keeps the bench's marks, cells and requests and grows to N
events (1.5 M events is ~110 MB).  Then measure what ``report`` and ``export`` cost on it::

    python bench/big_recording.py /tmp/big.jsonl --events 1500000
    /usr/bin/time -v lanemon report /tmp/big.jsonl -f json -o /tmp/big.json     # "Maximum resident set size"
    /usr/bin/time -v lanemon export /tmp/big.jsonl -o /tmp/big.csv

``--measure`` runs both in child processes and prints wall time and peak RSS (``resource.getrusage``).
"""

from __future__ import annotations

import argparse
import math
import resource
import subprocess
import sys
import time
from pathlib import Path

import orjson

SAMPLE = Path(__file__).resolve().parent.parent / "sample_sessions" / "decode.jsonl"


def write_big(out: Path, events: int, sample: Path = SAMPLE) -> int:
    """Write the stretched recording; return how many events it holds."""
    lines = sample.read_bytes().splitlines()
    header, body = lines[0], lines[1:]
    tokens = sum(1 for line in body if b'"kind":"token"' in line)
    k = max(1, math.ceil((events - (len(body) - tokens)) / max(tokens, 1)))
    last: dict[str, int] = {}
    n = 0
    with out.open("wb") as fh:
        fh.write(header + b"\n")
        for line in body:
            if b'"kind":"token"' not in line:
                ev = orjson.loads(line)
                if ev.get("kind") == "first_byte" and ev.get("req"):
                    last[ev["req"]] = ev["t"]
                fh.write(line + b"\n")
                n += 1
                continue
            ev = orjson.loads(line)
            prev = last.get(ev["req"], ev["t"] - 1_000_000)
            last[ev["req"]] = ev["t"]
            for j in range(1, k + 1):
                copy = dict(ev, t=prev + (ev["t"] - prev) * j // k)
                fh.write(orjson.dumps(copy) + b"\n")
                n += 1
    return n


def write_many(out: Path, events: int, sample: Path = SAMPLE, *, thin: int = 10) -> int:
    """The other shape of a big recording: many short requests.  The sample's body (every *thin*-th token
    chunk kept) is repeated with fresh request ids and later times until the file holds *events* events."""
    lines = sample.read_bytes().splitlines()
    header = lines[0]
    body, seen = [], {}
    for line in lines[1:]:
        ev = orjson.loads(line)
        if ev.get("kind") == "token":
            seen[ev.get("req")] = seen.get(ev.get("req"), 0) + 1
            if seen[ev["req"]] % thin != 1:
                continue
        body.append(ev)
    span = max(ev["t"] for ev in body) + 1_000_000_000
    n = 0
    with out.open("wb") as fh:
        fh.write(header + b"\n")
        copy = 0
        while n < events:
            for ev in body:
                ev2 = dict(ev, t=ev["t"] + copy * span)
                if ev2.get("req"):
                    ev2["req"] = f"{ev['req']}~{copy}"
                fh.write(orjson.dumps(ev2) + b"\n")
                n += 1
            copy += 1
    return n


def measure(path: Path) -> None:
    for argv in (["report", str(path), "-f", "json", "-o", "/dev/null"],
                 ["export", str(path), "--format", "csv", "-o", str(path.with_suffix(".csv"))]):
        code = ("import resource, sys, time; from lanemon.cli.main import main; t = time.perf_counter(); "
                f"rc = main({argv!r}); "
                "print(f'{time.perf_counter() - t:.1f} s, peak RSS '"
                "f'{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB, exit {rc}', file=sys.stderr)")
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        last = out.stderr.strip().splitlines()[-1] if out.stderr.strip() else ""
        print(f"{argv[0]:>6}: {last}  (wall incl. start-up {time.perf_counter() - t:.1f} s)")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--events", type=int, default=1_500_000)
    p.add_argument("--sample", type=Path, default=SAMPLE)
    p.add_argument("--many", action="store_true",
                   help="many short requests (the body repeated, 1 token chunk in 10 kept) instead of long ones")
    p.add_argument("--measure", action="store_true", help="then run report and export on it, peak RSS and time")
    args = p.parse_args()
    n = (write_many if args.many else write_big)(args.out, args.events, args.sample)
    print(f"{args.out}: {n:,} events, {args.out.stat().st_size / 1e6:.0f} MB")
    if args.measure:
        measure(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
