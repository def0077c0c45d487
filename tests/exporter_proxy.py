"""A dcgm-exporter as real ones behave, in front of the simulator's GPU text (tests/test_energy_proxy.py, issue
38): it collects on its own timer every N s and serves that collection until the next (dcgm-exporter's
``-c``, 30 s by default), or passes every read through; and it can drop the energy counter (a GPU without one:
power only), reset it (the driver reloaded) or wrap it, in the middle of a cell (at the second collection that
finds the GPU busy).  Stdlib HTTP server in a thread; imports nothing of the test suite."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

COUNTER = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
POWER = "DCGM_FI_DEV_POWER_USAGE"
WRAP = 2 ** 32


class ExporterProxy:
    def __init__(self, upstream: str, *, every: float | None = None, counter: str = "ok", idle_w: float = 11.0,
                 trigger: int = 2) -> None:
        """*every*: seconds between collections (None: each read is a collection); *counter*: ``ok``, ``drop``,
        ``reset`` or ``wrap``."""
        self.upstream, self.every, self.counter, self.idle_w, self.trigger = upstream, every, counter, idle_w, trigger
        self.lock = threading.Lock()
        self.body = b""
        self.busy_seen = 0
        self.v_first: int | None = None
        self.v_trigger: int | None = None
        self.triggered_at: float | None = None
        """perf_counter of the collection that reset or wrapped the counter."""
        self.stop_event = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = proxy.collect() if proxy.every is None else proxy.cached()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"

    def cached(self) -> bytes:
        with self.lock:
            return self.body

    def collect(self) -> bytes:
        text = httpx.get(self.upstream, timeout=5).text
        lines = []
        with self.lock:
            power = next((float(ln.rsplit(" ", 1)[1]) for ln in text.splitlines() if ln.startswith(POWER + "{")), 0.0)
            if power > self.idle_w + 1:
                self.busy_seen += 1
            for ln in text.splitlines():
                if COUNTER in ln:
                    if self.counter == "drop":
                        continue
                    if ln.startswith(COUNTER + "{"):
                        head, v = ln.rsplit(" ", 1)
                        ln = f"{head} {self.rewrite(int(float(v)))}"
                lines.append(ln)
            self.body = ("\n".join(lines) + "\n").encode()
            return self.body

    def rewrite(self, v: int) -> int:
        if self.v_first is None:
            self.v_first = v
        if self.counter in ("reset", "wrap") and self.v_trigger is None and self.busy_seen >= self.trigger:
            self.v_trigger, self.triggered_at = v, time.perf_counter()
        if self.v_trigger is not None:
            return v - self.v_trigger  # after a reset (or past the top of a 32-bit counter): from ~0 again
        if self.counter == "wrap":
            return v - self.v_first + WRAP - 20_000_000  # 20 kJ below 2^32 mJ: a 32-bit counter near its top
        return v

    def _timer(self) -> None:
        assert self.every is not None
        nxt = time.perf_counter()
        while not self.stop_event.wait(max(0.0, nxt + self.every - time.perf_counter())):
            nxt += self.every
            try:
                self.collect()
            except httpx.HTTPError:
                pass

    def __enter__(self) -> "ExporterProxy":
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        if self.every is not None:
            self.collect()
            threading.Thread(target=self._timer, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop_event.set()
        self.server.shutdown()
        self.server.server_close()
