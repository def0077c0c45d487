"""Hostile GPU telemetry endpoints for the security tests (issue 39, rows 7, 14, 15): handlers for the loopback
server of tests/scripted_server.py (``HostileServer(handler)``), each answering ``GET /metrics`` the way a
broken or malicious dcgm-exporter might.

* :func:`many_gpus` -- 200,000 GPUs in 8 MiB (one power series each);
* :func:`big_label` -- one GPU whose ``modelName`` label is 1 MB;
* :func:`impossible` -- a GPU reporting ``+Inf`` utilisation, -1000 W and 500 °C beside a sane one;
* :func:`dripping` -- a valid exposition, one byte every *every* seconds;
* :func:`redirect` -- 307 to another host;
* :func:`bomb` -- a gzip body that inflates 1000:1;
* :func:`jumping` -- an energy counter that jumps 1e16 mJ at every read.
"""

from __future__ import annotations

import gzip
from typing import Any, Iterable

from hostile_server import head

GB10 = 'gpu="0",UUID="GPU-0",modelName="NVIDIA GB10",Hostname="h"'
SANE = (f"# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{{{GB10}}} 30.5\n"
        f"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{{GB10}}} 40\n"
        f"# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{GB10}}} 5000\n")


def text(body: str | bytes) -> list[bytes]:
    raw = body.encode() if isinstance(body, str) else body
    return [head(200, "text/plain; version=0.0.4", len(raw)) + raw]


def many_gpus(n: int = 200_000) -> bytes:
    """*n* GPUs, one power series each (~41 bytes a GPU: 200,000 fit in 8 MiB, /metrics' old cap)."""
    return ("# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
            + "".join(f'DCGM_FI_DEV_POWER_USAGE{{gpu="{i}"}} 10\n' for i in range(n))).encode()


def big_label(size: int = 1 << 20) -> bytes:
    return (f'# TYPE DCGM_FI_DEV_POWER_USAGE gauge\nDCGM_FI_DEV_POWER_USAGE{{gpu="0",modelName="{"x" * size}"}} 10\n'
            ).encode()


def impossible() -> bytes:
    bad = 'gpu="1",UUID="GPU-1"'
    return (SANE + f"DCGM_FI_DEV_GPU_UTIL{{{bad}}} +Inf\nDCGM_FI_DEV_POWER_USAGE{{{bad}}} -1000\n"
            f"# TYPE DCGM_FI_DEV_GPU_TEMP gauge\nDCGM_FI_DEV_GPU_TEMP{{{bad}}} 500\n").encode()


def dripping(every: float = 0.2) -> Iterable[Any]:
    """The headers, then the sane exposition one byte every *every* seconds (a 300-byte body: a minute)."""
    body = SANE.encode()
    yield head(200, "text/plain; version=0.0.4", len(body))
    for i in range(len(body)):
        yield body[i:i + 1]
        yield every


def redirect(req: Any) -> list[bytes]:
    return [head(307, "text/plain", 0, {"location": "http://evil.example:9400/metrics"})]


def bomb(req: Any) -> list[bytes]:
    raw = gzip.compress(b"# HELP x y\n" * (1 << 20))  # 11 MiB of comments in ~20 KB
    return [head(200, "text/plain", len(raw), {"content-encoding": "gzip"}) + raw]


def jumping(step_mj: float = 1e16):
    """A GB10 whose energy counter jumps *step_mj* at every read (issue 39 row 5: 2.1e12 J and 5.3e14 W)."""
    reads = [0]

    def handler(req: Any) -> list[bytes]:
        reads[0] += 1
        return text(SANE.replace(" 5000\n", f" {5000 + reads[0] * step_mj:.0f}\n"))

    return handler
