"""Worker processes that send a workload's requests and stream every event back.

One event loop spends about a core at a few thousand streamed tokens a second.
With ``--workers N`` a workload hands its requests to N worker processes: the
main process builds every request (body, id, ``meta``, scheduled offset), so a
run is the same whatever N is; each worker owns its own HTTP clients and event
loop, sends its share at the scheduled times on the shared session clock, and
streams its events back in batches (every 20 ms) with a heartbeat.  The main
process merges the streams in timestamp order (:mod:`lanemon.workers.merge`)
and publishes them on its one bus, so recordings, screens and reports do not
change.  Nothing is lost: a worker flushes everything before it reports a job
done, and a worker that dies is an error event for each request it held, never
a silent gap.

Two backends share this interface (:class:`WorkerPool`): ``process``
(multiprocessing, spawn; the default) and ``ray`` (Ray actors, local or on a
cluster; :mod:`lanemon.workers.ray_pool`, docs/WORKERS.md).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import msgspec

from lanemon.bus import EventBus
from lanemon import events as schema
from lanemon.events import Clock, Event
from lanemon.results.requests import error_data
from lanemon.workers import default_workers  # noqa: F401 (re-exported)
from lanemon.workers.merge import Merger
from lanemon.workers.messages import (Batch, Bye, Done, Item, Job, JobReport, Ready, Stop, encode, from_worker,
                                      to_worker)

if TYPE_CHECKING:
    from lanemon.client.loadwatch import LoadWatch
    from lanemon.config import LaneConfig

__all__ = ["Item", "MergingPool", "WorkerCore", "WorkerPool", "WorkersUnavailable", "opening_burst"]

MAIN = "main"
"""The merge source of this process's own events."""
FLUSH_S = 0.02
"""A worker sends its buffered events (and a heartbeat) this often."""


class WorkersUnavailable(RuntimeError):
    """The worker processes (or actors) could not be started; the message says why."""


OPENING_BURST_S = 0.05
"""Requests scheduled within this long of the first are the opening burst: that many connections are opened
before the schedule starts (a wave's TTFT must not carry its own connection set-ups)."""


def opening_burst(offsets: Sequence[float], window_s: float = OPENING_BURST_S) -> int:
    """How many of the (sorted) offsets fall within ``window_s`` of the first (pure)."""
    if not offsets:
        return 0
    first = offsets[0]
    return sum(1 for o in offsets if o - first < window_s)


# ---------------------------------------------------------------------------
# The worker side (runs in the child process)
# ---------------------------------------------------------------------------


class WorkerCore:
    """What a worker does with a job, whatever carries the messages (a pipe, or a Ray actor)."""

    def __init__(self, index: int, lanes: Sequence[LaneConfig], t0_ns: int,
                 stall_timeout: float | None = None, clock: Clock | None = None) -> None:
        from lanemon.client.http import LaneClient

        self.index = index
        self.clock = Clock(t0_ns) if clock is None else clock
        self.buffer: list[Event] = []
        self.clients = {
            lane.name: LaneClient(lane, clock=self.clock, emit=self.buffer.append, stall_timeout=stall_timeout)
            for lane in lanes
        }
        self.jobs = 0
        self.loadwatch: LoadWatch | None = None
        """This worker's own loop lag as ``client_load`` events (``worker``: its index) while it has a job: the
        sends are timed by this loop, so whether it was starved is the recording's to say, as for the main
        process's (client/loadwatch.py; measure/load.py folds every process's windows alike)."""

    def _watch(self) -> None:
        from lanemon.client.loadwatch import LoadWatch

        self.jobs += 1
        if self.loadwatch is None:
            self.loadwatch = LoadWatch(self.clock, self.buffer.append, worker=self.index)
            self.loadwatch.start()

    async def _unwatch(self) -> None:
        """The last job is over: stop watching (the window in progress is published, before the job's Done)."""
        self.jobs -= 1
        if self.jobs == 0 and self.loadwatch is not None:
            watch, self.loadwatch = self.loadwatch, None
            await watch.stop()

    def take(self) -> tuple[int, list[Event]]:
        """(heartbeat time, every event buffered so far); nothing stamped earlier can follow."""
        now = self.clock.now()
        batch, self.buffer[:] = list(self.buffer), []
        return now, batch

    async def run_job(self, lane: str, start_ns: int, items: Sequence[Item]) -> int:
        """Send every item at ``start_ns`` (session clock) + its offset; returns how many did not complete."""
        client = self.clients[lane]
        loop = asyncio.get_running_loop()
        tasks = []
        self._watch()
        try:
            burst = opening_burst([it.offset_s for it in items])
            if burst > 1:  # this worker's share of the opening wave: connections opened before the start
                await client.warm(burst)
            for it in items:
                delay = (start_ns - self.clock.now()) / 1e9 + it.offset_s
                if delay > 0:
                    await asyncio.sleep(delay)
                meta = dict(it.meta)
                if "send_lag_s" in meta:
                    meta["send_lag_s"] = round((self.clock.now() - start_ns) / 1e9 - it.offset_s, 6)
                tasks.append(loop.create_task(client.stream(it.endpoint, it.body, purpose=it.purpose,
                                                            req_id=it.req_id, meta=meta)))
            records = await asyncio.gather(*tasks) if tasks else []
        finally:
            await self._unwatch()
        return sum(1 for r in records if not r.ok)

    async def aclose(self) -> None:
        for c in self.clients.values():
            await c.aclose()


def _child_main(conn, index: int, lanes: list[LaneConfig], t0_ns: int, stall_timeout: float | None) -> None:
    asyncio.run(_child(conn, index, lanes, t0_ns, stall_timeout))


async def _child(conn, index: int, lanes, t0_ns: int, stall_timeout) -> None:
    core = WorkerCore(index, lanes, t0_ns, stall_timeout)
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()
    loop.add_reader(conn.fileno(), lambda: inbox.put_nowait(conn.recv_bytes()))
    stop = asyncio.Event()

    def send(msg: Batch) -> None:
        conn.send_bytes(encode(msg))

    async def flusher() -> None:
        while not stop.is_set():
            await asyncio.sleep(FLUSH_S)
            now, evs = core.take()
            send(Batch(now, evs))

    async def job(msg: Job) -> None:
        try:
            errors = await core.run_job(msg.lane, msg.start_ns, msg.items)
            failure = None
        except Exception as exc:  # a bug or a bad job: reported, never a silent gap
            errors, failure = len(msg.items), f"{type(exc).__name__}: {exc}"
        now, evs = core.take()
        send(Done(now, evs, job=msg.job, errors=errors, failure=failure))

    send(Ready(core.clock.now()))
    flush_task = loop.create_task(flusher())
    jobs: set[asyncio.Task] = set()
    try:
        while True:
            msg = to_worker(await inbox.get())
            if isinstance(msg, Stop):
                break
            t = loop.create_task(job(msg))
            jobs.add(t)
            t.add_done_callback(jobs.discard)
        if jobs:
            await asyncio.gather(*jobs)
    finally:
        stop.set()
        await flush_task
        await core.aclose()
        now, evs = core.take()
        send(Bye(now, evs))
        loop.remove_reader(conn.fileno())
        conn.close()


# ---------------------------------------------------------------------------
# The main side
# ---------------------------------------------------------------------------


class MergingPool:
    """The main side every backend shares: the bus gate, the merge and the settling at a job's end."""

    def __init__(self, n: int, lanes: Sequence[LaneConfig], clock: Clock, bus: EventBus, *,
                 stall_timeout: float | None = None) -> None:
        if n < 1:
            raise ValueError("--workers must be at least 1")
        self.n = n
        self.clock = clock
        self.bus = bus
        self.lanes = [replace(lane, telemetry=None, cost_per_hour=None) for lane in lanes]
        """What a worker needs to send a lane's requests (its GPUs and their price are the main process's)."""
        self.stall_timeout = stall_timeout
        self._merger = Merger([*range(n), MAIN])
        self.events_received = 0
        self.failures: list[str] = []
        self._busy: dict[int, int] = {}
        """Jobs in flight per worker; an idle worker sends nothing, so it does not hold the merge back."""
        self._open: dict[str, tuple[int, str]] = {}
        """Requests handed to a worker with no terminal event yet: req id -> (worker, lane)."""
        self._sent: set[str] = set()
        """Open requests whose ``request`` event arrived: sent (in flight), not just handed out."""
        self._dead: set[int] = set()
        """Workers lost or exited: no job goes to them, nothing more from them is taken."""
        self.job_report = JobReport()
        """What the last job lost: ``workers_lost`` (the hosts) and ``not_sent`` (requests never sent)."""

    def _publish_main(self, ev: Event) -> None:
        """The bus's gate while the pool runs: this process's own events (marks, loop lag, notes) join the
        merge too, so the recording stays in time order."""
        self._merger.push(MAIN, ev.t, ev)
        self._release()

    def _receive(self, i: int, msg: Batch) -> None:
        """One batch from worker ``i``: its events and its heartbeat (nothing from a worker already lost:
        its requests were ended when it was)."""
        if i in self._dead:
            return
        for ev in msg.ev:
            self._merger.push(i, ev.t, ev)
            if ev.kind == schema.REQUEST:
                self._sent.add(ev.req)
            elif ev.kind in (schema.DONE, schema.ERROR):
                self._open.pop(ev.req, None)
                self._sent.discard(ev.req)
        self.events_received += len(msg.ev)
        self._merger.heartbeat(i, msg.hb)
        if isinstance(msg, Bye):
            self._merger.finish(i)
        self._release()

    def _release(self) -> None:
        # this process stamps its own events with clock.now() as it publishes them: none can come earlier;
        # an idle worker's next event belongs to a job not yet handed out, so it is later than now too
        now = self.clock.now()
        self._merger.heartbeat(MAIN, now)
        for w in range(self.n):
            if not self._busy.get(w):
                self._merger.heartbeat(w, now)
        for ev in self._merger.ready():
            self.bus.deliver(ev)

    async def _settle(self, t: int, timeout: float = 2.0) -> None:
        """Wait until every live worker has been heard from past ``t``, so every event before ``t`` is out."""
        deadline = time.monotonic() + timeout
        while self._merger.watermark < t and time.monotonic() < deadline:
            await asyncio.sleep(FLUSH_S / 2)
        self._release()

    def _shares(self, lane: str, items: Sequence[Item]) -> list[list[Item]]:
        """Round-robin over the live workers (a lost one gets nothing)."""
        self.job_report = JobReport()
        shares: list[list[Item]] = [[] for _ in range(self.n)]
        live = [w for w in range(self.n) if w not in self._dead]
        if not live:
            raise WorkersUnavailable("every worker was lost: nothing left to send the requests")
        for k, it in enumerate(items):
            w = live[k % len(live)]
            # recorded with the request: which worker (host) sent it
            shares[w].append(msgspec.structs.replace(it, meta={**it.meta, "worker": w}))
            self._open[it.req_id] = (w, lane)
        return shares

    def _lost(self, worker: int, why: str) -> int:
        """Worker ``worker`` is gone: an error event (``why`` its message) for every request it sent with no
        end yet (never a silent gap); what it had not sent yet is counted in ``job_report.not_sent``, never
        as served.  Returns how many requests ended as errors."""
        self._merger.finish(worker)
        self._dead.add(worker)
        held = [(req, lane) for req, (w, lane) in self._open.items() if w == worker]
        errors = 0
        for req, lane in held:
            del self._open[req]
            if req in self._sent:
                self._sent.discard(req)
                errors += 1
                self._publish_main(Event(self.clock.now(), schema.ERROR, lane, req, error_data(schema.ERR_OTHER, why)))
        not_sent = len(held) - errors
        self.job_report.not_sent += not_sent
        self._release()
        return errors

    def _close_merge(self) -> None:
        self.bus.gate = None
        for ev in self._merger.drain():
            self.bus.deliver(ev)


class WorkerPool(MergingPool):
    """N worker processes for one run; :meth:`run_job` splits a job's items across them."""

    def __init__(self, n: int, lanes: Sequence[LaneConfig], clock: Clock, bus: EventBus, *,
                 stall_timeout: float | None = None) -> None:
        super().__init__(n, lanes, clock, bus, stall_timeout=stall_timeout)
        self._procs: list[Any] = []
        self._conns: list[Any] = []
        self._waiting: dict[int, asyncio.Future] = {}
        self._job_ids = iter(range(1, 1 << 62))
        self._ready: set[int] = set()

    async def start(self) -> None:
        self.bus.gate = self._publish_main
        ctx = multiprocessing.get_context("spawn")
        loop = asyncio.get_running_loop()
        for i in range(self.n):
            parent, child = ctx.Pipe(duplex=True)
            p = ctx.Process(target=_child_main, args=(child, i, self.lanes, self.clock.t0, self.stall_timeout),
                            name=f"lanemon-worker-{i}", daemon=True)
            p.start()
            child.close()
            self._procs.append(p)
            self._conns.append(parent)
            loop.add_reader(parent.fileno(), self._on_readable, i)
        deadline = time.monotonic() + 60
        while len(self._ready) < self.n:  # spawn + imports take a second or two; no job is timed before
            if time.monotonic() > deadline or not all(p.is_alive() for p in self._procs):
                raise WorkersUnavailable(f"worker processes did not start ({len(self._ready)} of {self.n} ready)")
            await asyncio.sleep(0.02)

    def _on_readable(self, i: int) -> None:
        conn = self._conns[i]
        try:
            raw = conn.recv_bytes()
        except (EOFError, OSError):
            asyncio.get_running_loop().remove_reader(conn.fileno())
            lost = self._lost(i, f"lanemon worker {i} exited")
            for fut in list(self._waiting.values()):
                if not fut.done() and getattr(fut, "worker", None) == i:
                    fut.set_result((lost, f"worker {i} exited with {lost} requests unfinished"))
            return
        msg = from_worker(raw)
        if isinstance(msg, Ready):
            self._ready.add(i)
        if isinstance(msg, Bye):
            asyncio.get_running_loop().remove_reader(conn.fileno())
        self._receive(i, msg)
        if isinstance(msg, Done):
            fut = self._waiting.pop(msg.job, None)
            self._busy[i] = max(0, self._busy.get(i, 0) - 1)
            if fut is not None and not fut.done():
                fut.set_result((msg.errors, msg.failure))

    async def run_job(self, lane: str, items: Sequence[Item], *, lead_s: float = 0.2) -> int:
        """Send ``items`` (offsets from a start ``lead_s`` from now) spread round-robin over the workers;
        returns how many requests did not complete.  Their events reach ``publish`` in time order."""
        start_ns = self.clock.now() + int(lead_s * 1e9)
        loop = asyncio.get_running_loop()
        futs = []
        for w, share in enumerate(self._shares(lane, items)):
            if not share:
                continue
            job = next(self._job_ids)
            self._busy[w] = self._busy.get(w, 0) + 1
            fut = loop.create_future()
            fut.worker = w  # type: ignore[attr-defined]
            self._waiting[job] = fut
            futs.append(fut)
            self._conns[w].send_bytes(encode(Job(job, lane, start_ns, share)))
        errors = 0
        for fut in futs:
            n_err, failure = await fut
            if failure:
                self.failures.append(failure)
            errors += n_err or 0
        await self._settle(self.clock.now())
        return errors

    async def aclose(self) -> None:
        for conn in self._conns:
            try:
                conn.send_bytes(encode(Stop()))
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 10
        while any(p.is_alive() for p in self._procs) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        for p in self._procs:
            if p.is_alive():
                p.kill()
            p.join(timeout=1)
        self._close_merge()
        loop = asyncio.get_running_loop()
        for conn in self._conns:
            try:
                loop.remove_reader(conn.fileno())
            except (OSError, ValueError):
                pass
            conn.close()
