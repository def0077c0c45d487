"""Worker processes (`--workers N`): events merged in time order, nothing lost, the same figures."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest

from conftest import SimProcess
from lanemon.workers.merge import Merger


def test_merger_releases_in_time_order_up_to_the_watermark():
    m = Merger([0, 1])
    m.push(0, 10, "a10")
    m.push(0, 30, "a30")
    assert m.ready() == []  # worker 1 not heard from yet: it may still send something before 10
    m.push(1, 20, "b20")
    assert m.ready() == ["a10", "b20"]  # watermark = min(30, 20)
    m.heartbeat(1, 40)
    assert m.ready() == ["a30"]
    m.push(0, 50, "a50")
    m.push(1, 45, "b45")
    m.finish(1)  # worker 1 is done: it no longer holds the watermark back
    assert m.ready() == ["b45", "a50"]
    assert m.pending == 0 and m.released == 5


def test_merger_keeps_arrival_order_for_equal_times_and_drains():
    m = Merger([0, 1])
    m.push(0, 5, "x")
    m.push(1, 5, "y")
    m.push(0, 9, "z")
    assert m.ready() == ["x", "y"]
    assert m.drain() == ["z"]


def _load(url: str, workers: int, rec, seed: int = 9):
    cmd = [sys.executable, "-m", "lanemon", "bench", "load", "--lane", f"A={url}", "--arrival", "poisson",
           "--rate", "25", "--duration", "4", "--seed", str(seed), "--output-len", "fixed:32",
           "--workers", str(workers), "--json", "--record", str(rec)]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.slow
def test_two_workers_record_every_event_and_match_one_process(tmp_path):
    from lanemon.measure.load import client_load, is_client_bound
    from lanemon.measure.metrics import request_metrics
    from lanemon.measure.records import assemble
    from lanemon.recording.reader import read_events
    from lanemon.workloads.bench.load import schedule

    sim = SimProcess("sglang-native", 0.05)
    try:
        expected = len(schedule("poisson", rate=25, duration=4, seed=9))
        errors: dict[int, float] = {}
        starved: dict[int, str] = {}
        for workers in (1, 2):
            sim.clear_trace()
            rec = tmp_path / f"w{workers}.jsonl"
            result = _load(sim.url, workers, rec)
            lane = result["lanes"]["A"]["reps"][0]
            assert lane["requests"] == expected and lane["ok"] == expected, lane
            _, events, warnings = read_events(rec)
            assert not warnings
            # merged in time order: the recording's timestamps never go back
            ts = [ev.t for ev in events]
            assert ts == sorted(ts)
            records = [r for r in assemble(events) if r.meta.get("bench") == "load"]
            assert len(records) == expected and all(r.ok for r in records)
            assert len({r.req for r in records}) == expected  # request ids unique across workers
            # every process that timed sends watched its own loop: whether it was starved is in the recording
            watched = {ev.data.get("worker") for ev in events if ev.kind == "client_load"}
            assert watched == ({None} if workers == 1 else {None, 0, 1}), watched
            # nothing lost, nothing hidden: every request the simulator served is in the recording
            trace = {t["id"]: t for t in sim.trace()}
            served = {r.server_request_id for r in records}
            assert served <= set(trace)
            assert sum(request_metrics(r).output_tokens for r in records) == sum(
                trace[i]["completion_tokens"] for i in served)
            gaps = {r.req: request_metrics(r).ttft_s - trace[r.server_request_id]["ttft_s"] for r in records}
            # the client never sees the first token before the server sent it, starved or not
            assert min(gaps.values()) > -0.001, (workers, min(gaps.values()))
            # a request that ran while the recording says lanemon (main or a worker) was starved is client-bound:
            # its TTFT is lanemon's wake-up, not the lane's, and is not compared (tests/unstarved.py's rule)
            load = client_load(events)
            calm = [gaps[r.req] for r in records if not is_client_bound(r, load)]
            if len(calm) < expected // 2:
                starved[workers] = (f"{len(records) - len(calm)} of {len(records)} requests with {workers} "
                                    f"worker(s) ran while lanemon was starved (its recording's client_load)")
            else:
                errors[workers] = statistics.median(calm)
        # handing the requests to worker processes adds no latency of its own (on a starved machine the workers'
        # extra cores make it smaller): judged on the requests that ran in unstarved time
        if starved:
            pytest.skip("TTFT error with and without workers not compared: " + "; ".join(starved.values()))
        assert errors[2] < errors[1] + 0.015, errors
    finally:
        sim.stop()


@pytest.mark.slow
def test_a_worker_that_dies_leaves_error_events_not_a_gap(tmp_path):
    """Kill a worker mid-run: every request it held ends as an error event in the bus, counted."""
    import asyncio
    import os
    import signal
    import time

    from lanemon.bus import EventBus
    from lanemon.client.http import LaneClient
    from lanemon.config import LaneConfig
    from lanemon.events import TOKEN, Clock
    from lanemon.measure.records import assemble
    from lanemon.workers.pool import Item, WorkerPool

    # half speed: each 400-token request streams for about 4 s, and the kill waits until every one of them is
    # streaming (was: real time, about 8 s a request, and a fixed 1 s sleep before the kill)
    sim = SimProcess("sglang-native", 0.5)
    try:
        lane = LaneConfig("B", sim.url)

        async def go():
            bus, clock, seen = EventBus(), Clock(), []
            bus.subscribe(seen.append)
            pool = WorkerPool(2, [lane], clock, bus)
            await pool.start()
            client = LaneClient(lane, clock=clock, emit=bus.publish)
            items = [Item(0.0, f"B-x{i}", "completions",
                          client.build_body("completions", prompt="Write a long story.", max_tokens=400))
                     for i in range(6)]
            job = asyncio.ensure_future(pool.run_job("B", items))
            ids = {item.req_id for item in items}
            deadline = time.monotonic() + 60
            while {ev.req for ev in seen if ev.kind == TOKEN} != ids:  # mid-run: every request streaming
                assert not job.done() and time.monotonic() < deadline, sorted(ev.req for ev in seen if ev.kind == TOKEN)
                await asyncio.sleep(0.02)
            os.kill(pool._procs[1].pid, signal.SIGKILL)
            errors = await asyncio.wait_for(job, 60)
            await pool.aclose()
            await client.aclose()
            return errors, seen, pool.failures

        errors, seen, failures = asyncio.run(go())
        recs = {r.req: r for r in assemble(seen)}
        assert set(recs) == {f"B-x{i}" for i in range(6)}  # every request has a record
        dead = [r for r in recs.values() if r.error and "worker 1" in str(r.error.message)]
        assert len(dead) == 3 and errors >= 3 and failures, (errors, failures)
        assert all(r.token_ns for r in dead)  # killed mid-stream: each had tokens before its error
        assert all(r.ok for r in recs.values() if r not in dead)
    finally:
        sim.stop()


@pytest.mark.slow
@pytest.mark.xdist_group("ray")  # one Ray runtime at a time (conftest.py)
def test_ray_backend_runs_the_same_job_through_local_ray_actors(tmp_path):
    """Two Ray actors in a local Ray runtime (the multi-host path, exercised on one machine)."""
    pytest.importorskip("ray", reason="Ray is not installed (pip install 'lanemon[ray]')")
    import os
    import time

    from lanemon.measure.records import assemble
    from lanemon.recording.reader import read_events
    from lanemon.workloads.bench.load import schedule
    from ray_procs import follow_stderr, worker_nice

    sim = SimProcess("sglang-native", 0.05)
    try:
        rec = tmp_path / "ray.jsonl"
        cmd = [sys.executable, "-m", "lanemon", "bench", "load", "--lane", f"A={sim.url}", "--arrival", "constant",
               "--rate", "10", "--duration", "3", "--output-len", "fixed:16", "--workers", "2",
               "--workers-backend", "ray", "--json", "--record", str(rec)]
        env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        err = follow_stderr(p)
        lines, joined, reader = err.lines, err.joined, err.reader
        deadline = time.monotonic() + 150  # bounded: a run that never joins fails on its exit code below
        while not joined.wait(0.05) and reader.is_alive() and time.monotonic() < deadline:
            pass
        nice = worker_nice() if joined.is_set() else None
        out = p.stdout.read()
        p.wait(timeout=150)
        reader.join(10)
        assert p.returncode == 0, "".join(lines)[-3000:]
        # its two actors ran at the priority of the runtime it started, not Ray's 15 nicer (ray_pool.WORKER_ENV)
        assert nice and len(nice) == 2 and set(nice.values()) == {os.getpriority(os.PRIO_PROCESS, 0)}, nice
        expected = len(schedule("constant", rate=10, duration=3))
        lane = json.loads(out)["lanes"]["A"]["reps"][0]
        assert lane["requests"] == expected and lane["ok"] == expected, lane
        _, events, _ = read_events(rec)
        assert [ev.t for ev in events] == sorted(ev.t for ev in events)
        recs = [r for r in assemble(events) if r.meta.get("bench") == "load"]
        assert len(recs) == expected and all(r.ok for r in recs)
    finally:
        sim.stop()


def test_opening_burst_counts_the_first_wave_only():
    from lanemon.workers.pool import opening_burst

    assert opening_burst([]) == 0
    assert opening_burst([0.0] * 64 + [3.0] * 64) == 64  # one wave at once, the next later
    assert opening_burst([0.5, 0.52, 0.56, 1.0]) == 2  # within 50 ms of the first scheduled
    assert opening_burst([i / 20 for i in range(100)]) == 1  # a steady 20/s: nothing to open ahead
