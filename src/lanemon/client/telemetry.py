"""GPU telemetry of a lane: dcgm-exporter's Prometheus text over HTTP, or NVML on this machine.

A lane names where its GPUs report (``telemetry = "http://host:9400/metrics"`` or ``"nvml"`` in its
lanes.toml table, ``--telemetry NAME=URL``).  Each reading becomes one ``gpu`` event::

    {"ok": true, "source": "dcgm" | "nvml", "latency_s": ..., "power_w": <sum over GPUs>,
     "energy_mj": <sum of the energy counters, when every GPU has one>, "gpus": [ {...}, ... ]}

and each GPU's dict carries what it reported (missing keys: not reported): ``gpu`` (index label),
``uuid``, ``model``, ``host``, ``util_pct``, ``power_w``, ``energy_mj`` (the device's counter since boot,
millijoules), ``sm_clock_mhz``, ``mem_clock_mhz``, ``temp_c``, ``fb_used_mib`` / ``fb_free_mib``,
``unified`` (true when the device reports no framebuffer figure: unified memory such as the GB10's, shown
as "unified", never as 0), ``reasons`` (the clock-event bitmask) with ``throttle`` (its names) and
``xid`` (the last XID error, 0 = none).

Every value is untrusted: a sample that is not finite, outside what a GPU can physically report (power
0..5 kW, utilisation 0..100 %, temperature -40..150 C, ...) or one of DCGM's blank / not-supported
sentinels is dropped, labels are made inert and cut, at most :data:`MAX_GPUS` GPUs are kept, and the body
is read through the same bounded reader as ``/metrics`` (:mod:`lanemon.client.prom`'s parser).
docs/GPU.md has the names and formulas.  Never imports ``textual``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from typing import Any

import httpx

from lanemon import events as schema
from lanemon.client.prom import PromParseError, Samples, parse
from lanemon.events import Clock, Event
from lanemon.measure.bounds import GPU, MAX_GPUS, number
from lanemon.results.readings import GpuReading, Telemetry, event_data, read

NVML = "nvml"
BODY_LIMIT = 2 << 20
"""A telemetry body larger than this (2 MiB) is not read: dcgm-exporter's default counters for 64 GPUs with
Kubernetes labels are ~0.7 MiB (~35 series of ~300 bytes each per GPU)."""
LINE_LIMIT = 4096
"""A line of the exposition longer than this is not read (a series with a 1 MB label): counted as dropped."""
SERIES_LIMIT = 4 * MAX_GPUS
"""Series read per metric name (a GPU per series; MIG instances may add a few): the rest are not parsed."""
DEADLINE_S = 3.0
"""A whole reading -- connect, answer, body -- within this long, or it is missing (dcgm-exporter answers from
its cache in milliseconds): a dripping endpoint costs a reading, never the run (client/monitors.py waits at
most this long for one, and 0.25 s once the endpoint's last reading failed)."""
TIMEOUT_S = 2.0
SLOW_NS = 250_000_000
"""A reading still in flight after this long (0.25 s) when the run ends is given up and said to be missing."""

#: our key -> (dcgm-exporter names, first present wins; lowest, highest physically possible value)
DCGM: dict[str, tuple[tuple[str, ...], float, float]] = {
    key: (names, *GPU[key]) for key, names in (
        ("util_pct", ("DCGM_FI_DEV_GPU_UTIL",)),
        ("power_w", ("DCGM_FI_DEV_POWER_USAGE",)),
        # a counter: prometheus_client's parser names its sample with _total (the exposition has no suffix)
        ("energy_mj", ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_total", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")),
        ("sm_clock_mhz", ("DCGM_FI_DEV_SM_CLOCK",)),
        ("mem_clock_mhz", ("DCGM_FI_DEV_MEM_CLOCK",)),
        ("temp_c", ("DCGM_FI_DEV_GPU_TEMP",)),
        ("fb_used_mib", ("DCGM_FI_DEV_FB_USED",)),
        ("fb_free_mib", ("DCGM_FI_DEV_FB_FREE",)),
        ("reasons", ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")),
        ("xid", ("DCGM_FI_DEV_XID_ERRORS",)),
    )
}
#: the exposition names read (a line of any other family is never parsed)
_READ = frozenset(n.removesuffix("_total") for names, _, _ in DCGM.values() for n in names)
#: clock-event reason bits (DCGM_CLOCKS_EVENT_REASON_* / nvmlClocksEventReason*) -> a short name
REASONS = ((0x1, "idle"), (0x2, "app-clocks"), (0x4, "sw-power-cap"), (0x8, "hw-slowdown"), (0x10, "sync-boost"),
           (0x20, "sw-thermal"), (0x40, "hw-thermal"), (0x80, "hw-power-brake"), (0x100, "display-clocks"))
#: DCGM's sentinels: int64 blank / not found / not supported / no permission start here (0x7ffffffffffffff0);
#: the fp64 ones at 2**47 (DCGM_FP64_BLANK = 140737488355328.0 and the next few)
_INT64_BLANK = float(0x7FFFFFFFFFFFFFF0)
_FP64_BLANK = 140737488355328.0
_UNREPORTED = object()
"""What :func:`_value` returns for a DCGM sentinel: not a value, and not an impossible one either."""


def _value(v: float, lo: float, hi: float) -> Any:
    """*v* when physically possible; :data:`_UNREPORTED` for a DCGM sentinel ("not reported"); None when it
    is not a possible value (dropped and counted)."""
    x = number(v)
    if x is None:
        return None
    if x >= _INT64_BLANK or _FP64_BLANK <= x <= _FP64_BLANK + 16:
        return _UNREPORTED
    return x if lo <= x <= hi else None


def select(text: str) -> tuple[str, int]:
    """The lines of an exposition this client reads -- the :data:`DCGM` families' samples and their
    ``# TYPE`` / ``# HELP`` lines, at most :data:`SERIES_LIMIT` samples a name, none longer than
    :data:`LINE_LIMIT` -- and how many samples of those families were left out (over-long or past the limit).
    Everything else (other exporters' families, 200,000 GPUs) costs a line split, never a parse."""
    keep: list[str] = []
    per: dict[str, int] = {}
    skipped = 0
    for line in text.split("\n"):
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("TYPE", "HELP") and parts[2] in _READ and len(line) <= LINE_LIMIT:
                keep.append(line)
            continue
        if not line.startswith("DCGM_FI_DEV_"):
            continue
        end = len(line)
        for stop in ("{", " "):
            i = line.find(stop, 0, 64)
            if i != -1 and i < end:
                end = i
        name = line[:end].removesuffix("_total")
        if name not in _READ:
            continue
        n = per.get(name, 0)
        if len(line) > LINE_LIMIT or n >= SERIES_LIMIT:
            skipped += 1
            continue
        per[name] = n + 1
        keep.append(line)
    return "\n".join(keep) + "\n", skipped


def throttle_names(reasons: int) -> list[str]:
    """The names of the set clock-event bits (``idle`` is not a throttle but is named, as nvidia-smi does)."""
    return [name for bit, name in REASONS if reasons & bit]


def _label(labels: dict[str, str], *names: str) -> str | None:
    from lanemon.untrusted import inert

    for n in names:
        if labels.get(n):
            return inert(labels[n], 64)
    return None


def _finish(g: GpuReading) -> GpuReading:
    """*g* once every value is in: ``unified`` (no framebuffer figure) and the ``throttle`` names of its reasons."""
    g.unified = g.fb_used_mib is None and g.fb_free_mib is None
    if g.reasons is not None:
        g.throttle = throttle_names(g.reasons)
    return g


def map_dcgm(samples: Samples) -> list[GpuReading]:
    """One reading per GPU (keyed by its ``gpu``/``UUID`` labels) from a dcgm-exporter exposition; [] when none
    of its names is present.  Unified-memory devices (no framebuffer figure reported) get ``unified: True``.
    A GPU whose values were not physically possible carries ``dropped`` (how many)."""
    gpus: dict[tuple[str, str], GpuReading] = {}
    for key, (names, lo, hi) in DCGM.items():
        for name in names:
            if name not in samples:
                continue
            for labels, raw in samples[name]:
                ident = (str(labels.get("gpu", ""))[:16], str(labels.get("UUID", labels.get("uuid", "")))[:64])
                g = gpus.get(ident)
                if g is None:
                    if len(gpus) >= MAX_GPUS:
                        continue
                    g = gpus[ident] = GpuReading(gpu=_label(labels, "gpu") or str(len(gpus)),
                                                 uuid=_label(labels, "UUID", "uuid"),
                                                 model=_label(labels, "modelName", "model_name"),
                                                 host=_label(labels, "Hostname", "hostname"))
                v = _value(raw, lo, hi)
                if v is None:
                    g.dropped += 1
                elif v is not _UNREPORTED:
                    setattr(g, key, int(v) if key in ("reasons", "xid") else v)
            break
    out = [_finish(g) for g in gpus.values()]  # a GPU is only made for a sample of it: every one was seen
    out.sort(key=lambda g: (len(g.gpu), g.gpu))
    return out


def summarise(gpus: list[GpuReading]) -> Telemetry:
    """A successful reading of *gpus* with the host-level sums: ``power_w`` (every GPU that reported one),
    ``energy_mj`` (only when every GPU has a counter: a partial sum would not be this host's energy), the
    ``gpu_count``, and ``dropped`` (values not physically possible, moved from the GPUs to the reading)."""
    out = Telemetry(ok=True, gpu_count=len(gpus), gpus=gpus)
    power = [g.power_w for g in gpus if g.power_w is not None]
    if power:
        out.power_w = sum(power)
    if gpus and all(g.energy_mj is not None for g in gpus):
        out.energy_mj = sum(g.energy_mj for g in gpus)  # type: ignore[misc]
    # said with the reading, so a replay counts the same (measure/bounds.gpu_reading)
    out.dropped = sum(g.dropped for g in gpus)
    for g in gpus:
        g.dropped = 0
    return out


def telemetry_message(message: str) -> str:
    """A failed reading's message, naming the telemetry endpoint as the one at fault (the transport's messages
    are written for lanes: "lane answered 307 -> ...", "the lane's gzip body ...")."""
    message = (message.replace("the lane's ", "the telemetry endpoint's ").replace("the lane ", "the telemetry endpoint ")
               .replace("lane answered ", "GPU telemetry answered "))
    return message if message.startswith("GPU telemetry") else f"GPU telemetry: {message}"


class TelemetryScraper:
    """Reads one lane's GPU telemetry; each :meth:`scrape` emits one ``gpu`` event.

    ``url`` is a dcgm-exporter ``/metrics`` URL or ``"nvml"`` (this machine's GPUs through nvidia-ml-py,
    imported on first use; ``nvml`` may be given a module for tests).  ``available`` becomes False for good
    when the source cannot work (404, a body with no DCGM name, NVML missing); transport errors are
    reported and the caller tries again.
    """

    def __init__(self, lane: str, url: str, http: httpx.AsyncClient | None, *, clock: Clock,
                 emit: Callable[[Event], None], timeout: float = TIMEOUT_S, deadline: float = DEADLINE_S,
                 nvml: Any = None) -> None:
        from lanemon.untrusted import Redactor, url_secrets

        self.lane = lane
        self.url = url
        self.source = NVML if url == NVML else "dcgm"
        self.http = http
        self.clock = clock
        self.emit = emit
        self.timeout = timeout
        self.deadline = deadline
        """The whole reading's bound (:data:`DEADLINE_S`): a dripping endpoint costs a reading, never more."""
        self.available = True
        self.healthy = True
        """The last reading succeeded (an edge waits for this endpoint's readings; a failing one, briefly)."""
        self.redactor = Redactor(url_secrets(url) if self.source == "dcgm" else ())
        self._nvml = nvml
        self._nvml_reader: NvmlReader | None = None
        self._lock = asyncio.Lock()
        self._t_resp = 0

    async def scrape(self) -> Telemetry:
        """One reading (a second caller waits for the reading in flight to end first: polls never overlap)."""
        async with self._lock:
            start = self._t_resp = self.clock.now()
            try:
                if self.source == NVML:
                    data = await self._read_nvml()
                else:
                    data = await self._read_dcgm()
            except asyncio.CancelledError:  # the run ended first (client/monitors.py): this reading is missing
                # a slow one is said (a quick one was just cut short; a failing endpoint has said why already)
                if self.healthy and self.clock.now() - start >= SLOW_NS:
                    self.emit(Event(self.clock.now(), schema.GPU, self.lane, None,
                                    {"ok": False, "source": self.source, "cls": schema.ERR_TIMEOUT,
                                     "message": f"GPU telemetry: no answer in {(self.clock.now() - start) / 1e9:.1f} s "
                                                "when the run ended (the reading was given up)"}))
                raise
            except Exception as exc:  # transport errors, a body over the cap, the deadline
                from lanemon.client.errors import describe_exception

                cls, message = describe_exception(exc, self.url)
                data = Telemetry(ok=False, cls=cls, message=telemetry_message(message))
            data.source = self.source
            now = self.clock.now()
            if data.ok:
                # the reading was taken somewhere in the request's flight (latency_s); parse_s: from the answer
                # to this event, so the energy arithmetic can put the reading where it was taken
                data.latency_s = round(max(0, self._t_resp - start) / 1e9, 6)
                data.parse_s = round(max(0, now - self._t_resp) / 1e9, 6)
            self.healthy = data.ok
            event = Event(now, schema.GPU, self.lane, None, self.redactor.scrub(event_data(data), 200,
                                                                                items=MAX_GPUS + 16))
            self.emit(event)
            return read(event.data, Telemetry) or data  # as the event holds it: server text redacted

    async def _read_dcgm(self) -> Telemetry:
        from lanemon.client.http import get_bounded

        assert self.http is not None
        resp, body = await get_bounded(self.http, "GET", self.url, limit=BODY_LIMIT, deadline=self.deadline,
                                       timeout=httpx.Timeout(self.timeout),
                                       headers={"Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1"})
        self._t_resp = self.clock.now()
        if resp.status_code in (404, 410):
            self.available = False
            return Telemetry(ok=False, available=False, cls=schema.ERR_HTTP, status=resp.status_code,
                             message=f"no GPU telemetry at this URL (HTTP {resp.status_code})")
        if resp.status_code >= 400:
            return Telemetry(ok=False, cls=schema.ERR_HTTP, status=resp.status_code,
                             message=f"GPU telemetry: HTTP {resp.status_code}")
        return await asyncio.to_thread(self._parse, body.decode("utf-8", "replace"))

    def _parse(self, text: str) -> Telemetry:
        text, skipped = select(text)
        try:
            gpus = map_dcgm(parse(text))
        except PromParseError as exc:
            return Telemetry(ok=False, cls=schema.ERR_MALFORMED, message=telemetry_message(str(exc))[:200])
        if not gpus:
            self.available = False
            return Telemetry(ok=False, available=False, cls=schema.ERR_MALFORMED,
                             message="no DCGM_FI_DEV_* metric in this exposition (is it dcgm-exporter?)")
        data = summarise(gpus)
        data.dropped += skipped  # series over the line or GPU limits: not read, counted
        return data

    async def _read_nvml(self) -> Telemetry:
        if self._nvml_reader is None:
            try:
                self._nvml_reader = await asyncio.to_thread(NvmlReader, self._nvml)
            except NvmlUnavailable as exc:
                self.available = False
                return Telemetry(ok=False, available=False, cls=schema.ERR_OTHER, message=str(exc)[:200])
        gpus = await asyncio.to_thread(self._nvml_reader.read)
        self._t_resp = self.clock.now()
        return summarise(gpus)


class NvmlUnavailable(RuntimeError):
    """nvidia-ml-py is not installed or NVML did not initialise (no driver, no GPU)."""


class NvmlReader:
    """This machine's GPUs through NVML (nvidia-ml-py's ``pynvml``; *module* replaces it in tests).

    Every call is guarded: a GPU that does not support a query (the GB10's framebuffer memory info, for
    one) simply lacks that key.  Blocking: call from a thread.
    """

    def __init__(self, module: Any = None) -> None:
        if module is None:
            try:
                import pynvml as module  # nvidia-ml-py
            except ImportError:
                raise NvmlUnavailable("telemetry = \"nvml\" needs nvidia-ml-py (pip install nvidia-ml-py)") from None
        self.nv = module
        try:
            self.nv.nvmlInit()
            count = int(self.nv.nvmlDeviceGetCount())
        except Exception as exc:
            raise NvmlUnavailable(f"NVML did not start: {exc.__class__.__name__}: {str(exc)[:120]}") from None
        self.handles = [self.nv.nvmlDeviceGetHandleByIndex(i) for i in range(min(max(count, 0), MAX_GPUS))]

    def _try(self, fn: str, *args: Any) -> Any:
        try:
            return getattr(self.nv, fn)(*args)
        except Exception:
            return None

    def read(self) -> list[GpuReading]:
        from lanemon.untrusted import inert

        nv = self.nv
        out = []
        for i, h in enumerate(self.handles):
            g = GpuReading(gpu=str(i))
            name = self._try("nvmlDeviceGetName", h)
            uuid = self._try("nvmlDeviceGetUUID", h)
            for key, val in (("model", name), ("uuid", uuid)):
                if isinstance(val, bytes):
                    val = val.decode("utf-8", "replace")
                if isinstance(val, str) and val:
                    setattr(g, key, inert(val, 64))

            def put(key: str, raw: Any, scale: float = 1.0, g: GpuReading = g) -> None:
                x = number(raw)
                if x is not None:
                    v = _value(x * scale, *GPU[key])
                    if v is None:
                        g.dropped += 1
                    elif v is not _UNREPORTED:
                        setattr(g, key, int(v) if key in ("reasons", "xid") else v)

            util = self._try("nvmlDeviceGetUtilizationRates", h)
            put("util_pct", getattr(util, "gpu", None))
            put("power_w", self._try("nvmlDeviceGetPowerUsage", h), 1e-3)  # milliwatts
            put("energy_mj", self._try("nvmlDeviceGetTotalEnergyConsumption", h))  # millijoules since driver load
            put("sm_clock_mhz", self._try("nvmlDeviceGetClockInfo", h, getattr(nv, "NVML_CLOCK_SM", 1)))
            put("mem_clock_mhz", self._try("nvmlDeviceGetClockInfo", h, getattr(nv, "NVML_CLOCK_MEM", 2)))
            put("temp_c", self._try("nvmlDeviceGetTemperature", h, getattr(nv, "NVML_TEMPERATURE_GPU", 0)))
            reasons = self._try("nvmlDeviceGetCurrentClocksEventReasons", h)
            if reasons is None:
                reasons = self._try("nvmlDeviceGetCurrentClocksThrottleReasons", h)
            put("reasons", reasons)
            mem = self._try("nvmlDeviceGetMemoryInfo", h)
            if mem is not None:
                put("fb_used_mib", getattr(mem, "used", None), 1 / (1 << 20))
                put("fb_free_mib", getattr(mem, "free", None), 1 / (1 << 20))
            out.append(_finish(g))
        return out
