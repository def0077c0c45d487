"""Host metrics: CPU, memory and network of the machine lanemon runs on (psutil).

Useful when lanemon itself, or a local lane (the simulator, a llama.cpp on
loopback), runs here: a saturated client CPU skews every latency lanemon
measures.  :class:`HostSampler` is synchronous (psutil reads ``/proc``); the
live session calls it from a thread (``asyncio.to_thread``) on an interval and
publishes each sample as a ``host`` event, so recordings and replays carry
them.  Never imports ``textual``.

A sample (``host`` event data; rates are absent on the first sample)::

    cpu_pct        system-wide CPU busy %, since the previous sample
    cpus           logical CPUs
    load1          1-minute load average (absent where the OS has none)
    mem_used       bytes in use (total - available)
    mem_total      bytes
    mem_pct        psutil's percent (used of total)
    net_rx_Bps     bytes/s received, all interfaces incl. loopback
    net_tx_Bps     bytes/s sent
    proc_cpu_pct   this lanemon process, % of one CPU
    proc_rss       this lanemon process, resident bytes
"""

from __future__ import annotations

import os
import time
from typing import Any

import psutil

from lanemon.results.readings import HostSample


class HostSampler:
    """Take samples of this machine; rates are over the time since the previous sample."""

    def __init__(self, nvml: Any = None) -> None:
        self._proc = psutil.Process(os.getpid())
        self._gpus = None
        """This machine's GPUs through NVML when nvidia-ml-py and a driver are there (client/telemetry.py);
        a sample then carries ``gpus`` (docs/GPU.md), else nothing is tried again."""
        try:
            from lanemon.client.telemetry import NvmlReader

            self._gpus = NvmlReader(nvml)
        except Exception:  # no nvidia-ml-py, no driver, no GPU: the host has no GPU figures
            self._gpus = None
        # prime the CPU counters: the first cpu_percent(None) call returns a meaningless 0.0
        psutil.cpu_percent(interval=None)
        self._proc.cpu_percent(interval=None)
        self._last_net: tuple[float, int, int] | None = None
        self._net_now()  # the first sample then already has a rate

    def _net_now(self) -> tuple[float, int, int] | None:
        try:
            io = psutil.net_io_counters(pernic=False)
        except (OSError, RuntimeError):
            return None
        if io is None:
            return None
        prev, now = self._last_net, (time.monotonic(), int(io.bytes_recv), int(io.bytes_sent))
        self._last_net = now
        return prev

    def sample(self) -> HostSample:
        """One sample (blocking, a few hundred microseconds: call it off the event loop)."""
        data = HostSample(cpu_pct=float(psutil.cpu_percent(interval=None)), cpus=psutil.cpu_count() or 1)
        try:
            data.load1 = float(os.getloadavg()[0])
        except (AttributeError, OSError):
            pass
        vm = psutil.virtual_memory()
        data.mem_total = int(vm.total)
        data.mem_used = int(vm.total - vm.available)
        data.mem_pct = float(vm.percent)
        prev = self._net_now()
        now = self._last_net
        if prev is not None and now is not None and now[0] > prev[0]:
            dt = now[0] - prev[0]
            # counters can wrap or reset (interface gone): never a negative rate
            data.net_rx_Bps = max(0, now[1] - prev[1]) / dt
            data.net_tx_Bps = max(0, now[2] - prev[2]) / dt
        try:
            with self._proc.oneshot():
                data.proc_cpu_pct = float(self._proc.cpu_percent(interval=None))
                data.proc_rss = int(self._proc.memory_info().rss)
        except psutil.Error:
            pass
        if self._gpus is not None:
            try:
                data.gpus = self._gpus.read()
            except Exception:  # a driver that went away: no GPU figures from now on
                self._gpus = None
        return data
