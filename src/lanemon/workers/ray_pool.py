"""The worker pool over Ray actors: the same jobs and merge as :mod:`lanemon.workers.pool`, on a cluster's nodes.

``RayPool`` starts (or joins, with ``address``; ``"auto"`` for a cluster started
with ``ray start``) a Ray runtime and runs its workers as Ray actors, each pinned
to a load host (hard node affinity; by default one per load host, or
``per_node`` on each): no job is timed before every worker is placed, its
lanemon version checked and its clock offset measured.  Each actor holds a
:class:`~lanemon.workers.pool.WorkerCore` (its own HTTP clients and event loop)
and streams its event batches back through a Ray streaming generator, one batch
every 20 ms with a heartbeat.  A worker not heard from for
:data:`~lanemon.workers.clocks.HEARTBEAT_LOST_S` is pinged; one that does not
answer within :data:`~lanemon.workers.clocks.PING_S` (or whose actor died with
its node) is lost, one that answers was only slow (a starved Ray runtime: said
in a note); silence while lanemon's own process was held up is not counted.  A
lost worker's in-flight requests end as errors (``load host <host> lost``),
what it had not sent yet is counted as not sent, and the run goes on with the
others.  Ray's own messages go to a log file (``log_path``), never to stdout
or the screen; what matters in them becomes lanemon's own note.  Ray is
optional (``pip install 'lanemon[ray]'``); without it ``--workers-backend ray``
is one clear error.  docs/WORKERS.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from lanemon import events as schema
from lanemon.bus import EventBus
from lanemon.events import Clock, Event
from lanemon.results.requests import note_data
from lanemon.workers.clocks import (HEARTBEAT_LOST_S, KEPT_MAX, PING_S, RESYNC_S, ROUNDS, WATCH_S, clock_offset,
                                    credit_own_stall, host_label, silent_workers, version_mismatch)
from lanemon.workers.messages import (Batch, Done, Item, LostHost, WorkerHost, WorkerInfo, encode,
                                      from_worker, job_items, worker_info)
from lanemon.workers.pool import FLUSH_S, MergingPool, WorkerCore, WorkersUnavailable

if TYPE_CHECKING:
    from lanemon.config import LaneConfig

PLACE_TIMEOUT_S = 60.0
"""Every worker must be placed on its load host (and answer) within this long, or the run does not start."""
SKEW_ENV = "LANEMON_TEST_CLOCK_SKEW"
"""Test only: ``W:NS`` adds NS nanoseconds to worker W's raw clock, as if its host's clock were elsewhere."""
VERSION_ENV = "LANEMON_TEST_WORKER_VERSION"
"""Test only: ``W:VERSION`` makes worker W report lanemon VERSION at ``ready``, as a load host with another lanemon
installed would (the run must refuse it by name)."""
LEAD_S = 0.5
"""A job's start is this far ahead of its hand-out: a Ray call reaches a busy host's actor in tens to hundreds of
ms, a pipe in microseconds (the process backend's lead is 0.2 s)."""
WORKER_ENV = {"RAY_worker_niceness": "0"}
"""Each actor's process environment in a cluster lanemon joins (its ``runtime_env``): Ray starts its worker
processes 15 nicer than their raylet, so anything else on a load host outruns the one process that times lanemon's
sends (beside four CPU hogs an actor took 31 s to import lanemon and build its core); 0 leaves it at its raylet's
priority, as Ray's own job supervisor does.  The local runtime lanemon starts itself says so in its system config
instead: its actors then take the workers it started with it (a ``runtime_env`` costs each its own process, set up
through Ray's ``setup_worker``: about 0.45 CPU-s more)."""
NOTE_ABOUT = "load_hosts"
"""The ``about`` of the notes this pool publishes (the headless progress prints them on stderr)."""


class RayUnavailable(WorkersUnavailable):
    """Ray is not installed, its runtime did not start, or the workers could not be placed."""


class _HostClock(Clock):
    """A worker's session clock on its own host: its raw ``perf_counter_ns`` less ``t0``, where ``t0`` is the main
    process's ``t0`` plus the measured offset; it never steps back when the offset is re-measured mid-run (the
    merge needs each worker's stamps in order)."""

    __slots__ = ("last",)

    def __init__(self, t0: int) -> None:
        super().__init__(t0)
        self.last = -(1 << 62)

    def now(self) -> int:
        t = time.perf_counter_ns() - self.t0
        if t < self.last:
            return self.last
        self.last = t
        return t


def _skew_this_process(skew_ns: int) -> None:
    """Test only (``LANEMON_TEST_CLOCK_SKEW``): every ``perf_counter_ns`` reading of this actor's process (its clock,
    the network stamps) ``skew_ns`` away, as on a host whose monotonic clock started elsewhere."""
    real = time.perf_counter_ns
    time.perf_counter_ns = lambda: real() + skew_ns  # type: ignore[assignment]


class _RayWorker:
    """One Ray actor: a worker core, its clock's readings and a streaming ``run_job``."""

    def __init__(self, index: int, lanes: list[LaneConfig], t0_ns: int, stall_timeout: float | None,
                 skew_ns: int = 0, version: str | None = None) -> None:
        if skew_ns:
            _skew_this_process(skew_ns)
        self.version = version  # test only (VERSION_ENV): the version this worker says it runs
        self.clock = _HostClock(t0_ns)
        self.core = WorkerCore(index, lanes, t0_ns, stall_timeout, clock=self.clock)

    async def info(self) -> bytes:
        """This worker's :class:`WorkerInfo`, msgspec-encoded."""
        import socket

        import ray

        from lanemon import __version__

        return encode(WorkerInfo(version=self.version or __version__, host=socket.gethostname()[:100],
                                 pid=os.getpid(), address=str(ray.util.get_node_ip_address()),
                                 node=str(ray.get_runtime_context().get_node_id())))

    async def raw_ns(self) -> int:
        return time.perf_counter_ns()

    async def set_t0(self, t0_ns: int, first: bool = False) -> None:
        """The measured offset applied; the first time (before any job) the clock may step back freely."""
        self.clock.t0 = t0_ns
        if first:
            self.clock.last = -(1 << 62)

    async def run_job(self, lane: str, start_ns: int, items: bytes):
        """Send the items (a msgspec-encoded ``list[Item]``); yields msgspec-encoded :class:`Batch` es, the
        last a :class:`Done`."""
        share = job_items(items)
        task = asyncio.ensure_future(self.core.run_job(lane, start_ns, share))
        while not task.done():
            await asyncio.wait([task], timeout=FLUSH_S)
            now, evs = self.core.take()
            yield encode(Batch(now, evs))
        try:
            errors, failure = task.result(), None
        except Exception as exc:
            errors, failure = len(share), f"{type(exc).__name__}: {exc}"
        now, evs = self.core.take()
        yield encode(Done(now, evs, errors=errors, failure=failure))


def default_log_path() -> str:
    """Where Ray's messages go when the run names no file: the temp dir, the time and this process's id."""
    return os.path.join(tempfile.gettempdir(), f"lanemon-ray-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}.log")


class RayNode(msgspec.Struct):
    """What lanemon reads of one of ``ray.nodes()``."""

    node_id: str = msgspec.field(name="NodeID")
    alive: bool = msgspec.field(default=False, name="Alive")
    resources: dict[str, float] = msgspec.field(default_factory=dict, name="Resources")
    node_manager_hostname: str | None = msgspec.field(default=None, name="NodeManagerHostname")


def ray_nodes(nodes: object) -> list[RayNode]:
    """``ray.nodes()`` read into :class:`RayNode` s (a node that does not fit is left out)."""
    out = []
    for n in nodes if isinstance(nodes, list) else []:
        try:
            out.append(msgspec.convert(n, RayNode, strict=False))
        except msgspec.ValidationError:
            pass
    return out


def load_hosts(nodes: Sequence[RayNode], me: str | None, joined: bool) -> list[RayNode]:
    """The nodes workers go on (pure): the alive nodes other than the head and this process's own, when
    ``joined`` a cluster that has such nodes; else this process's node (a local runtime, or a one-node
    cluster)."""
    alive = [n for n in nodes if n.alive]
    if joined:
        hosts = [n for n in alive if n.node_id != me and "node:__internal_head__" not in n.resources]
        if hosts:
            return sorted(hosts, key=lambda n: n.node_id)
    own = [n for n in alive if n.node_id == me]
    return own or alive[:1]


def _skews(env: str | None) -> dict[int, int]:
    out: dict[int, int] = {}
    for part in (env or "").split(","):
        w, _, ns = part.partition(":")
        if w.strip().isdigit() and ns.strip().lstrip("-").isdigit():
            out[int(w)] = int(ns)
    return out


def _versions(env: str | None) -> dict[int, str]:
    """``VERSION_ENV``'s ``W:VERSION,...`` (test only)."""
    out: dict[int, str] = {}
    for part in (env or "").split(","):
        w, _, v = part.partition(":")
        if w.strip().isdigit() and v.strip():
            out[int(w)] = v.strip()[:40]
    return out


@contextlib.contextmanager
def _quiet(path: str):
    """Ray's start-up output into the log file: Python's prints always, and the process's stdout/stderr
    descriptors too when stdout is not a terminal (``--json`` piped; a screen keeps its descriptors)."""
    with open(path, "a", encoding="utf-8") as log:
        saved = sys.stdout, sys.stderr
        fds: list[tuple[int, int]] = []
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        try:
            if not (sys.__stdout__ and sys.__stdout__.isatty()):
                for fd in (1, 2):
                    try:
                        fds.append((fd, os.dup(fd)))
                        os.dup2(log.fileno(), fd)
                    except OSError:
                        pass
            sys.stdout = sys.stderr = log
            yield
        finally:
            sys.stdout, sys.stderr = saved
            log.flush()
            for fd, keep in fds:
                os.dup2(keep, fd)
                os.close(keep)


class RayPool(MergingPool):
    """Ray actors for one run.  ``address=None``: ``n`` workers in a local Ray runtime on this machine; with an
    ``address`` (or ``"auto"``): ``per_node`` workers on each load host (default one), or ``n`` spread
    round-robin over them when ``per_node`` is None."""

    def __init__(self, n: int, lanes: Sequence[LaneConfig], clock: Clock, bus: EventBus, *,
                 stall_timeout: float | None = None, address: str | None = None, per_node: int | None = None,
                 log_path: str | None = None, place_timeout: float = PLACE_TIMEOUT_S,
                 heartbeat_lost_s: float = HEARTBEAT_LOST_S) -> None:
        super().__init__(n, lanes, clock, bus, stall_timeout=stall_timeout)
        self.address = address
        self.per_node = per_node
        self.log_path = log_path or default_log_path()
        self.place_timeout = place_timeout
        self.heartbeat_lost_s = heartbeat_lost_s
        self.hosts: list[WorkerHost] = []
        """Each worker's host: node id, host name, address, lanemon version, clock offset and uncertainty."""
        self.workers_lost: list[LostHost] = []
        self.joined_s: float | None = None
        self._actors: list[Any] = []
        self._ray: Any = None
        self._started_ray = False
        self._heard: dict[int, float] = {}
        self._kept: dict[int, int] = {}
        """Pings a silent worker answered since its last batch."""
        self._resync: asyncio.Task | None = None
        self._log_handler: logging.Handler | None = None

    # -- start: join, place, check, synchronise -------------------------------------------------------------

    async def start(self) -> None:
        try:
            import ray
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        except ImportError:
            raise RayUnavailable("--workers-backend ray needs Ray: pip install 'lanemon[ray]'") from None
        self._ray = ray
        t_start = time.monotonic()
        self._route_logs()
        if not ray.is_initialized():
            try:
                with _quiet(self.log_path):
                    # a local runtime (no address) is lanemon's own: a worker process for each of its n actors,
                    # started with it at the raylet's priority (WORKER_ENV's reason)
                    own = {} if self.address else {"num_cpus": max(1, self.n), "_system_config": {"worker_niceness": 0}}
                    ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                             configure_logging=False, **own)
            except Exception as exc:
                raise RayUnavailable(f"Ray did not start{' at ' + self.address if self.address else ''}: "
                                     f"{str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__} "
                                     f"(Ray's messages: {self.log_path})") from None
            self._started_ray = True
        me = ray.get_runtime_context().get_node_id()
        hosts = load_hosts(ray_nodes(ray.nodes()), me, self.address is not None)
        if not hosts:
            raise RayUnavailable("the Ray cluster has no alive node to place workers on")
        n = len(hosts) * self.per_node if self.per_node else self.n
        self._resize(n)
        self.bus.gate = self._publish_main
        skews = _skews(os.environ.get(SKEW_ENV))
        versions = _versions(os.environ.get(VERSION_ENV))
        own_runtime = self._started_ray and not self.address
        env = {} if own_runtime else {"runtime_env": {"env_vars": dict(WORKER_ENV)}}
        actor = ray.remote(num_cpus=0, max_restarts=0, **env)(_RayWorker)
        self._actors = [
            actor.options(scheduling_strategy=NodeAffinitySchedulingStrategy(hosts[k % len(hosts)].node_id,
                                                                             soft=False))
            .remote(k, self.lanes, self.clock.t0, self.stall_timeout, skews.get(k, 0), versions.get(k))
            for k in range(n)]
        pending = {asyncio.ensure_future(_await(a.info.remote())): k for k, a in enumerate(self._actors)}
        done, late = await asyncio.wait(pending, timeout=self.place_timeout)
        for fut in late:
            fut.cancel()
        infos: dict[int, WorkerInfo] = {}
        for fut in done:
            if fut.exception() is None:
                with contextlib.suppress(msgspec.DecodeError):
                    infos[pending[fut]] = worker_info(fut.result())
        if len(infos) < n:
            missing = sorted(set(range(n)) - set(infos))
            where = ", ".join(sorted({(hosts[k % len(hosts)].node_manager_hostname or "?") + " ("
                                      + hosts[k % len(hosts)].node_id[:12] + ")" for k in missing}))
            raise RayUnavailable(f"{len(infos)} of {n} workers placed and ready within {self.place_timeout:.0f} s; "
                                 f"not on {where}: is the same lanemon installed on that load host? "
                                 f"(Ray's messages: {self.log_path})")
        self.hosts = [WorkerHost(k, **msgspec.structs.asdict(infos[k])) for k in range(n)]
        from lanemon import __version__

        bad = version_mismatch(self.hosts, __version__)
        if bad:
            raise RayUnavailable(bad)
        await asyncio.gather(*(self._synchronise(k, first=True) for k in range(n)))
        self._resync = asyncio.ensure_future(self._resync_loop())
        self.joined_s = time.monotonic() - t_start
        nodes = {h.node for h in self.hosts}
        self._note(f"Ray cluster joined in {self.joined_s:.1f} s: {n} worker{'s' if n != 1 else ''} on "
                   f"{len(nodes)} load host{'s' if len(nodes) != 1 else ''} "
                   f"({', '.join(sorted({host_label(h) for h in self.hosts}))}); Ray's messages: {self.log_path}",
                   "info")

    def _resize(self, n: int) -> None:
        if n != self.n:
            from lanemon.workers.merge import Merger
            from lanemon.workers.pool import MAIN

            self.n = n
            self._merger = Merger([*range(n), MAIN])

    def _route_logs(self) -> None:
        """Ray's Python loggers write to the run's log file, never to the terminal."""
        handler = logging.FileHandler(self.log_path, encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        log = logging.getLogger("ray")
        log.addHandler(handler)
        log.propagate = False
        self._log_handler = handler

    async def _synchronise(self, w: int, first: bool = False) -> None:
        """The NTP-style exchange with worker ``w`` (``ROUNDS`` round trips); its clock then reads the main
        clock within the uncertainty (docs/WORKERS.md, "Clocks")."""
        samples = []
        for _ in range(ROUNDS):
            s = time.perf_counter_ns()
            t_w = await self._actors[w].raw_ns.remote()
            samples.append((s, t_w, time.perf_counter_ns()))
        offset, unc = clock_offset(samples)
        await self._actors[w].set_t0.remote(self.clock.t0 + offset, first)
        host = self.hosts[w]
        host.offset_ns, host.offset_uncertainty_ns, host.synced_at_ns = offset, unc, self.clock.now()

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(RESYNC_S)
            for w in range(self.n):
                if w in self._dead:
                    continue
                try:
                    await self._synchronise(w)
                except Exception:  # a host that went away: its heartbeat or its actor's death says so
                    pass

    def _note(self, message: str, level: str) -> None:
        self._publish_main(Event(self.clock.now(), schema.NOTE, None, None, note_data(message, level, NOTE_ABOUT)))

    # -- jobs ------------------------------------------------------------------------------------------------

    async def _consume(self, w: int, gen) -> tuple[int, str | None]:
        errors, failure = 0, None
        try:
            async for ref in gen:
                msg = from_worker(await ref)
                self._heard[w] = time.monotonic()
                self._kept.pop(w, None)
                self._receive(w, msg)
                if isinstance(msg, Done):
                    errors, failure = msg.errors, msg.failure
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the actor died (its node with it): its unfinished requests become errors
            return self._host_lost(w, f"its worker died ({type(exc).__name__})"), None
        finally:
            self._busy[w] = max(0, self._busy.get(w, 0) - 1)
        return errors, failure

    def _host(self, w: int) -> WorkerHost | None:
        """Worker ``w``'s host, None before it was placed."""
        return self.hosts[w] if w < len(self.hosts) else None

    async def _answers(self, w: int) -> bool:
        """Worker ``w``'s actor answers a ping within ``PING_S`` (its host is there, only slow to be heard)."""
        try:
            await asyncio.wait_for(_await(self._actors[w].raw_ns.remote()), PING_S)
            return True
        except Exception:  # no answer in time, or the actor is gone
            return False

    def _after_ping(self, w: int, answered: bool, task: asyncio.Task) -> int:
        """A silent worker's ping came back: kept if it answered (a note says so), else its host is lost; the
        errors that made."""
        if task.done():
            return 0
        silent_s = time.monotonic() - self._heard.get(w, time.monotonic())
        if answered and self._kept.get(w, 0) < KEPT_MAX:
            self._kept[w] = self._kept.get(w, 0) + 1
            self._heard[w] = time.monotonic()
            label = host_label(self._host(w))
            self._note(f"load host {label} was not heard from for {silent_s:.1f} s but answered a ping: kept (a "
                       f"starved Ray runtime or network)", "warning")
            return 0
        if silent_s < self.heartbeat_lost_s:  # heard from while the ping was out
            return 0
        task.cancel()
        if answered:  # its process answers, its job has sent nothing through KEPT_MAX pings
            return self._host_lost(w, f"no heartbeat for {silent_s:.1f} s after {KEPT_MAX} answered pings")
        return self._host_lost(w, f"no heartbeat for {silent_s:.1f} s and no answer to a ping in {PING_S:g} s")

    def _host_lost(self, w: int, why: str) -> int:
        """Worker ``w``'s host is lost: the requests it sent end as errors, the rest are not sent; said once."""
        if w in self._dead:
            return 0
        host = self._host(w)
        label = host_label(host)
        errors = self._lost(w, f"load host {label} lost")
        if self._ray is not None and w < len(self._actors):
            try:  # a host taken for lost that is still there (cut off, starved) must not go on sending: what it
                self._ray.kill(self._actors[w], no_restart=True)  # had not sent is counted as not sent
            except Exception:  # gone with its node already
                pass
        lost = LostHost(w, host and host.node, host and host.host, host and host.address, why, errors)
        self.workers_lost.append(lost)
        self.job_report.workers_lost.append(lost)
        self._note(f"load host {label} lost: {why}; {errors} request{'s' if errors != 1 else ''} in flight "
                   f"ended as errors", "error")
        return errors

    async def run_job(self, lane: str, items: Sequence[Item], *, lead_s: float = LEAD_S) -> int:
        start_ns = self.clock.now() + int(lead_s * 1e9)
        tasks: dict[int, asyncio.Task] = {}
        for w, share in enumerate(self._shares(lane, items)):
            if not share:
                continue
            self._busy[w] = self._busy.get(w, 0) + 1
            self._heard[w] = time.monotonic()
            gen = self._actors[w].run_job.options(num_returns="streaming").remote(lane, start_ns, encode(share))
            tasks[w] = asyncio.ensure_future(self._consume(w, gen))
        errors = 0
        pending = set(tasks.values())
        pings: dict[int, asyncio.Task] = {}
        looked = time.monotonic()
        try:
            while pending:  # the heartbeat watch: a silent worker is pinged; one that does not answer is lost
                _, pending = await asyncio.wait(pending, timeout=WATCH_S)
                now = time.monotonic()
                credit_own_stall(self._heard, now - looked, WATCH_S)
                looked = now
                running = [w for w, t in tasks.items() if not t.done()]
                for w in silent_workers(self._heard, running, now, self.heartbeat_lost_s):
                    if w not in pings:
                        pings[w] = asyncio.ensure_future(self._answers(w))
                for w, ping in list(pings.items()):
                    if ping.done():
                        del pings[w]
                        errors += self._after_ping(w, ping.result(), tasks[w])
        finally:
            for ping in pings.values():
                ping.cancel()
        for t in tasks.values():
            if t.cancelled():
                continue
            n_err, failure = t.result()
            errors += n_err or 0
            if failure:
                self.failures.append(failure)
        await self._settle(self.clock.now())
        return errors

    async def aclose(self) -> None:
        if self._resync is not None:
            self._resync.cancel()
        for a in self._actors:
            try:
                self._ray.kill(a)
            except Exception:
                pass
        self._close_merge()
        if self._started_ray:
            with _quiet(self.log_path):
                self._ray.shutdown()
        if self._log_handler is not None:
            logging.getLogger("ray").removeHandler(self._log_handler)
            self._log_handler.close()


async def _await(ref: Any) -> Any:
    return await ref
