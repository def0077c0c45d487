"""The peer comparison of issue 13: lanemon beside installed load generators, on the same simulated lane, offline.

    python bench/peers.py [--levels 1,16,64] [--reps 2] [--waves 2] [--min-requests 16]
                          [--input-tokens 32] [--output-tokens 48]
                          [--tools lanemon,lanemon-w2,guidellm,aiperf,inference-perf]
                          [--peers-dir ~/.cache/lanemon-peers] [--tokenizer DIR]
                          [--json peers.json] [--markdown peers.md]

One simulated lane (``python -m lanemon.sim``, a separate process) serves every
run.  For each rep, each level C and each tool (the tools' order rotates every
rep, so none always runs first), the tool is started as its own process and
sends N = max(C x waves, min-requests) streamed chat requests, C at a time
(closed loop), each a short prompt with a fixed output length.  Before every run
the simulator's trace is cleared; after it, every request the tool reports is
matched to the simulator's own record of it (GET /sim/trace):

* lanemon   -- through ``server_request_id`` in its recording (the simulator's
  ``x-sim-request-id`` header);
* guidellm  -- through the response id (``chatcmpl-...``) it keeps per request;
* aiperf    -- through the ``X-Request-ID`` header it sends (the simulator
  records it as ``client_request_id``);
* inference-perf -- through the response id in the stream it keeps per request
  (its synthetic data speaks only /v1/completions, so it alone sends there; the
  truth is the simulator's record of the same request either way).

Figures per tool and level:

* TTFT error, per request: |tool's TTFT - simulator's TTFT| (arrival at socket
  read -> first token written), p50 / p99 in ms over the matched requests of all
  reps; and, as a second reading that needs no matching, the difference of the
  percentiles of the same wave (tool's p50/p99 - simulator's p50/p99);
* CPU seconds per 1k streamed tokens of the *whole tool process*, start-up
  included (user + system time from ``wait4`` of the child: the process and every
  descendant it waited for), tokens counted by the simulator;
* peak RSS: ``ru_maxrss`` of the child (its largest single process) and the
  largest sum of RSS over the child's process tree, sampled every 50 ms (aiperf
  runs many processes);
* ``--help`` start-up: wall time of ``TOOL --help``, median of 5 after one warm run.

A tool that is not installed is skipped with one line.  lanemon runs through its
own CLI, in one of two ways, named in the table's column:

* ``lanemon``     -- ``lanemon bench decode --levels C`` in one process (closed
  loop: C requests in flight; a prompt file with N/C one-prompt categories so a
  level runs N requests; C connections warmed before the level);
* ``lanemon-wN``  -- ``lanemon bench load --workers N`` (e.g. ``--tools
  lanemon-w2``): N worker processes send and read, their events merged by the
  main process.  ``bench load`` is open loop, so the waves are a timed trace
  (wave k of C requests at k x ``--wave-gap``); the first wave is the same burst.

For lanemon's columns each request's error is also split in two on the one
monotonic clock both processes read (the simulator's ``t_arrival_mono``): send
stamp -> the simulator reading the request, and the simulator writing the first
token -> lanemon's read stamp (``in_ms_*`` / ``out_ms_*`` in the JSON).  guidellm and aiperf are run from their
virtual environments under ``--peers-dir`` (``<dir>/guidellm/bin/guidellm``,
``<dir>/aiperf/bin/aiperf``, ``<dir>/inference-perf/bin/inference-perf``, the last
built with Python >= 3.12), with a local tokenizer directory (``--tokenizer``):
guidellm and inference-perf with ``HF_HUB_OFFLINE=1``; aiperf without it (it refuses to resolve a
local tokenizer offline).  The peers' prompts are their own synthetic text of
``--input-tokens`` (fixed length, no spread); lanemon's is one fixed sentence of
about that length.  Nothing is downloaded.

The machine's load average is recorded beside every run: on a shared machine the
absolute figures carry that load, the side-by-side ratios less so.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from simproc import SimProcess  # noqa: E402  (the simulator as a child process, shared with the tests)

MODEL = "deepseek-v4.1-flash"
PROMPT = ("Write a short friendly note to a colleague about the weather this week, "
          "the team lunch on Friday, and the new coffee machine in the kitchen.")
TOOLS = ("lanemon", "guidellm", "aiperf", "inference-perf")
DEFAULT_PEERS = Path.home() / ".cache" / "lanemon-peers"
DEFAULT_TOKENIZERS = (Path.home() / ".cache" / "lanemon-vllm" / "model",)


# ---------------------------------------------------------------------------
# small pure helpers
# ---------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float | None:
    """The q-th percentile (linear interpolation, like numpy's default); None for no values."""
    if not values:
        return None
    s = sorted(values)
    k = (len(s) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def requests_for(level: int, waves: int, minimum: int) -> int:
    """N for a level: whole waves of C, at least ``minimum`` (rounded up to a whole number of waves)."""
    n = max(level * waves, minimum)
    return -(-n // level) * level


def match_errors(tool: dict[str, float], truth: dict[str, float]) -> list[float]:
    """Per-request TTFT error (s, tool - truth) for every key both sides know."""
    return [tool[k] - truth[k] for k in tool if k in truth]


def rnd(x: float | None, nd: int = 2) -> float | None:
    return None if x is None else round(x, nd)


# ---------------------------------------------------------------------------
# running one tool process
# ---------------------------------------------------------------------------


def _tree_rss(pid: int) -> int:
    import psutil

    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for q in procs:
        try:
            total += q.memory_info().rss
        except psutil.Error:
            pass
    return total


def run_child(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float) -> dict:
    """Run ``cmd``; its wall time, CPU (user+sys of it and its waited-for descendants), ``ru_maxrss`` and the
    peak RSS sum of its process tree (sampled every 50 ms)."""
    out = open(cwd / "stdout.txt", "wb")
    err = open(cwd / "stderr.txt", "wb")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
    peak = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            peak[0] = max(peak[0], _tree_rss(proc.pid))

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    killer = threading.Timer(timeout, proc.kill)
    killer.start()
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
        done.set()
        th.join()
        out.close()
        err.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return {"rc": proc.returncode, "wall_s": time.perf_counter() - t0, "cpu_s": ru.ru_utime + ru.ru_stime,
            "maxrss_mb": ru.ru_maxrss / 1024, "tree_peak_rss_mb": peak[0] / 2**20}


def tail(path: Path, n: int = 400) -> str:
    try:
        return path.read_text(errors="replace")[-n:].strip().replace("\n", " | ")
    except OSError:
        return ""


# ---------------------------------------------------------------------------
# the tools
# ---------------------------------------------------------------------------


class Tool:
    name = ""
    endpoint = "chat.completions"
    """The simulator's name for the endpoint the tool sends to (its trace records are filtered by it)."""

    def __init__(self, args) -> None:
        self.args = args

    def exe(self) -> str | None:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env["HF_HUB_OFFLINE"] = "1"
        env["TRANSFORMERS_OFFLINE"] = "1"
        env.pop("VIRTUAL_ENV", None)
        return env

    def help_cmd(self) -> list[str]:
        return [self.exe(), "--help"]

    def command(self, url: str, level: int, n: int, work: Path) -> list[str]:
        raise NotImplementedError

    def results(self, work: Path) -> dict[str, float]:
        """match key -> TTFT (s) of every request the tool reports as successful."""
        raise NotImplementedError


class Lanemon(Tool):
    name = "lanemon"
    key = "id"

    def exe(self) -> str | None:
        here = Path(sys.executable).with_name("lanemon")
        if not getattr(Lanemon, "_compiled", False):
            # the peers' packages were byte-compiled when pip installed them; an editable checkout is compiled
            # on first import -- at every run where PYTHONDONTWRITEBYTECODE is set (this sandbox sets it),
            # ~0.3 CPU-s of each run's start-up.  Compile it once, as `pip install` would have
            import compileall

            import lanemon

            compileall.compile_dir(str(Path(lanemon.__file__).parent), quiet=1)
            Lanemon._compiled = True
        return str(here) if here.exists() else shutil.which("lanemon")

    def command(self, url, level, n, work):
        cats = n // level
        lines = ['[set]', 'name = "peers"', f"max_tokens = {self.args.output_tokens}", ""]
        for i in range(cats):
            lines += ["[[prompt]]", f'id = "p-{i:03d}"', f'category = "c{i:03d}"', f'text = "{PROMPT}"', ""]
        (work / "prompts.toml").write_text("\n".join(lines))
        return [self.exe(), "bench", "decode", "--lane", f"A={url}", "--levels", str(level),
                "--prompts", str(work / "prompts.toml"), "--categories", "all", "--no-categories",
                "--max-tokens", str(self.args.output_tokens), "--chat", "--json",
                "--record", str(work / "run.jsonl")]

    part = "level"
    """``meta.part`` of the measured requests in the recording (the decode ladder's levels)."""

    def results(self, work):
        from lanemon.measure.metrics import request_metrics
        from lanemon.measure.records import assemble
        from lanemon.recording.reader import read_events

        _, events, _ = read_events(work / "run.jsonl")
        out = {}
        self.stamps: dict[str, tuple[int, int]] = {}
        for rec in assemble(events):
            if rec.meta.get("part") != self.part or not rec.ok or not rec.server_request_id:
                continue
            ttft = request_metrics(rec).ttft_s
            if ttft is not None and rec.sent_ns is not None and rec.token_ns:
                out[rec.server_request_id] = ttft
                self.stamps[rec.server_request_id] = (rec.sent_ns, rec.token_ns[0])
        return out


class LanemonWorkers(Lanemon):
    """lanemon's open-loop ``bench load`` with ``--workers N`` (tool name ``lanemon-wN``).

    ``bench decode`` (the ``lanemon`` column) runs its clients in one process and keeps C requests in flight
    (closed loop).  ``bench load`` is the workload that runs in worker processes; it is open loop, so the
    waves are a timed trace: wave k (C requests at once) at k x the wave gap.  The first wave is the same
    burst as the closed loop's; later waves start on the clock, not when the previous one ended (the gap
    must be longer than a wave, which each run checks: ``max_active`` from the simulator's trace).
    """

    part = "load"

    def __init__(self, args, workers: int) -> None:
        super().__init__(args)
        self.workers = workers
        self.name = f"lanemon-w{workers}"

    def command(self, url, level, n, work):
        lines = ['[set]', 'name = "peers"', f"max_tokens = {self.args.output_tokens}", "",
                 "[[prompt]]", 'id = "p-000"', 'category = "c000"', f'text = "{PROMPT}"', ""]
        (work / "prompts.toml").write_text("\n".join(lines))
        gap = wave_gap(self.args, level)
        with open(work / "waves.jsonl", "w") as fh:
            for i in range(n):
                fh.write(json.dumps({"t": round((i // level) * gap, 6)}) + "\n")
        return [self.exe(), "bench", "load", "--lane", f"A={url}", "--arrival", "trace",
                "--trace", str(work / "waves.jsonl"), "--prompts", str(work / "prompts.toml"),
                "--output-len", f"fixed:{self.args.output_tokens}", "--chat", "--workers", str(self.workers),
                "--json", "--record", str(work / "run.jsonl")]


def split_errors(stamps: dict[str, tuple[int, int]], trace: list[dict]) -> dict[str, list[float]] | None:
    """Where each lanemon TTFT error arises (ms): ``in`` -- from lanemon's send stamp to the simulator's arrival
    stamp (the request's bytes read from its socket), ``out`` -- from the simulator's first-token write to
    lanemon's read stamp.  Both processes stamp with CLOCK_MONOTONIC (``time.perf_counter``), but lanemon's
    stamps count from its own session start, so the offset between the clocks is taken from the request
    whose trip in was quickest: ``in`` is each request's trip in beyond that one's (its error = in + out)."""
    rows = []
    for t in trace:
        st = stamps.get(t.get("id"))
        if st is None or t.get("t_arrival_mono") is None or t.get("ttft_s") is None:
            continue
        arrival = t["t_arrival_mono"] * 1e9
        rows.append((arrival - st[0], st[1] - (arrival + t["ttft_s"] * 1e9)))
    if not rows:
        return None
    base = min(i for i, _ in rows)
    ins = [(i - base) / 1e6 for i, _ in rows]
    return {"in": ins, "out": [(i + o) / 1e6 - d for (i, o), d in zip(rows, ins)]}


def wave_gap(args, level: int) -> float:
    """Seconds between the waves of ``lanemon-wN`` (open loop): ``--wave-gap``, or a wave's length on the
    simulated lane with room to spare (16 streams decode at once; 48 tokens take about 3 s at 16)."""
    if args.wave_gap:
        return args.wave_gap
    rounds = -(-level // 16)
    return rounds * (0.5 + args.output_tokens / 12.0) * args.time_scale


class Guidellm(Tool):
    name = "guidellm"
    key = "response_id"

    def exe(self):
        p = self.args.peers_dir / "guidellm" / "bin" / "guidellm"
        return str(p) if p.exists() else None

    def command(self, url, level, n, work):
        a = self.args
        return [self.exe(), "run",
                "--backend", f"kind=openai_http,target={url},model={MODEL}",
                "--profile", f"kind=concurrent,streams={level}",
                "--constraint", f"kind=max_requests,count={n}",
                "--tokenizer", f"kind=hf_auto,model={a.tokenizer}",
                "--data", f"kind=synthetic_text,prompt_tokens={a.input_tokens},output_tokens={a.output_tokens}",
                "--output", f"kind=json,path={work / 'guidellm.json'}",
                "--disable-console-interactive"]

    def results(self, work):
        d = json.loads((work / "guidellm.json").read_text())
        out = {}
        for b in d["benchmarks"]:
            for r in b["requests"]["successful"]:
                if r.get("response_id") and r.get("time_to_first_token_ms") is not None:
                    out[r["response_id"]] = r["time_to_first_token_ms"] / 1000
        return out


class Aiperf(Tool):
    name = "aiperf"
    key = "client_request_id"

    def exe(self):
        p = self.args.peers_dir / "aiperf" / "bin" / "aiperf"
        return str(p) if p.exists() else None

    def env(self):
        env = super().env()
        env.pop("HF_HUB_OFFLINE", None)  # aiperf resolves even a local tokenizer through the hub client
        env.pop("TRANSFORMERS_OFFLINE", None)
        return env

    def command(self, url, level, n, work):
        a = self.args
        return [self.exe(), "profile", "--model", MODEL, "--url", url.removesuffix("/v1"),
                "--endpoint-type", "chat", "--streaming", "--tokenizer", str(a.tokenizer),
                "--concurrency", str(level), "--request-count", str(n),
                "--isl", str(a.input_tokens), "--osl", str(a.output_tokens),
                "--extra-inputs", "ignore_eos:true", "--use-server-token-count",
                "--artifact-dir", str(work / "aiperf"), "--ui", "none",
                "--no-server-metrics", "--no-gpu-telemetry"]

    def results(self, work):
        out = {}
        with open(work / "aiperf" / "profile_export.jsonl") as fh:
            for line in fh:
                r = json.loads(line)
                md, m = r.get("metadata", {}), r.get("metrics", {})
                if md.get("benchmark_phase") != "profiling" or r.get("error"):
                    continue
                ttft = m.get("time_to_first_token", {}).get("value")
                if md.get("x_request_id") and ttft is not None:
                    out[md["x_request_id"]] = ttft / 1000
        return out


class InferencePerf(Tool):
    """inference-perf (needs Python >= 3.12): its synthetic ``random`` data only speaks /v1/completions."""

    name = "inference-perf"
    key = "response_id"
    endpoint = "completions"
    RESP_ID = re.compile(r'"id"\s*:\s*"([^"]+)"')

    def exe(self):
        p = self.args.peers_dir / "inference-perf" / "bin" / "inference-perf"
        return str(p) if p.exists() else None

    def command(self, url, level, n, work):
        a = self.args
        inp, out = a.input_tokens, a.output_tokens
        cfg = f"""api: {{type: completion, streaming: true}}
server: {{type: vllm, model_name: {MODEL}, base_url: "{url.removesuffix('/v1')}", ignore_eos: true}}
tokenizer: {{pretrained_model_name_or_path: "{a.tokenizer}"}}
data:
  type: random
  input_distribution: {{min: {inp}, max: {inp}, mean: {inp}, std_dev: 0}}
  output_distribution: {{min: {out}, max: {out}, mean: {out}, std_dev: 0}}
load:
  type: concurrent
  stages: [{{num_requests: {n}, concurrency_level: {level}}}]
report:
  request_lifecycle: {{summary: true, per_stage: false, per_request: true}}
storage:
  local_storage: {{path: "{work / 'out'}"}}
"""
        (work / "config.yml").write_text(cfg)
        return [self.exe(), "--config_file", str(work / "config.yml")]

    def results(self, work):
        out = {}
        for r in json.loads((work / "out" / "per_request_lifecycle_metrics.json").read_text()):
            if r.get("error"):
                continue
            m = self.RESP_ID.search(r.get("response") or "")
            times = ((r.get("info") or {}).get("response_metrics") or {}).get("output_token_times") or []
            if m and times:
                out[m.group(1)] = times[0] - r["start_time"]
        return out


KINDS = {"lanemon": Lanemon, "guidellm": Guidellm, "aiperf": Aiperf, "inference-perf": InferencePerf}
LANEMON_WORKERS = re.compile(r"lanemon-w([1-9][0-9]?)")


def make_tool(name: str, args) -> Tool | None:
    """The tool called ``name`` (``lanemon-wN``: ``bench load --workers N``); None for an unknown name."""
    m = LANEMON_WORKERS.fullmatch(name)
    if m:
        return LanemonWorkers(args, int(m.group(1)))
    kind = KINDS.get(name)
    return kind(args) if kind else None


# ---------------------------------------------------------------------------
# one run, the aggregate, the table
# ---------------------------------------------------------------------------


def one_run(tool: Tool, sim: SimProcess, level: int, n: int, rep: int, root: Path, timeout: float) -> dict:
    work = root / f"{tool.name}-C{level}-r{rep}"
    work.mkdir(parents=True, exist_ok=True)
    sim.clear_trace()
    cmd = tool.command(sim.url, level, n, work)
    load0 = os.getloadavg()[0]
    child = run_child(cmd, tool.env(), work, timeout)
    load1 = os.getloadavg()[0]
    trace = [t for t in sim.trace() if t.get("endpoint") == tool.endpoint]
    (work / "sim_trace.json").write_text(json.dumps(trace))  # kept with --workdir: the truth of every request
    run = {"tool": tool.name, "level": level, "rep": rep, "requests": n, "command": cmd, **child,
           "load_avg_1m": [round(load0, 2), round(load1, 2)]}
    if child["rc"] != 0:
        run["failed"] = f"exit {child['rc']}: {tail(work / 'stderr.txt') or tail(work / 'stdout.txt')}"
        return run
    try:
        ttfts = tool.results(work)
    except (OSError, ValueError, KeyError) as exc:
        run["failed"] = f"could not read its results: {type(exc).__name__}: {exc}"
        return run
    truth = {t[tool.key]: t["ttft_s"] for t in trace
             if t.get(tool.key) and t.get("status") == "ok" and t.get("ttft_s") is not None}
    run["max_active"] = max((t.get("active_at_start") or 0 for t in trace), default=0)
    if run["max_active"] > level:
        run["overlap"] = f"{run['max_active']} requests in flight at once at C{level} (waves overlapped)"
    split = split_errors(tool.stamps, trace) if getattr(tool, "stamps", None) else None
    if split:
        run["split_ms"] = {part: [round(x, 3) for x in v] for part, v in split.items()}
        for part, v in split.items():
            run[f"{part}_ms_p50"], run[f"{part}_ms_p99"] = rnd(pct(v, 50)), rnd(pct(v, 99))
    tokens = sum(t.get("completion_tokens") or 0 for t in trace)
    errs = match_errors(ttfts, truth)
    tool_list, truth_list = list(ttfts.values()), list(truth.values())
    run.update({
        "reported_ok": len(ttfts), "trace_requests": len(trace), "matched": len(errs),
        "tokens_streamed": tokens,
        "errors_s": [round(e, 6) for e in errs],
        "tool_ttft_p50_s": pct(tool_list, 50), "tool_ttft_p99_s": pct(tool_list, 99),
        "truth_ttft_p50_s": pct(truth_list, 50), "truth_ttft_p99_s": pct(truth_list, 99),
        "cpu_s_per_1k_tokens": child["cpu_s"] / tokens * 1000 if tokens else None,
    })
    return run


def aggregate(runs: list[dict]) -> dict:
    ok = [r for r in runs if "failed" not in r]
    if not ok:
        return {"runs": len(runs), "failed": len(runs)}
    errs = [e * 1000 for r in ok for e in r["errors_s"]]
    d50 = [(r["tool_ttft_p50_s"] - r["truth_ttft_p50_s"]) * 1000 for r in ok if r["tool_ttft_p50_s"] is not None]
    d99 = [(r["tool_ttft_p99_s"] - r["truth_ttft_p99_s"]) * 1000 for r in ok if r["tool_ttft_p99_s"] is not None]
    tokens = sum(r["tokens_streamed"] for r in ok)
    split = {}
    for part in ("in", "out"):
        v = [x for r in ok for x in (r.get("split_ms") or {}).get(part, ())]
        if v:
            split[f"{part}_ms_p50"], split[f"{part}_ms_p99"] = rnd(pct(v, 50)), rnd(pct(v, 99))
    return {
        **split,
        "runs": len(runs), "failed": len(runs) - len(ok),
        "requests": sum(r["requests"] for r in ok), "matched": len(errs),
        "unmatched": sum(r["reported_ok"] - r["matched"] for r in ok),
        "ttft_abs_err_ms_p50": rnd(pct([abs(e) for e in errs], 50)),
        "ttft_abs_err_ms_p99": rnd(pct([abs(e) for e in errs], 99)),
        "ttft_signed_err_ms_min": rnd(min(errs)) if errs else None,
        "ttft_pct_diff_ms_p50": rnd(statistics.median(d50)) if d50 else None,
        "ttft_pct_diff_ms_p99": rnd(statistics.median(d99)) if d99 else None,
        "cpu_s": round(sum(r["cpu_s"] for r in ok), 3), "tokens_streamed": tokens,
        "cpu_s_per_1k_tokens": round(sum(r["cpu_s"] for r in ok) / tokens * 1000, 3) if tokens else None,
        "maxrss_mb": round(max(r["maxrss_mb"] for r in ok), 1),
        "tree_peak_rss_mb": round(max(r["tree_peak_rss_mb"] for r in ok), 1),
        "wall_s_median": round(statistics.median(r["wall_s"] for r in ok), 2),
        "load_avg_1m": [min(r["load_avg_1m"][0] for r in ok), max(r["load_avg_1m"][1] for r in ok)],
    }


def help_time(tool: Tool, runs: int = 5) -> float | None:
    cmd = tool.help_cmd()
    env = tool.env()
    times = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if r.returncode != 0:
            return None
        if i:  # the first run only warms the page cache
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _cell(v, fmt="{:+.1f}") -> str:
    return "n/a" if v is None else fmt.format(v)


def markdown(result: dict) -> str:
    tools = [t for t in result["tools"] if result["tools"][t].get("installed")]
    agg = result["aggregate"]
    lines = [f"| | {' | '.join(tools)} |", "|---|" + "---|" * len(tools)]
    for lvl in result["levels"]:
        row = []
        for t in tools:
            a = agg.get(t, {}).get(str(lvl), {})
            row.append("failed" if not a.get("matched") else
                       f"{_cell(a['ttft_abs_err_ms_p50'], '{:.1f}')} / {_cell(a['ttft_abs_err_ms_p99'], '{:.1f}')}")
        lines.append(f"| TTFT error p50 / p99 at C{lvl}, per request (ms) | {' | '.join(row)} |")
    for lvl in result["levels"]:
        row = []
        for t in tools:
            a = agg.get(t, {}).get(str(lvl), {})
            row.append("failed" if not a.get("matched") else
                       f"{_cell(a['ttft_pct_diff_ms_p50'])} / {_cell(a['ttft_pct_diff_ms_p99'])}")
        lines.append(f"| TTFT percentile difference p50 / p99 at C{lvl} (ms) | {' | '.join(row)} |")
    mid = str(result["cost_level"])
    for label, key, fmt in (("CPU-s per 1k streamed tokens", "cpu_s_per_1k_tokens", "{:.2f}"),
                            ("peak RSS, largest process (MB)", "maxrss_mb", "{:,.0f}"),
                            ("peak RSS, whole process tree (MB)", "tree_peak_rss_mb", "{:,.0f}")):
        row = [_cell(agg.get(t, {}).get(mid, {}).get(key), fmt) for t in tools]
        lines.append(f"| {label} at C{mid} | {' | '.join(row)} |")
    row = [_cell(result["tools"][t].get("help_s"), "{:.2f}") for t in tools]
    lines.append(f"| `--help` start-up (s) | {' | '.join(row)} |")
    return "\n".join(lines) + "\n"


def find_tokenizer(given: str | None) -> Path | None:
    cands = [Path(given)] if given else list(DEFAULT_TOKENIZERS)
    for c in cands:
        if (c / "tokenizer.json").exists() or (c / "tokenizer_config.json").exists():
            return c
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--levels", default="1,16,64", help="concurrency levels (default 1,16,64)")
    ap.add_argument("--reps", type=int, default=2, help="alternating repetitions (default 2)")
    ap.add_argument("--waves", type=int, default=2, help="requests per level = C x waves ... (default 2)")
    ap.add_argument("--min-requests", type=int, default=16, help="... but at least this many (default 16)")
    ap.add_argument("--input-tokens", type=int, default=32)
    ap.add_argument("--output-tokens", type=int, default=48, help="fixed output length (the simulator's "
                    "replies are at least 60 tokens, so every request runs to it)")
    ap.add_argument("--tools", default=",".join(TOOLS),
                    help="tools to run, in this order (default %(default)s); lanemon-wN (e.g. lanemon-w2) runs "
                         "lanemon's open-loop bench load with --workers N instead of bench decode in one process")
    ap.add_argument("--wave-gap", type=float, default=None, metavar="S",
                    help="lanemon-wN only: seconds between waves (default: a wave's length on the simulated lane "
                         "with room to spare, scaled by --time-scale)")
    ap.add_argument("--peers-dir", type=Path, default=DEFAULT_PEERS,
                    help="directory holding one virtual environment per peer (default ~/.cache/lanemon-peers)")
    ap.add_argument("--tokenizer", help="a local tokenizer directory for the peers (never downloaded)")
    ap.add_argument("--profile", default="tensorfold-exl3")
    ap.add_argument("--time-scale", type=float, default=1.0)
    ap.add_argument("--cost-level", type=int, default=16, help="the level whose CPU and RSS the table shows")
    ap.add_argument("--timeout", type=float, default=900, help="seconds one tool run may take (default 900)")
    ap.add_argument("--workdir", help="keep every run's files here (default: a temporary directory)")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--markdown", metavar="PATH")
    args = ap.parse_args()
    try:
        levels = [int(x) for x in args.levels.split(",")]
        if not levels or min(levels) < 1:
            raise ValueError
    except ValueError:
        print(f"peers: --levels must be positive whole numbers, not {args.levels!r}", file=sys.stderr)
        return 2
    names = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = [t for t in names if make_tool(t, args) is None]
    if unknown:
        print(f"peers: unknown tool {unknown[0]!r} (known: {', '.join(KINDS)}, lanemon-wN)", file=sys.stderr)
        return 2
    tok = find_tokenizer(args.tokenizer)
    args.tokenizer = tok
    tools: list[Tool] = []
    info: dict[str, dict] = {}
    for name in names:
        t = make_tool(name, args)
        if t.exe() is None:
            where = "on PATH" if name.startswith("lanemon") else f"no {args.peers_dir / name}/bin/{name}"
            if name == "inference-perf":
                where += "; it needs Python >= 3.12"
            print(f"peers: skipping {name}: not installed ({where})", flush=True)
            info[name] = {"installed": False}
            continue
        if not name.startswith("lanemon") and tok is None:
            print(f"peers: skipping {name}: no local tokenizer directory (--tokenizer DIR)", flush=True)
            info[name] = {"installed": True, "skipped": "no tokenizer"}
            continue
        tools.append(t)
        info[name] = {"installed": True, "exe": t.exe()}
    if not tools:
        print("peers: no tool to run", file=sys.stderr)
        return 1
    for t in tools:
        info[t.name]["help_s"] = rnd(help_time(t), 3)
        info[t.name]["version"] = version_of(t)
        print(f"{t.name:9} {info[t.name]['version'] or '?':10} --help {info[t.name]['help_s']} s", flush=True)
    root = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="lanemon-peers-"))
    root.mkdir(parents=True, exist_ok=True)
    try:
        sim = SimProcess(args.profile, args.time_scale, stderr=root / "sim.log")
    except RuntimeError as exc:
        print(f"peers: {exc}", file=sys.stderr)
        return 1
    runs: list[dict] = []
    started = datetime.now(timezone.utc)
    try:
        for rep in range(args.reps):
            for level in levels:
                n = requests_for(level, args.waves, args.min_requests)
                order = tools[rep % len(tools):] + tools[:rep % len(tools)]
                for t in order:
                    r = one_run(t, sim, level, n, rep, root, args.timeout)
                    runs.append(r)
                    if "failed" in r:
                        print(f"r{rep} C{level:<3} {t.name:9} FAILED {r['failed']}", flush=True)
                        continue
                    e = [abs(x) * 1000 for x in r["errors_s"]]
                    print(f"r{rep} C{level:<3} {t.name:9} matched {r['matched']:3}/{r['trace_requests']:<3} "
                          f"TTFT err p50 {pct(e, 50) or 0:7.2f} p99 {pct(e, 99) or 0:7.2f} ms  "
                          f"CPU {r['cpu_s']:6.2f} s ({r['cpu_s_per_1k_tokens'] or 0:.2f}/1k tok)  "
                          f"RSS {r['maxrss_mb']:6.0f}/{r['tree_peak_rss_mb']:6.0f} MB  wall {r['wall_s']:5.1f} s  "
                          f"load {r['load_avg_1m'][1]:.1f}" + (f"  OVERLAP: {r['overlap']}" if r.get("overlap") else "")
                          + (f"\n    error split (ms): send->arrival p50 {r['in_ms_p50']} p99 {r['in_ms_p99']}, "
                             f"first token write->read p50 {r['out_ms_p50']} p99 {r['out_ms_p99']}"
                             if "in_ms_p50" in r else ""), flush=True)
    finally:
        sim.stop()
    agg = {t.name: {str(lvl): aggregate([r for r in runs if r["tool"] == t.name and r["level"] == lvl])
                    for lvl in levels} for t in tools}
    result = {"benchmark": "peers", "started_utc": started.isoformat(timespec="seconds"),
              "finished_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "python": sys.version.split()[0], "cpus": os.cpu_count(), "profile": args.profile,
              "time_scale": args.time_scale, "levels": levels, "reps": args.reps, "waves": args.waves,
              "min_requests": args.min_requests, "input_tokens": args.input_tokens,
              "output_tokens": args.output_tokens, "tokenizer": str(tok) if tok else None,
              "cost_level": args.cost_level if args.cost_level in levels else levels[len(levels) // 2],
              "tools": info, "aggregate": agg, "runs": runs, "workdir": str(root)}
    table = markdown(result)
    print()
    print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(table)
    if not args.workdir:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def version_of(tool: Tool) -> str | None:
    if tool.name.startswith("lanemon"):
        from importlib.metadata import version

        try:
            return version("lanemon")
        except Exception:
            return None
    pip = Path(tool.exe()).with_name("python")
    try:
        r = subprocess.run([str(pip), "-c", f"from importlib.metadata import version; print(version('{tool.name}'))"],
                           capture_output=True, text=True, timeout=60)
        return r.stdout.strip() or None
    except (OSError, subprocess.TimeoutExpired):
        return None


if __name__ == "__main__":
    sys.exit(main())
