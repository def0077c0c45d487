"""The worker pool over Ray actors: the same jobs and merge as :mod:`lanemon.workers.pool`.

``RayPool`` starts (or joins, with ``address``) a Ray runtime and runs one actor
per worker; each actor holds a :class:`~lanemon.workers.pool.WorkerCore` (its own
HTTP clients and event loop) and streams its event batches back through a Ray
streaming generator, one batch every 20 ms with a heartbeat.  On one machine
the actors share this process's monotonic clock; docs/WORKERS.md describes the
clock-offset handshake and the failure handling for actors on other hosts.
Ray is optional (``pip install 'lanemon[ray]'``); without it ``--workers-backend
ray`` is one clear error.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from lanemon.bus import EventBus
from lanemon.events import Clock
from lanemon.workers.pool import FLUSH_S, Item, MergingPool, WorkerCore, WorkersUnavailable


class RayUnavailable(WorkersUnavailable):
    """Ray is not installed or its runtime did not start."""


class _RayWorker:
    """One Ray actor: a worker core and a streaming ``run_job``."""

    def __init__(self, index: int, lanes: list[dict[str, Any]], t0_ns: int, stall_timeout: float | None) -> None:
        self.core = WorkerCore(index, lanes, t0_ns, stall_timeout)

    def ready(self) -> bool:
        return True

    async def run_job(self, lane: str, start_ns: int, items: list[dict[str, Any]]):
        task = asyncio.ensure_future(self.core.run_job(lane, start_ns, [Item(**i) for i in items]))
        while not task.done():
            await asyncio.wait([task], timeout=FLUSH_S)
            now, evs = self.core.take()
            yield {"hb": now, "ev": evs}
        try:
            errors, failure = task.result(), None
        except Exception as exc:
            errors, failure = len(items), f"{type(exc).__name__}: {exc}"
        now, evs = self.core.take()
        yield {"hb": now, "ev": evs, "done": True, "errors": errors, "failure": failure}


class RayPool(MergingPool):
    """N Ray actors for one run (``address=None``: a local Ray runtime on this machine)."""

    def __init__(self, n: int, lanes: Sequence[Any], clock: Clock, bus: EventBus, *,
                 stall_timeout: float | None = None, address: str | None = None) -> None:
        super().__init__(n, lanes, clock, bus, stall_timeout=stall_timeout)
        self.address = address
        self._actors: list[Any] = []
        self._ray: Any = None
        self._started_ray = False

    async def start(self) -> None:
        try:
            import ray
        except ImportError:
            raise RayUnavailable("--workers-backend ray needs Ray: pip install 'lanemon[ray]'") from None
        self._ray = ray
        if not ray.is_initialized():
            try:
                ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                         configure_logging=False)
            except Exception as exc:
                raise RayUnavailable(f"Ray did not start: {exc}") from None
            self._started_ray = True
        self.bus.gate = self._publish_main
        actor = ray.remote(num_cpus=0)(_RayWorker)
        self._actors = [actor.remote(i, self.lanes, self.clock.t0, self.stall_timeout) for i in range(self.n)]
        await asyncio.gather(*(a.ready.remote() for a in self._actors))

    async def _consume(self, w: int, gen) -> tuple[int, str | None]:
        errors, failure = 0, None
        try:
            async for ref in gen:
                msg = await ref
                self._receive(w, msg)
                if msg.get("done"):
                    errors, failure = msg.get("errors", 0), msg.get("failure")
        except Exception as exc:  # the actor died: its unfinished requests become error events
            lost = self._lost(w, f"failed ({type(exc).__name__})")
            return lost, f"worker {w}: {exc}"
        finally:
            self._busy[w] = max(0, self._busy.get(w, 0) - 1)
        return errors, failure

    async def run_job(self, lane: str, items: Sequence[Item], *, lead_s: float = 0.2) -> int:
        start_ns = self.clock.now() + int(lead_s * 1e9)
        consumers = []
        for w, share in enumerate(self._shares(lane, items)):
            if not share:
                continue
            self._busy[w] = self._busy.get(w, 0) + 1
            gen = self._actors[w].run_job.options(num_returns="streaming").remote(lane, start_ns, share)
            consumers.append(self._consume(w, gen))
        errors = 0
        for n_err, failure in await asyncio.gather(*consumers):
            errors += n_err or 0
            if failure:
                self.failures.append(failure)
        await self._settle(self.clock.now())
        return errors

    async def aclose(self) -> None:
        for a in self._actors:
            try:
                self._ray.kill(a)
            except Exception:
                pass
        self._close_merge()
        if self._started_ray:
            self._ray.shutdown()
