"""Load hosts without a cluster (issue 41): the clock offset, the version check, the heartbeat rule, which nodes
take workers, and a lost worker's requests (in flight: errors; not yet sent: not sent).  Pure and fast; the
cluster runs are tests/test_workers_cluster.py."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import msgspec
import pytest

from lanemon.workers.clocks import clock_offset, host_label, silent_workers, version_mismatch


def test_clock_offset_takes_the_round_trip_with_the_smallest_delay():
    # a worker 5_000 ns ahead; three round trips, the middle one the tightest (delay 40 ns)
    samples = [(0, 5_000 + 300, 1_000), (2_000, 5_000 + 2_020, 2_040), (3_000, 5_000 + 3_100, 3_900)]
    offset, unc = clock_offset(samples)
    assert offset == 5_000 and unc == 20
    # the true offset lies within half the delay whatever the split of the round trip
    offset, unc = clock_offset([(0, 5_000 + 10, 40)])
    assert abs(offset - 5_000) <= unc == 20
    try:
        clock_offset([(10, 0, 5)])  # a round trip that ends before it starts is no sample
    except ValueError:
        pass
    else:
        raise AssertionError("no usable sample must raise")


def test_a_different_lanemon_version_on_a_load_host_is_refused_by_name():
    from lanemon.workers.messages import WorkerHost

    hosts = [WorkerHost(0, "0.1.0", "load-a", 11, "10.0.0.1", "aa" * 20),
             WorkerHost(1, "0.0.9", "load-b", 12, "10.0.0.2", "bb" * 20)]
    assert version_mismatch(hosts[:1], "0.1.0") is None
    msg = version_mismatch(hosts, "0.1.0")
    assert msg is not None and "load-b" in msg and "0.0.9" in msg and "0.1.0" in msg and "load-a" not in msg
    assert host_label(hosts[1]) == "load-b (bbbbbbbbbbbb)"


def test_a_busy_worker_silent_for_five_seconds_is_lost_an_idle_one_is_not():
    heard = {0: 100.0, 1: 96.0, 2: 90.0}
    assert silent_workers(heard, busy=[0, 1], now=100.5) == []
    assert silent_workers(heard, busy=[0, 1], now=101.0) == [1]
    assert silent_workers(heard, busy=[0, 1, 2], now=101.0) == [2, 1]  # the longest silence first
    assert silent_workers(heard, busy=[0], now=200.0, limit_s=5) == [0]


def test_workers_go_on_the_load_hosts_not_the_head_nor_this_process_node():
    from lanemon.workers.ray_pool import _skews, load_hosts, ray_nodes

    head = {"NodeID": "h", "Alive": True, "Resources": {"node:__internal_head__": 1.0}}
    a, b = {"NodeID": "a", "Alive": True, "Resources": {"CPU": 16}}, {"NodeID": "b", "Alive": True, "Resources": {}}
    dead = {"NodeID": "c", "Alive": False, "Resources": {"CPU": 16}}
    assert [n.node_id for n in load_hosts(ray_nodes([b, head, dead, a]), "h", joined=True)] == ["a", "b"]
    assert [n.node_id for n in load_hosts(ray_nodes([head, a]), "a", joined=True)] == ["a"]  # only this node
    assert [n.node_id for n in load_hosts(ray_nodes([head, a, b]), "h", joined=False)] == ["h"]  # a local runtime
    # ray.nodes() is read into RayNode: a node without an id is left out, not a KeyError
    assert [n.node_id for n in ray_nodes([{"Alive": True}, a, "x"])] == ["a"] and ray_nodes(None) == []
    assert _skews("1:2500,x:3,0:-7") == {1: 2500, 0: -7}


def test_a_lost_worker_ends_what_it_sent_as_errors_and_what_it_had_not_sent_as_not_sent():
    from lanemon.bus import EventBus
    from lanemon.events import Clock
    from lanemon.measure.records import assemble
    from lanemon.events import Event
    from lanemon.workers.messages import Batch, JobReport
    from lanemon.workers.pool import Item, MergingPool

    bus, seen = EventBus(), []
    bus.subscribe(seen.append)
    pool = MergingPool(2, [], Clock(), bus)
    items = [Item(i * 0.1, f"A-{i}", "completions", {}, "bench", {"i": i}) for i in range(6)]
    shares = pool._shares("A", items)
    assert [[d.req_id for d in s] for s in shares] == [["A-0", "A-2", "A-4"], ["A-1", "A-3", "A-5"]]
    assert all(d.meta == {"i": int(d.req_id[2:]), "worker": w} for w, s in enumerate(shares) for d in s)
    assert all("worker" not in it.meta for it in items)  # the workload's items are not changed
    pool._busy = {0: 1, 1: 1}
    now = pool.clock.now()
    pool._receive(1, Batch(now, [
        Event(now, "request", "A", "A-1", {"meta": {"i": 1}}),
        Event(now + 1, "request", "A", "A-3", {"meta": {"i": 3}}),
        Event(now + 2, "done", "A", "A-1", {"finish_reason": "stop"})]))
    errors = pool._lost(1, "load host x (n1) lost")
    assert errors == 1 and pool.job_report == JobReport(not_sent=1)  # A-3 in flight, A-5 never sent
    assert msgspec.to_builtins(pool.job_report) == {"not_sent": 1}  # what the end mark carries
    pool._receive(1, Batch(now + 5, [Event(now + 3, "done", "A", "A-3")]))  # late news from a lost host: not taken
    pool._close_merge()
    recs = {r.req: r for r in assemble(seen)}
    assert set(recs) == {"A-1", "A-3"} and recs["A-1"].error is None
    assert not recs["A-3"].ok and recs["A-3"].error.message == "load host x (n1) lost"
    # the next job goes to the live worker only
    shares = pool._shares("A", items[:2])
    assert [len(s) for s in shares] == [2, 0]


def test_worker_flags_are_checked_before_anything_runs():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "lanemon", "bench", "load", "--lane", "A=http://127.0.0.1:9/v1",
                               "--rate", "1", "--duration", "1", *args], capture_output=True, text=True, timeout=60)

    out = run("--workers-per-node", "2")
    assert out.returncode == 2 and "--workers-per-node needs --ray-address" in out.stderr
    out = run("--ray-address", "auto", "--workers-per-node", "2", "--workers", "3")
    assert out.returncode == 2 and "not both" in out.stderr


def test_the_load_table_names_a_lost_load_host():
    from lanemon.reports.tables import load_table
    from load_sweep_results import load_result, rep_json

    rep = rep_json(measured=10, ok=6, errors=2, not_sent=2,
                   workers_lost=[{"node": "ab" * 28, "host": "load-b", "why": "its worker died"}])
    table = load_table(load_result({"A": [rep]}, {"load": {"arrival": "constant", "rate": 4}}))
    note = next(n for n in table.notes if "workers_lost" in n)
    assert "load-b (abababababab)" in note and "2 it had not sent" in note


def test_the_kuberay_manifest_parses_and_names_what_lanemon_needs():
    from pathlib import Path

    import pytest

    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (it comes with Ray)")
    path = Path(__file__).resolve().parent.parent / "docs" / "kuberay-load-hosts.yaml"
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert doc["apiVersion"] == "ray.io/v1" and doc["kind"] == "RayCluster"
    spec = doc["spec"]
    assert spec["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"  # no load worker on the head
    head_image = spec["headGroupSpec"]["template"]["spec"]["containers"][0]["image"]
    (group,) = spec["workerGroupSpecs"]
    assert group["replicas"] == 4
    (container,) = group["template"]["spec"]["containers"]
    assert container["image"] == head_image  # the same lanemon version everywhere
    assert container["resources"]["limits"]["cpu"] == "16"
    assert "--ray-address auto" in path.read_text(encoding="utf-8")


def test_the_pipe_messages_round_trip_through_msgspec_as_their_tagged_structs():
    """What a worker sends the main process (and back) decodes to the same Structs: events, items, job ids."""
    from lanemon.events import Event
    from lanemon.workers.messages import (Batch, Bye, Done, Item, Job, Ready, Stop, encode, from_worker,
                                          job_items, to_worker)

    evs = [Event(5, "request", "A", "A-1", {"meta": {"worker": 0}, "max_tokens": 32}),
           Event(9, "note", None, None, {"level": "info", "message": "x", "ratio": 0.1})]
    for msg in (Batch(10, evs), Ready(1), Done(12, evs[:1], job=3, errors=1, failure="ValueError: x"), Bye(20)):
        back = from_worker(encode(msg))
        assert type(back) is type(msg) and back == msg
    items = [Item(0.25, "A-1", "completions", {"prompt": "hi", "max_tokens": 8}, "bench", {"i": 1})]
    job = to_worker(encode(Job(7, "A", 123, items)))
    assert isinstance(job, Job) and job.items == items and job.start_ns == 123
    assert isinstance(to_worker(encode(Stop())), Stop)
    assert job_items(encode(items)) == items
    # a Batch is not a Done: the main side's "job over" test cannot fire on a heartbeat
    assert not isinstance(from_worker(encode(Batch(1))), Done)


def test_silence_while_lanemon_itself_was_held_up_is_not_a_workers_silence():
    from lanemon.workers.clocks import MAIN_STALL_S, WATCH_S, credit_own_stall

    heard = {0: 100.0, 1: 103.0}
    assert credit_own_stall(heard, WATCH_S + MAIN_STALL_S, WATCH_S) == 0.0 and heard == {0: 100.0, 1: 103.0}
    # the watch asked for 0.25 s and woke 6 s later: the main process could not read anyone's heartbeat meanwhile
    stall = credit_own_stall(heard, 6.0, WATCH_S)
    assert stall == pytest.approx(6.0 - WATCH_S - MAIN_STALL_S)
    assert heard == {0: pytest.approx(100.0 + stall), 1: pytest.approx(103.0 + stall)}
    # so at now = 106: worker 0 has been silent 0.75 s of listened time, not 6 s
    assert silent_workers(heard, busy=[0, 1], now=106.0) == []


class _Ref:
    def __init__(self, answer: bool) -> None:
        self.answer = answer

    def __await__(self):
        if not self.answer:
            yield from asyncio.sleep(3600).__await__()  # a host that is gone never answers
        return 123


class _Actor:
    def __init__(self, answer: bool) -> None:
        self.raw_ns = type("M", (), {"remote": lambda _self: _Ref(answer)})()


def test_a_silent_worker_that_answers_a_ping_is_kept_one_that_does_not_is_lost(monkeypatch):
    """A starved Ray runtime delayed one host's heartbeats past 5 s (beside four CPU hogs: a live host was taken for
    lost): the silent worker is pinged first; only one that does not answer is lost."""
    from lanemon.bus import EventBus
    from lanemon.events import Clock
    from lanemon.workers import ray_pool
    from lanemon.workers.messages import WorkerHost

    monkeypatch.setattr(ray_pool, "PING_S", 0.05)
    bus, seen = EventBus(), []
    bus.subscribe(seen.append)
    pool = ray_pool.RayPool(2, [], Clock(), bus)
    pool._actors = [_Actor(True), _Actor(False)]
    pool.hosts = [WorkerHost(worker=w, version="x", host=f"vm{w + 1}", pid=1, address="10.0.0.1", node=f"n{w + 1}" * 8)
                  for w in range(2)]
    assert asyncio.run(pool._answers(0)) is True and asyncio.run(pool._answers(1)) is False

    async def judge():
        job = asyncio.ensure_future(asyncio.sleep(3600))
        try:
            pool._heard = {0: time.monotonic() - 6.0, 1: time.monotonic() - 6.0}
            pool._busy = {0: 1, 1: 1}
            kept = pool._after_ping(0, await pool._answers(0), job)
            assert kept == 0 and not job.cancelled() and time.monotonic() - pool._heard[0] < 1.0
            lost = pool._after_ping(1, await pool._answers(1), job)
            await asyncio.sleep(0)
            return lost, job.cancelled()
        finally:
            job.cancel()

    lost, cancelled = asyncio.run(judge())
    pool._close_merge()  # what the merge held (the main's notes wait for the workers' heartbeats) is released
    assert lost == 0 and cancelled  # nothing was in flight on it; its job was ended
    assert [w.worker for w in pool.workers_lost] == [1] and "no answer to a ping" in pool.workers_lost[0].why
    notes = [e.data["message"] for e in seen if e.kind == "note"]
    assert any("vm1" in n and "answered a ping: kept" in n for n in notes), notes
    assert any("vm2" in n and "lost" in n for n in notes), notes


def test_a_worker_that_answers_pings_but_never_sends_is_lost_after_kept_max(monkeypatch):
    """Answering pings keeps a host only so long: a process that is there but whose job sends nothing would hold
    the run for ever."""
    from lanemon.bus import EventBus
    from lanemon.events import Clock
    from lanemon.workers import ray_pool
    from lanemon.workers.clocks import KEPT_MAX

    pool = ray_pool.RayPool(1, [], Clock(), EventBus())

    async def judge():
        job = asyncio.ensure_future(asyncio.sleep(3600))
        try:
            kept = []
            for _ in range(KEPT_MAX + 1):
                pool._heard = {0: time.monotonic() - 6.0}
                pool._after_ping(0, True, job)
                await asyncio.sleep(0)
                kept.append(not job.done() and not pool.workers_lost)
            return kept, job.cancelled()
        finally:
            job.cancel()

    kept, cancelled = asyncio.run(judge())
    pool._close_merge()
    assert kept == [True] * KEPT_MAX + [False] and cancelled
    assert len(pool.workers_lost) == 1 and f"after {KEPT_MAX} answered pings" in pool.workers_lost[0].why


def test_a_lost_hosts_actor_is_killed_so_a_host_still_there_stops_sending():
    from lanemon.bus import EventBus
    from lanemon.events import Clock
    from lanemon.workers import ray_pool

    killed = []

    class FakeRay:
        @staticmethod
        def kill(actor, no_restart=False):
            killed.append((actor, no_restart))
            if actor == "gone":
                raise RuntimeError("its node is gone")  # Ray refusing is no reason not to go on

    pool = ray_pool.RayPool(2, [], Clock(), EventBus())
    pool._ray, pool._actors = FakeRay(), ["alive", "gone"]
    pool._host_lost(0, "no heartbeat")
    pool._host_lost(1, "its worker died")
    pool._host_lost(0, "again")  # said once: not killed twice
    pool._close_merge()
    assert killed == [("alive", True), ("gone", True)] and [w.worker for w in pool.workers_lost] == [0, 1]
