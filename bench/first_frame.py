"""First frame of `lanemon demo`: from starting it in a WxH tmux pane to the lane cards on screen (capture-pane
every 20 ms).  usage: python bench/first_frame.py SRC W H RUNS  (SRC: the src/ folder to run, e.g. $PWD/src)"""
import os, statistics, subprocess, sys, time
src, w, h, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
py = "/work/main/.venv/bin/python"
out = []
for i in range(runs):
    name = f"ff{os.getpid()}"
    cmd = f"cd /tmp && unset PYTHONDONTWRITEBYTECODE; PYTHONPATH={src} exec {py} -m lanemon demo --no-record"
    t0 = time.perf_counter()
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", w, "-y", h, cmd], check=True)
    seen = None
    while time.perf_counter() - t0 < 30:
        txt = subprocess.run(["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True).stdout
        if "TTFT" in txt and "decode" in txt:
            seen = time.perf_counter() - t0
            break
        time.sleep(0.02)
    subprocess.run(["tmux", "send-keys", "-t", name, "q"])
    time.sleep(1.0)
    subprocess.run(["tmux", "kill-session", "-t", name], stderr=subprocess.DEVNULL)
    out.append(seen)
    print(f"run {i}: {seen if seen is None else round(seen, 2)} s  load1 {os.getloadavg()[0]:.1f}", flush=True)
    time.sleep(1.0)
ok = [x for x in out if x is not None]
print(f"median {statistics.median(ok):.2f} s  min {min(ok):.2f}  max {max(ok):.2f}  runs {len(ok)}/{runs}  src {src}")
