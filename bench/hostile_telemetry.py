"""What a hostile GPU telemetry endpoint costs a race and the live dashboard (issue 39, row 14).

    PYTHONPATH=src python bench/hostile_telemetry.py race MODE [SRC]
    PYTHONPATH=src python bench/hostile_telemetry.py tui MODE [SRC]

MODE: ``base`` (a sane one-GPU exposition), ``many`` (200,000 GPUs in 8 MiB), ``label`` (a 1 MB label),
``drip`` (race only: the sane body one byte every 0.2 s).  The endpoint is tests/hostile_telemetry.py's,
served on loopback; SRC (default: this checkout's src) is the lanemon put on PYTHONPATH, so an older tree
(``git archive REV src | tar -x -C /tmp/old``) can be measured the same way.

``race``: ``lanemon race --demo --time-scale 0.2 --max-tokens 16 --json --no-record --telemetry A=<endpoint>``;
prints its wall time and peak RSS (``os.wait4``: lanemon, or a simulator child if larger).
``tui``: ``lanemon live --lane A=<a simulated lane on port 18765> --telemetry A=<endpoint> --no-record`` in a
detached tmux pane of 100x30; after 5 s, lanemon's own CPU (% of one core) and peak RSS over 20 s (psutil)
and the panel's GPU row.  Needs tmux.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import hostile_telemetry as ht  # noqa: E402
from hostile_server import HostileServer  # noqa: E402

HANDLERS = {"base": lambda r: ht.text(ht.SANE), "many": lambda r: ht.text(ht.many_gpus()),
            "label": lambda r: ht.text(ht.big_label() + ht.SANE.encode()), "drip": lambda r: ht.dripping()}


def race(url: str, env: dict[str, str]) -> str:
    cmd = [sys.executable, "-m", "lanemon", "race", "--demo", "--time-scale", "0.2", "--max-tokens", "16", "--json",
           "--no-record", "--telemetry", f"A={url}"]
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    return (f"exit {os.waitstatus_to_exitcode(status)}, {time.monotonic() - t0:.1f} s, "
            f"peak RSS {usage.ru_maxrss / 1024:.0f} MB")


def tui(url: str, env: dict[str, str], name: str) -> str:
    import psutil

    sim = subprocess.Popen([sys.executable, "-m", "lanemon", "sim", "--profile", "tensorfold-exl3", "--port", "18765"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(4)
        inner = (f"PYTHONPATH={env['PYTHONPATH']} {sys.executable} -m lanemon live --no-record "
                 f"--lane A=http://127.0.0.1:18765/v1 --telemetry A={url}")
        subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "100", "-y", "30", inner], check=True)
        try:
            time.sleep(1)
            pid = int(subprocess.run(["tmux", "display", "-p", "-t", name, "#{pane_pid}"], capture_output=True,
                                     text=True).stdout)
            proc = psutil.Process(pid)
            if "lanemon" not in " ".join(proc.cmdline()):
                proc = next(c for c in proc.children(recursive=True) if "lanemon" in " ".join(c.cmdline()))
            time.sleep(5)
            c0, t0, peak = proc.cpu_times(), time.monotonic(), 0
            while time.monotonic() - t0 < 20:
                peak = max(peak, proc.memory_info().rss)
                time.sleep(0.2)
            c1, wall = proc.cpu_times(), time.monotonic() - t0
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name])
    finally:
        sim.terminate()
        sim.wait()
    cpu = (c1.user + c1.system) - (c0.user + c0.system)
    row = next((line.strip(" │") for line in screen.splitlines() if "GPU" in line), "no GPU row")
    return f"{100 * cpu / wall:.0f} % of a core over {wall:.0f} s, peak RSS {peak / 2 ** 20:.0f} MB; {row}"


def main() -> None:
    what, mode = sys.argv[1], sys.argv[2]
    src = sys.argv[3] if len(sys.argv) > 3 else str(ROOT / "src")
    env = dict(os.environ, PYTHONPATH=src)
    with HostileServer(HANDLERS[mode]) as srv:
        url = srv.url.replace("/v1", "/metrics")
        out = race(url, env) if what == "race" else tui(url, env, f"lanemon-hostile-telemetry-{os.getpid()}")
    print(f"{what} {mode} ({src}): {out}; load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
