"""What the main process and its workers send each other (pipes and Ray calls), as msgspec Structs.

* main -> worker: a :class:`Job` (a lane, a start time and the :class:`Item` s to send) or :class:`Stop`;
  the lanes a worker builds its clients from are the :class:`~lanemon.config.LaneConfig` s themselves.
* worker -> main: a :class:`Batch` of events with a heartbeat every 20 ms; :class:`Ready` once (clients
  built), :class:`Done` at a job's end (how many requests did not complete, and why the job itself failed),
  :class:`Bye` last.  One tagged union, :data:`FromWorker`.
* a Ray worker's :class:`WorkerInfo` at start; the main process keeps each worker's :class:`WorkerHost`
  (the recording header's ``workers``) and, when one is lost, a :class:`LostHost`.

Both backends encode these with msgspec (MessagePack): :data:`encode`, :data:`to_worker`, :data:`from_worker`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lanemon.events import Event


class Item(msgspec.Struct):
    """One request a worker sends: when (s after the job's start), and exactly what."""

    offset_s: float
    req_id: str
    endpoint: str
    body: dict[str, Any]
    """The request body as the workload built it (free-form JSON: the lane's defaults, extra_body)."""
    purpose: str = ""
    meta: dict[str, Any] = msgspec.field(default_factory=dict)
    """Recorded with the request as the workload's own keys (free-form per workload) plus ``worker``."""


class Job(msgspec.Struct, tag="job"):
    """Send ``items`` of lane ``lane``, each at ``start_ns`` (session clock) + its offset."""

    job: int
    lane: str
    start_ns: int
    items: list[Item]


class Stop(msgspec.Struct, tag="stop"):
    """Finish the jobs in hand, flush, say :class:`Bye` and exit."""


class Batch(msgspec.Struct, tag="batch"):
    """A worker's heartbeat (``hb``: nothing stamped earlier can follow) and the events buffered since the last."""

    hb: int
    ev: list[Event] = []


class Ready(Batch, tag="ready"):
    """The worker's clients are built: jobs may be timed."""


class Done(Batch, tag="done"):
    """Job ``job`` is over: ``errors`` of its requests did not complete; ``failure`` if the job itself raised."""

    job: int = 0
    errors: int = 0
    failure: str | None = None


class Bye(Batch, tag="bye"):
    """The worker's last message."""


ToWorker = Job | Stop
FromWorker = Batch | Ready | Done | Bye

encode = msgspec.msgpack.Encoder().encode
to_worker = msgspec.msgpack.Decoder(ToWorker).decode
from_worker = msgspec.msgpack.Decoder(FromWorker).decode
job_items = msgspec.msgpack.Decoder(list[Item]).decode


class WorkerInfo(msgspec.Struct):
    """What a Ray worker says about itself when placed."""

    version: str
    host: str
    pid: int
    address: str
    node: str


worker_info = msgspec.msgpack.Decoder(WorkerInfo).decode


class WorkerHost(msgspec.Struct):
    """Worker ``worker``'s host and its clock offset (the recording header's ``workers``, --json's
    ``worker_hosts``: this order of keys)."""

    worker: int
    version: str
    host: str
    pid: int
    address: str
    node: str
    offset_ns: int | None = None
    offset_uncertainty_ns: int | None = None
    synced_at_ns: int | None = None


class LostHost(msgspec.Struct):
    """A load host lost mid-job (the end mark's ``workers_lost``)."""

    worker: int
    node: str | None
    host: str | None
    address: str | None
    why: str
    in_flight_errors: int


class JobReport(msgspec.Struct, omit_defaults=True):
    """What the last job lost: requests never sent and the hosts.  Its end mark carries
    ``msgspec.to_builtins(report)``: only what happened (no key when nothing was lost)."""

    not_sent: int = 0
    workers_lost: list[LostHost] = []
