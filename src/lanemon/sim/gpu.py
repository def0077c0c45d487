"""The simulated lane's GPU: power, energy, utilisation, clocks and temperature modelled from its own load,
served in dcgm-exporter's Prometheus format (``lanemon sim --gpu-telemetry-port P``).

The device is GB10-like (the DGX Spark of the write-up): one GPU sharing unified LPDDR5x memory with the
CPU, so there is no framebuffer figure: DCGM answers "not supported" for ``DCGM_FI_DEV_FB_USED`` / ``FREE``
and dcgm-exporter prints DCGM's sentinel for that (``9223372036854775794``, ``DCGM_INT64_NOT_SUPPORTED``),
which the simulator prints too.

Power is a function of the scheduler's batch (``Lane.active``: streams admitted, prefilling or decoding)::

    P(0) = idle_w;   P(n) = busy_w + (cap_w - busy_w) * (1 - exp(-(n - 1) / batch_k))   for n >= 1

The energy counter is that power integrated exactly: :meth:`GpuModel.advance` is called by the scheduler
just *before* every change of its batch (``Lane.on_load``), so between two calls the power is constant and
the energy grows by ``P * dt``.  Time is wall-clock (``time.perf_counter``): at ``--time-scale X`` the same
work takes X of the time at the same power, so every joule figure is X times the real-time one (tokens per
joule 1/X times): the figures are labelled simulated.  ``/sim/gpu`` on the lane's own port returns the
exact counter and the breakpoints of the energy curve, the ground truth tests compare with.

Never imports the measuring side (``client``, ``measure``, ...).
"""

from __future__ import annotations

import collections
import math
import socket
import time
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

#: dcgm-exporter's default counters (etc/default-counters.csv) this device reports, plus the clock-event
#: reasons (``DCGM_FI_DEV_CLOCKS_EVENT_REASONS``, a bitmask; older releases: ``..._CLOCK_THROTTLE_REASONS``).
FIELDS: tuple[tuple[str, str, str], ...] = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "gauge", "Current clock event reasons (bitmask)."),
)
NOT_SUPPORTED = 9223372036854775794
"""``DCGM_INT64_NOT_SUPPORTED`` (0x7ffffffffffffff2), as dcgm-exporter prints it for a field the device lacks."""
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# clock-event reason bits (DCGM_CLOCKS_EVENT_REASON_*)
REASON_GPU_IDLE = 0x1
REASON_SW_POWER_CAP = 0x4


@dataclass(frozen=True)
class Device:
    """One simulated GPU's constants (modelled, not measured: docs/GPU.md)."""

    model: str = "NVIDIA GB10"
    idle_w: float = 11.0
    busy_w: float = 32.0
    """Power with one stream in flight."""
    cap_w: float = 100.0
    """The power the batch rises toward; within 3 % of it the SW power cap reason is set and clocks drop."""
    batch_k: float = 5.0
    """Streams over which the power covers 63 % of the way from busy_w to cap_w."""
    sm_idle_mhz: int = 208
    sm_boost_mhz: int = 2418
    mem_clock_mhz: int = 4266
    ambient_c: float = 34.0
    c_per_w: float = 0.42
    """Steady-state temperature rise per watt."""
    tau_s: float = 25.0
    """Thermal time constant."""
    unified_memory: bool = True


#: Per profile: lane A's TensorFold keeps its batch cooler, lane B's SGLang runs the GPU harder per stream.
DEVICES: dict[str, Device] = {
    "tensorfold-exl3": Device(busy_w=30.0, cap_w=96.0, batch_k=6.0),
    "sglang-native": Device(busy_w=34.0, cap_w=104.0, batch_k=4.0),
}


def power_w(dev: Device, batch: int) -> float:
    """The modelled power draw (W) at *batch* streams in flight."""
    if batch <= 0:
        return dev.idle_w
    return dev.busy_w + (dev.cap_w - dev.busy_w) * (1.0 - math.exp(-(batch - 1) / dev.batch_k))


@dataclass
class GpuModel:
    """One simulated GPU: integrates power over time as the scheduler's batch changes."""

    device: Device = field(default_factory=Device)
    index: int = 0
    uuid: str = "GPU-5e0c7a1d-0b10-4d5a-9c1e-000000000000"
    clock: Callable[[], float] = time.perf_counter
    history_max: int = 50_000
    batch: int = 0
    energy_mj: float = 0.0
    busy_s: float = 0.0
    temp_c: float = field(init=False)
    t_last: float = field(init=False)
    history: collections.deque = field(init=False)
    """``(t, energy_mj, power_w)`` at every breakpoint: the energy curve is linear between them."""
    _util_at: tuple[float, float] = field(init=False)

    def __post_init__(self) -> None:
        self.t_last = self.clock()
        self.temp_c = self.device.ambient_c + self.device.c_per_w * self.device.idle_w
        self.history = collections.deque(maxlen=self.history_max)
        self.history.append((self.t_last, 0.0, self.power_w))
        self._util_at = (self.t_last, 0.0)

    @property
    def power_w(self) -> float:
        return power_w(self.device, self.batch)

    def advance(self, now: float | None = None) -> None:
        """Account for the time since the last call at the current batch (call before changing it)."""
        now = self.clock() if now is None else now
        dt = now - self.t_last
        if dt <= 0:
            return
        p = self.power_w
        self.energy_mj += p * dt * 1000.0
        if self.batch > 0:
            self.busy_s += dt
        target = self.device.ambient_c + self.device.c_per_w * p
        self.temp_c = target + (self.temp_c - target) * math.exp(-dt / self.device.tau_s)
        self.t_last = now

    def set_batch(self, batch: int, now: float | None = None) -> None:
        """The scheduler's batch is now *batch* (the energy up to now counted at the old one)."""
        self.advance(now)
        if batch != self.batch:
            self.batch = max(0, int(batch))
            self.history.append((self.t_last, self.energy_mj, self.power_w))

    def read(self) -> "GpuSample":
        """One reading, as the exporter would publish it now (utilisation over the time since the last read)."""
        self.advance()
        t0, b0 = self._util_at
        span = self.t_last - t0
        util = 100.0 * (self.busy_s - b0) / span if span > 0 else (100.0 if self.batch else 0.0)
        if span >= 0.05:
            self._util_at = (self.t_last, self.busy_s)
        dev = self.device
        p = self.power_w
        reasons = 0
        if self.batch == 0:
            reasons |= REASON_GPU_IDLE
            sm = dev.sm_idle_mhz
        elif p >= 0.97 * dev.cap_w:
            reasons |= REASON_SW_POWER_CAP
            sm = int(dev.sm_boost_mhz * 0.9)
        else:
            sm = dev.sm_boost_mhz
        return GpuSample(power_w=p, energy_mj=self.energy_mj, util_pct=max(0.0, min(100.0, util)), sm_clock_mhz=sm,
                         mem_clock_mhz=dev.mem_clock_mhz, temp_c=self.temp_c, reasons=reasons, xid=0, batch=self.batch)

    def truth(self) -> "GpuTruth":
        """``/sim/gpu``: the exact counter and the energy curve's breakpoints (perf_counter seconds)."""
        self.advance()
        return GpuTruth(model=self.device.model, unified_memory=self.device.unified_memory, t_mono=self.t_last,
                        energy_j=self.energy_mj / 1000.0, power_w=self.power_w, batch=self.batch,
                        history=[[t, e / 1000.0, p] for t, e, p in self.history])


class GpuSample(NamedTuple):
    """One reading of the simulated GPU, as its exporter publishes it (:meth:`GpuModel.read`)."""

    power_w: float
    energy_mj: float
    """The energy counter since the model started, millijoules."""
    util_pct: float
    sm_clock_mhz: int
    mem_clock_mhz: int
    temp_c: float
    reasons: int
    """The clock-event bitmask (idle, software power cap)."""
    xid: int
    batch: int


@dataclass
class GpuTruth:
    """``/sim/gpu`` (JSON: orjson writes the fields in this order): the exact energy counter and its breakpoints."""

    model: str
    unified_memory: bool
    t_mono: float
    """perf_counter seconds of this answer."""
    energy_j: float
    power_w: float
    batch: int
    history: list[list[float]]
    """``[t_mono, energy_j, power_w]`` at every batch change (:func:`energy_between`)."""


def energy_between(history: list[list[float]], t0: float, t1: float) -> float:
    """Joules between *t0* and *t1* from :meth:`GpuModel.truth`'s breakpoints (linear between them, the
    power of the last breakpoint after it)."""

    def at(t: float) -> float:
        prev = history[0]
        for row in history:
            if row[0] > t:
                break
            prev = row
        return prev[1] + prev[2] * max(0.0, t - prev[0])

    return at(t1) - at(t0)


def exposition(model: GpuModel, hostname: str | None = None) -> bytes:
    """dcgm-exporter's text for one GPU: ``# HELP`` / ``# TYPE`` per field, then one sample per field labelled
    as dcgm-exporter labels it (``gpu``, ``UUID``, ``pci_bus_id``, ``device``, ``modelName``, ``Hostname``)."""
    r = model.read()
    host = hostname if hostname is not None else socket.gethostname()
    labels = (f'gpu="{model.index}",UUID="{model.uuid}",pci_bus_id="0000000F:01:00.0",device="nvidia{model.index}",'
              f'modelName="{model.device.model}",Hostname="{_label(host)}"')
    unified = model.device.unified_memory
    values = {
        "DCGM_FI_DEV_SM_CLOCK": r.sm_clock_mhz, "DCGM_FI_DEV_MEM_CLOCK": r.mem_clock_mhz,
        "DCGM_FI_DEV_MEMORY_TEMP": NOT_SUPPORTED, "DCGM_FI_DEV_GPU_TEMP": round(r.temp_c),
        "DCGM_FI_DEV_POWER_USAGE": round(r.power_w, 3),
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": int(r.energy_mj),
        "DCGM_FI_DEV_GPU_UTIL": round(r.util_pct), "DCGM_FI_DEV_MEM_COPY_UTIL": round(r.util_pct * 0.6),
        "DCGM_FI_DEV_XID_ERRORS": r.xid,
        "DCGM_FI_DEV_FB_FREE": NOT_SUPPORTED if unified else 0, "DCGM_FI_DEV_FB_USED": NOT_SUPPORTED if unified else 0,
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": r.reasons,
    }
    lines = []
    for name, kind, doc in FIELDS:
        lines += [f"# HELP {name} {doc}", f"# TYPE {name} {kind}", f"{name}{{{labels}}} {values[name]}"]
    return ("\n".join(lines) + "\n").encode()


def _label(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")[:64]


def telemetry_app(model: GpuModel):
    """The ASGI app of the telemetry port: ``GET /metrics`` only (as dcgm-exporter serves it)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    async def metrics(request: Request) -> Response:
        return Response(exposition(model), media_type=CONTENT_TYPE)

    async def not_found(request: Request, exc: Exception) -> Response:
        return PlainTextResponse("404 page not found\n", status_code=404)

    return Starlette(routes=[Route("/metrics", metrics, methods=["GET"])], exception_handlers={404: not_found})


class PortDispatch:
    """ASGI: requests that arrived on the telemetry socket go to the telemetry app, the rest to the lane."""

    def __init__(self, lane_app, telemetry, port: int) -> None:
        self.lane_app, self.telemetry, self.port = lane_app, telemetry, port

    async def __call__(self, scope, receive, send) -> None:
        server = scope.get("server") if scope.get("type") == "http" else None
        if server is not None and len(server) > 1 and server[1] == self.port:
            await self.telemetry(scope, receive, send)
        else:
            await self.lane_app(scope, receive, send)
