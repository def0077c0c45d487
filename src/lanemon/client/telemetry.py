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
from lanemon.client.prom import METRICS_BODY_LIMIT, PromParseError, Samples, parse
from lanemon.events import Clock, Event

MAX_GPUS = 64
NVML = "nvml"

#: our key -> (dcgm-exporter names, first present wins; lowest, highest physically possible value)
DCGM: dict[str, tuple[tuple[str, ...], float, float]] = {
    "util_pct": (("DCGM_FI_DEV_GPU_UTIL",), 0.0, 100.0),
    "power_w": (("DCGM_FI_DEV_POWER_USAGE",), 0.0, 5000.0),
    # a counter: prometheus_client's parser names its sample with _total (the exposition has no suffix)
    "energy_mj": (("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_total", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"), 0.0, 1e17),
    "sm_clock_mhz": (("DCGM_FI_DEV_SM_CLOCK",), 0.0, 10000.0),
    "mem_clock_mhz": (("DCGM_FI_DEV_MEM_CLOCK",), 0.0, 50000.0),
    "temp_c": (("DCGM_FI_DEV_GPU_TEMP",), -40.0, 150.0),
    "fb_used_mib": (("DCGM_FI_DEV_FB_USED",), 0.0, 16e6),
    "fb_free_mib": (("DCGM_FI_DEV_FB_FREE",), 0.0, 16e6),
    "reasons": (("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"), 0.0, float(1 << 32)),
    "xid": (("DCGM_FI_DEV_XID_ERRORS",), 0.0, 1e6),
}
#: clock-event reason bits (DCGM_CLOCKS_EVENT_REASON_* / nvmlClocksEventReason*) -> a short name
REASONS = ((0x1, "idle"), (0x2, "app-clocks"), (0x4, "sw-power-cap"), (0x8, "hw-slowdown"), (0x10, "sync-boost"),
           (0x20, "sw-thermal"), (0x40, "hw-thermal"), (0x80, "hw-power-brake"), (0x100, "display-clocks"))
#: DCGM's sentinels: int64 blank / not found / not supported / no permission start here (0x7ffffffffffffff0);
#: the fp64 ones at 2**47 (DCGM_FP64_BLANK = 140737488355328.0 and the next few)
_INT64_BLANK = float(0x7FFFFFFFFFFFFFF0)
_FP64_BLANK = 140737488355328.0


def _value(v: float, lo: float, hi: float) -> float | None:
    if not math.isfinite(v) or v >= _INT64_BLANK or _FP64_BLANK <= v <= _FP64_BLANK + 16:
        return None
    return v if lo <= v <= hi else None


def throttle_names(reasons: int) -> list[str]:
    """The names of the set clock-event bits (``idle`` is not a throttle but is named, as nvidia-smi does)."""
    return [name for bit, name in REASONS if reasons & bit]


def _label(labels: dict[str, str], *names: str) -> str | None:
    from lanemon.untrusted import inert

    for n in names:
        if labels.get(n):
            return inert(labels[n], 64)
    return None


def map_dcgm(samples: Samples) -> list[dict[str, Any]]:
    """One dict per GPU (keyed by its ``gpu``/``UUID`` labels) from a dcgm-exporter exposition; [] when none
    of its names is present.  Unified-memory devices (no framebuffer figure reported) get ``unified: True``."""
    gpus: dict[tuple[str, str], dict[str, Any]] = {}
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
                    g = gpus[ident] = {"gpu": _label(labels, "gpu") or str(len(gpus)),
                                       "uuid": _label(labels, "UUID", "uuid"),
                                       "model": _label(labels, "modelName", "model_name"),
                                       "host": _label(labels, "Hostname", "hostname")}
                    g["_seen"] = set()
                g["_seen"].add(key)
                v = _value(raw, lo, hi)
                if v is not None:
                    g[key] = int(v) if key in ("reasons", "xid") else v
            break
    out = []
    for g in gpus.values():
        seen = g.pop("_seen")
        if not seen:
            continue
        g["unified"] = "fb_used_mib" not in g and "fb_free_mib" not in g
        if "reasons" in g:
            g["throttle"] = throttle_names(g["reasons"])
        out.append({k: v for k, v in g.items() if v is not None})
    out.sort(key=lambda g: (len(str(g.get("gpu"))), str(g.get("gpu"))))
    return out


def summarise(gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """Host-level sums of a reading: ``power_w`` (every GPU that reported one), ``energy_mj`` (only when every
    GPU has a counter: a partial sum would not be this host's energy), ``gpus`` count."""
    out: dict[str, Any] = {"gpu_count": len(gpus)}
    power = [g["power_w"] for g in gpus if "power_w" in g]
    if power:
        out["power_w"] = sum(power)
    if gpus and all("energy_mj" in g for g in gpus):
        out["energy_mj"] = sum(g["energy_mj"] for g in gpus)
    return out


class TelemetryScraper:
    """Reads one lane's GPU telemetry; each :meth:`scrape` emits one ``gpu`` event.

    ``url`` is a dcgm-exporter ``/metrics`` URL or ``"nvml"`` (this machine's GPUs through nvidia-ml-py,
    imported on first use; ``nvml`` may be given a module for tests).  ``available`` becomes False for good
    when the source cannot work (404, a body with no DCGM name, NVML missing); transport errors are
    reported and the caller tries again.
    """

    def __init__(self, lane: str, url: str, http: httpx.AsyncClient | None, *, clock: Clock,
                 emit: Callable[[Event], None], timeout: float = 5.0, nvml: Any = None) -> None:
        from lanemon.untrusted import Redactor, url_secrets

        self.lane = lane
        self.url = url
        self.source = NVML if url == NVML else "dcgm"
        self.http = http
        self.clock = clock
        self.emit = emit
        self.timeout = timeout
        self.available = True
        self.redactor = Redactor(url_secrets(url) if self.source == "dcgm" else ())
        self._nvml = nvml
        self._nvml_reader: NvmlReader | None = None
        self._lock = asyncio.Lock()
        self._t_resp = 0

    async def scrape(self) -> dict[str, Any]:
        """One reading (a second caller waits for the reading in flight to end first: polls never overlap)."""
        async with self._lock:
            start = self._t_resp = self.clock.now()
            try:
                if self.source == NVML:
                    data = await self._read_nvml()
                else:
                    data = await self._read_dcgm()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # transport errors, a body over the cap, the deadline
                from lanemon.client.http import describe_exception

                cls, message = describe_exception(exc, self.url)
                data = {"ok": False, "cls": cls, "message": message}
            data["source"] = self.source
            now = self.clock.now()
            if data.get("ok"):
                # the reading was taken somewhere in the request's flight (latency_s); parse_s: from the answer
                # to this event, so the energy arithmetic can put the reading where it was taken
                data["latency_s"] = round(max(0, self._t_resp - start) / 1e9, 6)
                data["parse_s"] = round(max(0, now - self._t_resp) / 1e9, 6)
            data = self.redactor.scrub(data, 200, items=MAX_GPUS + 16)
            self.emit(Event(now, schema.GPU, self.lane, None, data))
            return data

    async def _read_dcgm(self) -> dict[str, Any]:
        from lanemon.client.http import get_bounded

        assert self.http is not None
        resp, body = await get_bounded(self.http, "GET", self.url, limit=METRICS_BODY_LIMIT,
                                       deadline=2 * self.timeout, timeout=httpx.Timeout(self.timeout),
                                       headers={"Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1"})
        self._t_resp = self.clock.now()
        if resp.status_code in (404, 410):
            self.available = False
            return {"ok": False, "available": False, "cls": schema.ERR_HTTP, "status": resp.status_code,
                    "message": f"no GPU telemetry at this URL (HTTP {resp.status_code})"}
        if resp.status_code >= 400:
            return {"ok": False, "cls": schema.ERR_HTTP, "status": resp.status_code,
                    "message": f"GPU telemetry: HTTP {resp.status_code}"}
        return await asyncio.to_thread(self._parse, body.decode("utf-8", "replace"))

    def _parse(self, text: str) -> dict[str, Any]:
        try:
            gpus = map_dcgm(parse(text))
        except PromParseError as exc:
            return {"ok": False, "cls": schema.ERR_MALFORMED, "message": str(exc)[:200]}
        if not gpus:
            self.available = False
            return {"ok": False, "available": False, "cls": schema.ERR_MALFORMED,
                    "message": "no DCGM_FI_DEV_* metric in this exposition (is it dcgm-exporter?)"}
        return {"ok": True, **summarise(gpus), "gpus": gpus}

    async def _read_nvml(self) -> dict[str, Any]:
        if self._nvml_reader is None:
            try:
                self._nvml_reader = await asyncio.to_thread(NvmlReader, self._nvml)
            except NvmlUnavailable as exc:
                self.available = False
                return {"ok": False, "available": False, "cls": schema.ERR_OTHER, "message": str(exc)[:200]}
        gpus = await asyncio.to_thread(self._nvml_reader.read)
        self._t_resp = self.clock.now()
        return {"ok": True, **summarise(gpus), "gpus": gpus}


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

    def read(self) -> list[dict[str, Any]]:
        from lanemon.untrusted import inert

        nv = self.nv
        out = []
        for i, h in enumerate(self.handles):
            g: dict[str, Any] = {"gpu": str(i)}
            name = self._try("nvmlDeviceGetName", h)
            uuid = self._try("nvmlDeviceGetUUID", h)
            for key, val in (("model", name), ("uuid", uuid)):
                if isinstance(val, bytes):
                    val = val.decode("utf-8", "replace")
                if isinstance(val, str) and val:
                    g[key] = inert(val, 64)

            def put(key: str, raw: Any, scale: float = 1.0) -> None:
                if isinstance(raw, (int, float)) and not isinstance(raw, bool):
                    lo_hi = DCGM[key][1:]
                    v = _value(float(raw) * scale, *lo_hi)
                    if v is not None:
                        g[key] = int(v) if key in ("reasons", "xid") else v

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
            g["unified"] = "fb_used_mib" not in g and "fb_free_mib" not in g
            if "reasons" in g:
                g["throttle"] = throttle_names(g["reasons"])
            out.append(g)
        return out
