"""`bench load`: open-loop arrival schedules (pure) and a real run against the simulated lanes."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

import pytest

from lanemon.results.requests import RequestError
from lanemon.results.common import LoadConfig, to_json_obj
from lanemon.workloads.bench.load import (Arrival, LengthDist, LoadSpecError, cell_result, phase_of, read_trace,
                                          schedule)
from unstarved import assert_on_schedule


POISSON = {"rate": 20.0, "seed": 1, "duration": 30.0}
"""The open-loop Poisson run: 599 arrivals at 20 req/s over 30 s (it was a minute; what the run proves is that
the sends keep the seeded schedule, compared send by send with the schedule's own offsets, so half the arrivals
still judge it; the schedule's Poisson statistics are test_poisson_schedule_has_the_asked_rate_and_exponential_gaps'),
judged in windows of a quarter of the run (about 150 arrivals each)."""
WINDOW_S = POISSON["duration"] / 4
POISSON_TEST = "test_poisson_run_delivers_the_asked_rate_and_replays"


class BackgroundRun:
    """A `lanemon` command started now and read later: its stdout and stderr go to files (a pipe left unread
    would fill up and block it)."""

    def __init__(self, cmd: list[str], base) -> None:
        self.out_path, self.err_path = base / "stdout", base / "stderr"
        # its own XDG dirs: started by a module fixture, before conftest's per-test ones are set (it added its
        # run to the user's history catalogue)
        env = {**os.environ, **{f"XDG_{d}_HOME": str(base / "xdg" / d.lower()) for d in ("CONFIG", "DATA", "CACHE")}}
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=err, env=env)

    def result(self, timeout: float) -> subprocess.CompletedProcess:
        self.proc.wait(timeout)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, self.out_path.read_text(),
                                           self.err_path.read_text())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module", autouse=True)
def poisson_run(request, tmp_path_factory):
    """The 30 s open-loop run (:data:`POISSON`), started with the module's first test and read by the last one: it keeps
    a wall-clock schedule (that is what it tests), so it runs while the module's other tests do instead of
    after them.  Those are light (a 12 req/s and a 4 req/s run of 16-token replies, the rest pure); the sweep,
    which burns both cores, is in tests/test_bench_sweep.py.  Started only when its test was selected."""
    if not any(item.name == POISSON_TEST and item.module is request.module for item in request.session.items):
        yield None
        return
    base = tmp_path_factory.mktemp("poisson")
    cmd = [sys.executable, "-m", "lanemon", "bench", "load", "--demo", "--time-scale", "0.02", "--lanes", "A",
           "--arrival", "poisson", "--rate", str(POISSON["rate"]), "--duration", str(POISSON["duration"]),
           "--seed", str(POISSON["seed"]), "--output-len", "fixed:16", "--workers", "1", "--json",
           "--record", str(base / "poisson.jsonl")]
    run = BackgroundRun(cmd, base)
    try:
        yield run, base / "poisson.jsonl"
    finally:
        run.stop()


def test_constant_schedule_is_exact():
    s = schedule("constant", rate=4.0, requests=9)
    assert [a.offset_s for a in s] == [i / 4.0 for i in range(9)]
    s = schedule("constant", rate=4.0, duration=2.0)
    assert len(s) == 8 and s[-1].offset_s < 2.0


def test_poisson_schedule_has_the_asked_rate_and_exponential_gaps():
    rate = 20.0
    counts = [len(schedule("poisson", rate=rate, duration=60.0, seed=seed)) for seed in range(40)]
    # 60 s at 20/s: 1,200 expected per run; the mean of 40 runs is within 1 %
    assert abs(statistics.mean(counts) / (rate * 60) - 1) < 0.01, statistics.mean(counts)
    s = schedule("poisson", rate=rate, requests=5000, seed=1)
    gaps = [b.offset_s - a.offset_s for a, b in zip(s, s[1:])]
    # exponential: mean = sd = 1/rate (a constant schedule would have sd 0)
    assert abs(statistics.mean(gaps) * rate - 1) < 0.05
    assert abs(statistics.pstdev(gaps) * rate - 1) < 0.08
    assert schedule("poisson", rate=rate, requests=50, seed=7) == schedule("poisson", rate=rate, requests=50, seed=7)


def test_schedule_needs_a_bound_and_a_rate():
    with pytest.raises(LoadSpecError, match="--requests N or --duration"):
        schedule("poisson", rate=1.0)
    with pytest.raises(LoadSpecError, match="--rate"):
        schedule("constant", rate=0, requests=3)
    with pytest.raises(LoadSpecError, match="--arrival"):
        schedule("bursty", rate=1, requests=3)


def test_trace_is_replayed_relative_to_its_first_line(tmp_path):
    path = tmp_path / "trace.jsonl"
    path.write_text('{"t": 100.5, "input_tokens": 30}\n{"t": 100.0, "output_tokens": 5}\n\n{"t": 103}\n')
    trace = read_trace(path)
    assert trace == [Arrival(0.0, None, 5), Arrival(0.5, 30, None), Arrival(3.0, None, None)]
    assert len(schedule("trace", trace=trace, duration=1.0)) == 2
    assert len(schedule("trace", trace=trace, requests=1)) == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"t": 1}\n{"t": "soon"}\n')
    with pytest.raises(LoadSpecError, match="line 2"):
        read_trace(bad)
    neg = tmp_path / "neg.jsonl"
    neg.write_text('{"t": 1, "input_tokens": -4}\n')
    with pytest.raises(LoadSpecError, match="line 1"):
        read_trace(neg)


def test_length_distributions(tmp_path):
    import random

    rng = random.Random(0)
    assert LengthDist.parse("fixed:128").sample(rng) == 128
    u = [LengthDist.parse("uniform:10,20").sample(rng) for _ in range(500)]
    assert min(u) == 10 and max(u) == 20
    n = [LengthDist.parse("normal:200,20").sample(rng) for _ in range(2000)]
    assert abs(statistics.mean(n) - 200) < 3 and 15 < statistics.pstdev(n) < 25
    f = tmp_path / "lens.txt"
    f.write_text("5\n7\n")
    assert {LengthDist.parse(f"file:{f}").sample(rng) for _ in range(100)} == {5, 7}
    for bad in ("fixed:0", "uniform:20,10", "normal:0,5", "gamma:3", "fixed:x", f"file:{tmp_path}/none"):
        with pytest.raises(LoadSpecError):
            LengthDist.parse(bad)


def test_phases_exclude_warmup_and_cooldown():
    assert [phase_of(t, 10, 2, 3) for t in (0, 1.99, 2, 6.99, 7, 9.9)] == [
        "warmup", "warmup", "measure", "measure", "cooldown", "cooldown"]


def test_cell_result_counts_only_the_measured_window_and_flags_a_late_client():
    from lanemon.measure.records import RequestRecord

    def rec(i, phase, lag, ok=True):
        r = RequestRecord(lane="A", req=f"r{i}")
        r.meta = {"phase": phase, "send_lag_s": lag}
        r.sent_ns = i * 100_000_000
        r.token_ns = [r.sent_ns + 50_000_000, r.sent_ns + 60_000_000]
        r.end_ns = r.sent_ns + 70_000_000
        r.finish_reason = "stop"
        if not ok:
            r.error = RequestError(cls="http", message="HTTP 500")
        return r

    cut = rec(4, "measure", 0.001)
    cut.finish_reason = None  # the stream ended without a finish_reason: truncated, never a completion
    records = [rec(0, "warmup", 0.001), rec(1, "measure", 0.001), rec(2, "measure", 0.002, ok=False),
               rec(3, "cooldown", 0.5), cut]
    res = cell_result(records, 10.0, LoadConfig(arrival="poisson", rate=0.4, warmup=2, cooldown=3))
    assert res.requests == 5 and res.measured == 3 and res.ok == 1 and res.errors == 2
    assert res.truncated == 1 and res.empty == 0
    assert res.scheduled_rate_rps == pytest.approx(3 / 5)
    assert res.client_behind is True  # one send 0.5 s late


@pytest.mark.slow
def test_open_loop_run_on_the_simulated_lanes_keeps_its_schedule_and_replays(tmp_path):
    """A real run: every scheduled request is sent and recorded, on time, and the recording reports the same."""
    rec = tmp_path / "load.jsonl"
    cmd = [sys.executable, "-m", "lanemon", "bench", "load", "--demo", "--time-scale", "0.02", "--lanes", "A",
           "--arrival", "poisson", "--rate", "12", "--duration", "6", "--seed", "5", "--output-len", "fixed:16",
           "--json", "--record", str(rec)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    lane = result["lanes"]["A"]["reps"][0]
    expected = len(schedule("poisson", rate=12, duration=6, seed=5))
    assert lane["requests"] == expected and lane["ok"] == expected
    assert lane["ttft_s"]["p50"] is not None
    # the recording holds every request and reports the same figures
    lines = rec.read_text().splitlines()
    requests = [e for e in map(json.loads, lines[1:]) if e["kind"] == "request" and e["data"].get("bench") == "load"]
    assert len(requests) == expected
    from lanemon.measure.records import assemble
    from lanemon.measure.views import attach_engine_views
    from lanemon.recording.reader import read_events
    from lanemon.workloads.bench.load import load_results

    _, events, _ = read_events(rec)
    again = to_json_obj(attach_engine_views(load_results(events), events))  # as the run's results() does
    assert again["lanes"]["A"]["reps"][0] == lane
    # and the report shows it (md), from the file alone
    md = subprocess.run([sys.executable, "-m", "lanemon", "report", str(rec), "--format", "md"], capture_output=True,
                        text=True, timeout=60)
    assert md.returncode == 0, md.stderr
    assert "## Open-loop load" in md.stdout and f"| A | {expected} | {expected} | 0 |" in md.stdout
    # sends follow the schedule, judged where the recording says lanemon was not starved (last: it may skip)
    assert_on_schedule(events, lane, [r for r in assemble(events) if r.meta.get("bench") == "load"])



def delivery(sends_s: list[float], offsets_s: list[float], window_s: float) -> dict:
    """How well sends kept a schedule: the achieved rate over the whole run ((n-1) / first-to-last send), the
    schedule's own, and per ``window_s`` window of the schedule how many requests were sent in it against how
    many were scheduled in it (sends on their own clock: the first send is taken as on time)."""
    lags = [s - o for s, o in zip(sends_s, offsets_s)]
    shift = min(lags)  # the clock origin: the most punctual request is taken as on time
    sends, offs = sorted(sends_s), sorted(offsets_s)
    n = len(sends)
    rate = (n - 1) / (sends[-1] - sends[0])
    own = (len(offs) - 1) / (offs[-1] - offs[0])
    windows = []
    w = 0.0
    while w < offs[-1]:
        sched = sum(1 for o in offs if w <= o < w + window_s)
        sent = sum(1 for s in sends if w <= s - shift < w + window_s)
        windows.append((sched, sent))
        w += window_s
    return {"rate": rate, "schedule_rate": own, "windows": windows, "max_lag_s": max(lags) - shift}


def kept(d: dict, asked: float, rel: float = 0.05, max_lag_s: float = 1.0) -> bool:
    """Within ``rel`` of the asked rate and of the schedule's own, over the run and in every window, and no
    request later than ``max_lag_s`` (a catching-up burst after a long stall is not the asked rate)."""
    return (abs(d["rate"] / asked - 1) <= rel and abs(d["rate"] / d["schedule_rate"] - 1) <= rel
            and all(abs(sent - sched) <= rel * sched for sched, sent in d["windows"])
            and d["max_lag_s"] <= max_lag_s)


def test_delivery_check_fails_when_sends_lag():
    """The check of the open-loop Poisson run (the last test) is not vacuous: a client that falls behind, or stalls,
    fails it (its own schedule, rate and windows)."""
    rate, duration, w = POISSON["rate"], POISSON["duration"], WINDOW_S
    offs = [a.offset_s for a in schedule("poisson", rate=rate, duration=duration, seed=POISSON["seed"])]
    assert kept(delivery([o + 0.003 for o in offs], offs, w), rate)  # on time (a constant delay is no lag)
    # a little jitter (up to 50 ms late, as a busy machine gives) is still the rate
    jitter = [o + 0.05 * ((i * 7919) % 100) / 100 for i, o in enumerate(offs)]
    assert kept(delivery(jitter, offs, w), rate)
    # falling behind: every send 6 % later than its schedule (a client that manages 94 % of the rate)
    assert not kept(delivery([o * 1.06 for o in offs], offs, w), rate)
    # a client capped at 90 % of the rate (each send takes 1/(0.9 rate) s): behind by the end
    capped, t = [], 0.0
    for o in offs:
        t = max(t + 1 / (0.9 * rate), o)
        capped.append(t)
    assert not kept(delivery(capped, offs, w), rate)
    # a 2 s stall across the first window's end, then catching up in a burst: the run's rate holds, a window does not
    stalled = [max(o, w + 1.0) if w - 1.0 <= o < w + 1.0 else o for o in offs]
    d = delivery(stalled, offs, w)
    assert abs(d["rate"] / rate - 1) < 0.05 and not kept(d, rate)
    assert any(abs(sent - sched) > 0.05 * sched for sched, sent in d["windows"])  # the window alone sees it
    inside = [max(o, w + 2.0) if w + 0.5 <= o < w + 2.0 else o for o in offs]  # within one window: the lag sees it
    assert all(abs(sent - sched) <= 0.05 * sched for sched, sent in delivery(inside, offs, w)["windows"])
    assert not kept(delivery(inside, offs, w), rate)
    # a wrong schedule is caught too: the rate asked, 10 % more sent on time
    fast = [a.offset_s for a in schedule("poisson", rate=1.1 * rate, duration=duration, seed=POISSON["seed"])]
    assert not kept(delivery(fast, fast, w), rate)


def _sends(offsets, sent_s):
    from lanemon.measure.records import RequestRecord

    out = []
    for i, (o, t) in enumerate(zip(offsets, sent_s)):
        r = RequestRecord(lane="A", req=f"r{i}")
        r.meta, r.sent_ns = {"i": i, "scheduled_s": o}, int((1.0 + t) * 1e9)  # the run starts 1 s into the session
        out.append(r)
    return out


def _watched(span_s: float, starved: tuple[tuple[float, float], ...] = ()):
    """A recording's loop watch over the run (0.5 s windows from the session's start), starved in ``starved``
    (seconds into the run)."""
    from lanemon import events as schema
    from lanemon.events import Event
    from lanemon.measure.load import client_load

    evs, t = [], 0.0
    while t < span_s + 1.5:
        bound = any(1.0 + a < t + 0.5 and 1.0 + b > t for a, b in starved)
        evs.append(Event(int((t + 0.5) * 1e9), schema.CLIENT_LOAD, None, None,
                         {"t0": int(t * 1e9), "lag_ms": 300.0 if bound else 2.0, "bound": bound}))
        t += 0.5
    return client_load(evs)


def test_send_judge_sees_a_wrong_rate_or_order_and_only_skips_starved_time():
    """tests/unstarved.py, which the real runs' timing checks use: it judges the sends made where the recording
    says lanemon was not starved, and fails a scheduler that is off in rate or order there."""
    from unstarved import judge_sends

    offs = [a.offset_s for a in schedule("poisson", rate=12, duration=6, seed=5)]
    quiet = _watched(6)
    ok = judge_sends(_sends(offs, [o + 0.004 for o in offs]), quiet)
    assert ok.enough and ok.verdict() == "" and len(ok.judged) == len(offs) and ok.starved_s == 0
    # a scheduler 5 % slow (11.4 req/s for 12), or 5 % fast: late against the schedule two seconds in
    for k in (1.05, 0.95):
        bad = judge_sends(_sends(offs, [o * k for o in offs]), quiet)
        assert bad.enough and bad.verdict(), k
    # two sends swapped (0.3 s apart): out of order is late against its own schedule
    swapped = [o for o in offs]
    j = next(i for i in range(len(offs) - 1) if offs[i + 1] - offs[i] > 0.15)
    swapped[j] = offs[j + 1] + 0.15
    assert judge_sends(_sends(offs, swapped), quiet).verdict()
    # starved from 2 to 3 s (the recording says so): the sends due then go out at 3 s in a burst; not judged,
    # the rest is, and kept the schedule
    burst = [max(o, 3.0) if 2.0 <= o < 3.0 else o for o in offs]
    starved = judge_sends(_sends(offs, burst), _watched(6, ((2.0, 3.0),)))
    assert starved.enough and starved.verdict() == "" and 0 < len(starved.judged) < len(offs)
    assert starved.starved_s == pytest.approx(1.0, abs=0.01)
    # the same burst where the recording says nothing was starved: judged, and late
    assert judge_sends(_sends(offs, burst), quiet).verdict()
    # starved throughout, or never watched: not enough to judge (the caller skips and says why)
    from lanemon.measure.load import ClientLoad

    for load in (_watched(6, ((0.0, 7.0),)), ClientLoad()):
        none = judge_sends(_sends(offs, burst), load)
        assert not none.enough and not none.judged and "0 of 69 sends" in none.why_not_judged()


def test_multi_turn_arrivals_carry_their_history(tmp_path):
    """--turns 3: every arrival is a conversation of three chat requests, each longer than the one before."""
    rec = tmp_path / "turns.jsonl"
    cmd = [sys.executable, "-m", "lanemon", "bench", "load", "--demo", "--time-scale", "0.05", "--lanes", "B",
           "--arrival", "constant", "--rate", "4", "--requests", "4", "--turns", "3", "--output-len", "fixed:16",
           "--json", "--record", str(rec)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lane = json.loads(out.stdout)["lanes"]["B"]["reps"][0]
    assert lane["requests"] == 12 and lane["ok"] == 12
    assert set(lane["ttft_p50_s_by_turn"]) == {"1", "2", "3"}
    reqs = [e["data"] for e in map(json.loads, rec.read_text().splitlines()[1:])
            if e["kind"] == "request" and e["data"].get("bench") == "load"]
    assert all(r["endpoint"] == "chat" for r in reqs)
    by_conv: dict[int, list] = {}
    for r in reqs:
        by_conv.setdefault(r["i"], []).append((r["turn"], r["prompt_chars"]))
    assert len(by_conv) == 4
    for turns in by_conv.values():
        turns.sort()
        assert [t for t, _ in turns] == [1, 2, 3]
        assert turns[0][1] < turns[1][1] < turns[2][1]  # the history grows


def test_multi_turn_is_refused_with_workers():
    out = subprocess.run([sys.executable, "-m", "lanemon", "bench", "load", "--demo", "--rate", "1", "--requests", "1",
                          "--turns", "2", "--workers", "2", "--headless", "--no-record"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "--workers 1" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.slow
@pytest.mark.timeout(300)  # waits for the run started with the module's first test
def test_poisson_run_delivers_the_asked_rate_and_replays(poisson_run):
    """Issue 13: open-loop Poisson at 20 req/s for 30 s (:data:`POISSON`) delivers 20 req/s within 5 %, every
    request recorded, and the recording reports the same figures.  20 req/s of 16-token replies at 50x speed keeps
    the simulated lane far from its limit (about 0.2 requests in flight), so the sends are lanemon's to keep."""
    rate, seed, duration = POISSON["rate"], POISSON["seed"], POISSON["duration"]
    run, rec = poisson_run  # started with the module's first test (the fixture above)
    out = run.result(timeout=300)
    assert out.returncode == 0, out.stderr
    lane = json.loads(out.stdout)["lanes"]["A"]["reps"][0]
    arrivals = schedule("poisson", rate=rate, duration=duration, seed=seed)
    # the seeded schedule itself is a Poisson draw: its own rate is near the asked one (599 for 600)
    assert len(arrivals) / duration == pytest.approx(rate, rel=0.02)
    assert lane["requests"] == lane["measured"] == lane["ok"] == len(arrivals)
    # every scheduled request is in the recording, once, with its schedule; and sent when it was due
    from lanemon.measure.records import assemble
    from lanemon.recording.reader import read_events
    from lanemon.workloads.bench.load import load_results

    _, events, _ = read_events(rec)
    recs = [r for r in assemble(events) if r.meta.get("bench") == "load"]
    assert sorted(r.meta["i"] for r in recs) == list(range(len(arrivals)))
    assert all(r.meta["scheduled_s"] == pytest.approx(arrivals[r.meta["i"]].offset_s, abs=1e-6) for r in recs)
    d = delivery([r.sent_ns / 1e9 for r in recs], [r.meta["scheduled_s"] for r in recs], WINDOW_S)
    from lanemon.measure.load import client_load

    starved = client_load(events).starved_s(*lane["measured_window_ns"]) / duration
    if starved < 0.02:  # lanemon had the CPU it needed (its recording says so): the rate is its to keep
        assert lane["sent_rate_rps"] == pytest.approx(rate, rel=0.05), (lane, starved)
        assert kept(d, rate), (d, starved)
    else:
        # starved beside CPU hogs (seen: 15 req/s sent for 20 asked beside four): it may fall behind, and then
        # it must say so -- never a missed schedule reported as kept
        assert kept(d, rate) or lane["client_behind"] is True, (d, lane["send_lag_s"], starved)
    # the recording reports what the run reported (the engine's views attached as the run's results() does)
    from lanemon.measure.views import attach_engine_views

    assert to_json_obj(attach_engine_views(load_results(events), events))["lanes"]["A"]["reps"][0] == lane
    assert_on_schedule(events, lane, recs)  # each send made in unstarved time was on time (last: it may skip)
