"""Load hosts without a cluster (issue 41): the clock offset, the version check, the heartbeat rule, which nodes
take workers, and a lost worker's requests (in flight: errors; not yet sent: not sent).  Pure and fast; the
cluster runs are tests/test_workers_cluster.py."""

from __future__ import annotations

import subprocess
import sys

import msgspec

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
