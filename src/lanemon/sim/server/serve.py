"""Serving one simulated lane: in a daemon thread (:class:`SimThread`, for ``lanemon demo`` and the
tests) or in the foreground until SIGINT/SIGTERM (:func:`run`, :func:`run_args`, :func:`main`:
``lanemon sim`` and ``python -m lanemon.sim``)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import signal
import socket
import sys
import threading
import time
from typing import Any, Callable

from ..options import add_arguments, parse_spec_accept
from ..profiles import PROFILES
from .app import create_app
from .state import SimState

__all__ = ["SimThread", "run", "run_args", "main"]


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto given: asyncio sets TCP_NODELAY only on sockets that say they are TCP (see StampingProtocol)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except BaseException:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def _protocol():
    """uvicorn's h11 protocol, stamping when a request's first bytes are read (app.ARRIVALS).

    The stamp is taken in ``data_received`` and the h11 parse (plus the ASGI task it starts) is deferred to
    the loop's next turn (``loop.call_soon``): when one select pass finds many sockets ready (a burst of 64
    requests), every one of them is stamped as it is read, back to back, and only then parsed.  Parsed in
    place, the last socket of the pass would be stamped after the pure-Python parse of all the others
    (3-4 ms late at 64), which makes the ground truth late for the very requests a burst delays.
    Callbacks run in the order they were scheduled, so a connection's bytes are still parsed in order,
    and before its ``connection_lost`` (scheduled the same way, later)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from lanemon.sim.server.app import ARRIVALS

    class StampingProtocol(H11Protocol):
        _lost = False

        def connection_made(self, transport) -> None:
            # Every write leaves at once (no Nagle): a token written is a token sent.  asyncio sets this
            # only for sockets created with proto=IPPROTO_TCP; with proto 0 (how sockets are usually made
            # and passed to uvicorn) a chunk written while the previous one is unacknowledged waited for
            # the client's delayed ACK, up to 40 ms on a kept-alive connection, and the trace's write times
            # were not when the bytes left.
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError, AttributeError):
                    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            super().connection_made(transport)

        def data_received(self, data: bytes) -> None:
            peer = self.client
            cycle = getattr(self, "cycle", None)
            idle = cycle is None or getattr(cycle, "response_complete", True)
            # only the first bytes of a new request: a body read while a request runs is not an arrival
            if idle and peer is not None and tuple(peer) not in ARRIVALS:
                ARRIVALS[tuple(peer)] = time.perf_counter()
            self.loop.call_soon(self._parse, data)

        def _parse(self, data: bytes) -> None:
            if not self._lost:
                super().data_received(data)

        def connection_lost(self, exc) -> None:
            self._lost = True
            if self.client is not None:
                ARRIVALS.pop(tuple(self.client), None)
            super().connection_lost(exc)

    return StampingProtocol


def _config(app) -> "uvicorn.Config":  # noqa: F821
    import uvicorn

    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                          timeout_graceful_shutdown=1, loop="asyncio", http=_protocol(), ws="none")


def _with_telemetry(socks: list, app, state: SimState, host: str, port: int | None) -> tuple[list, Any]:
    """The sockets and app to serve: with a GPU telemetry *port* a second socket there, and the app
    dispatching requests by the port they arrived on (sim/gpu.py ``PortDispatch``)."""
    if port is None:
        return socks, app
    from ..gpu import PortDispatch, telemetry_app

    gsock = _bind(host, port)
    return [*socks, gsock], PortDispatch(app, telemetry_app(state.gpu), gsock.getsockname()[1])


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


class _QuietServer:
    """Factory for a uvicorn.Server subclass with our own signal handling."""

    @staticmethod
    def make(config, on_signal: Callable[[], None] | None):
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self):  # type: ignore[override]
                if on_signal is None or threading.current_thread() is not threading.main_thread():
                    yield
                    return

                def handler(sig, frame):
                    if self.should_exit:
                        self.force_exit = True
                    self.should_exit = True
                    on_signal()

                sigs = [signal.SIGINT, signal.SIGTERM]
                old = {s: signal.signal(s, handler) for s in sigs}
                try:
                    yield
                finally:
                    for s, h in old.items():
                        signal.signal(s, h)

            def install_signal_handlers(self) -> None:  # uvicorn < 0.29
                pass

        return Server(config)


class SimThread:
    """One simulated lane served by uvicorn in a daemon thread.

    >>> with SimThread("sglang-native", time_scale=0.05) as sim:
    ...     client = OpenAI(base_url=sim.base_url, api_key="x")
    """

    def __init__(self, profile_name: str, *, host: str = "127.0.0.1", port: int = 0, time_scale: float = 1.0,
                 seed: int = 0, logprobs: str | None = None, needle_miss: bool = False,
                 context_len: int | None = None, agent: str = "chain", qeval_misses: Any = None,
                 gpu_telemetry_port: int | None = None, **sim_kw: Any) -> None:
        self.profile_name = profile_name
        self._gpu_req_port = gpu_telemetry_port
        self.gpu_port: int | None = None
        """The port of the GPU's dcgm-exporter text (``gpu_telemetry_port``; 0 picks one), else None."""
        self.host = host
        self._req_port = port
        self.app = create_app(profile_name, time_scale=time_scale, seed=seed, logprobs=logprobs,
                              needle_miss=needle_miss, context_len=context_len, agent=agent,
                              qeval_misses=qeval_misses, **sim_kw)
        self.state: SimState = self.app.state.sim
        self.port: int | None = None
        self._sock: socket.socket | None = None
        self._server = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._error: BaseException | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("SimThread not started")
        return f"http://{_url_host(self.host)}:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return self.base_url[: -len("/v1")]

    @property
    def telemetry_url(self) -> str:
        """``http://host:P/metrics`` of the simulated GPU (needs ``gpu_telemetry_port``)."""
        if self.gpu_port is None:
            raise RuntimeError("SimThread has no GPU telemetry port")
        return f"http://{_url_host(self.host)}:{self.gpu_port}/metrics"

    def start(self, timeout: float = 10.0) -> "SimThread":
        if self._thread is not None:
            return self
        self._sock = _bind(self.host, self._req_port)
        self.port = self._sock.getsockname()[1]
        socks, app = _with_telemetry([self._sock], self.app, self.state, self.host, self._gpu_req_port)
        self._gpu_sock = socks[1] if len(socks) > 1 else None
        self.gpu_port = self._gpu_sock.getsockname()[1] if self._gpu_sock is not None else None
        self._server = _QuietServer.make(_config(app), None)

        def target() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._server.serve(sockets=socks))
            except BaseException as e:  # pragma: no cover - reported by start()
                self._error = e
            finally:
                with contextlib.suppress(Exception):
                    loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=target, name=f"lanemon-sim-{self.profile_name}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive():
                raise RuntimeError(f"sim server failed to start: {self._error!r}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("sim server did not start in time")
            time.sleep(0.005)
        return self

    def stop(self, timeout: float = 3.0) -> None:
        if self._thread is None:
            return
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self.state.lane.close)
        if self._server is not None:
            self._server.should_exit = True
        self._thread.join(timeout)
        if self._thread.is_alive() and self._server is not None:
            self._server.force_exit = True
            self._thread.join(1.0)
        for sock in (self._sock, getattr(self, "_gpu_sock", None)):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        self._thread = None

    def __enter__(self) -> "SimThread":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run(profile_name: str, *, host: str = "127.0.0.1", port: int = 8001, time_scale: float = 1.0, seed: int = 0,
        announce: Callable[[str], Any] = print, logprobs: str | None = None, needle_miss: bool = False,
        context_len: int | None = None, agent: str = "chain", qeval_misses: Any = None,
        gpu_telemetry_port: int | None = None, **sim_kw: Any) -> None:
    """Serve lane *profile_name* in the foreground until SIGINT/SIGTERM (``sim_kw``: the thinking,
    chunking and usage options of :func:`create_app`); with *gpu_telemetry_port* the simulated GPU's
    dcgm-exporter text is served there too (``GET /metrics``, sim/gpu.py)."""
    app = create_app(profile_name, time_scale=time_scale, seed=seed, logprobs=logprobs,
                     needle_miss=needle_miss, context_len=context_len, agent=agent, qeval_misses=qeval_misses,
                     **sim_kw)
    state: SimState = app.state.sim
    sock = _bind(host, port)
    real_port = sock.getsockname()[1]
    try:
        socks, app = _with_telemetry([sock], app, state, host, gpu_telemetry_port)
    except BaseException:
        sock.close()
        raise

    def on_signal() -> None:
        state.lane.close()

    server = _QuietServer.make(_config(app), on_signal)
    if len(socks) > 1:  # before the listening line, which SimProcess waits for
        announce(f"lanemon sim {profile_name} GPU telemetry (dcgm-exporter format) on "
                 f"http://{_url_host(host)}:{socks[1].getsockname()[1]}/metrics")
    announce(f"lanemon sim {profile_name} listening on http://{_url_host(host)}:{real_port}/v1")
    try:
        asyncio.run(server.serve(sockets=socks))
    except KeyboardInterrupt:
        pass
    finally:
        for s in socks:
            with contextlib.suppress(OSError):
                s.close()


def run_args(args: argparse.Namespace, prog: str = "lanemon sim") -> int:
    """Validate parsed options and serve; one-line errors, exit 2 for bad input."""
    if args.profile not in PROFILES:
        print(f"{prog}: unknown profile {args.profile!r} (choose from: {', '.join(PROFILES)})", file=sys.stderr)
        return 2
    if not 0 <= args.port <= 65535:
        print(f"{prog}: --port {args.port} is not a TCP port", file=sys.stderr)
        return 2
    if not (args.time_scale > 0 and math.isfinite(args.time_scale)):
        print(f"{prog}: --time-scale must be a positive number", file=sys.stderr)
        return 2
    gpu_port = getattr(args, "gpu_telemetry_port", None)
    if gpu_port is not None and not 0 <= gpu_port <= 65535:
        print(f"{prog}: --gpu-telemetry-port {gpu_port} is not a TCP port", file=sys.stderr)
        return 2
    if gpu_port is not None and gpu_port and gpu_port == args.port:
        print(f"{prog}: --gpu-telemetry-port must differ from --port", file=sys.stderr)
        return 2
    if args.context_len is not None and args.context_len < 1:
        print(f"{prog}: --context-len must be a positive number of tokens", file=sys.stderr)
        return 2
    if args.reasoning_tokens < 1 or args.tokens_per_chunk < 1:
        print(f"{prog}: --reasoning-tokens and --tokens-per-chunk must be at least 1", file=sys.stderr)
        return 2
    spec = None
    if args.spec_accept is not None:
        try:
            spec = parse_spec_accept(args.spec_accept)
        except ValueError as exc:
            print(f"{prog}: --spec-accept: {exc}", file=sys.stderr)
            return 2
    try:
        run(args.profile, host=args.host, port=args.port, time_scale=args.time_scale, seed=args.seed,
            announce=lambda line: print(line, flush=True), logprobs=args.logprobs,
            needle_miss=args.needle_miss, context_len=args.context_len, agent=args.agent,
            qeval_misses=args.qeval_misses, thinking=args.thinking, reasoning_tokens=args.reasoning_tokens,
            tokens_per_chunk=args.tokens_per_chunk, spec_accept=spec, usage=args.usage,
            faults=getattr(args, "fault", None) or None, gpu_telemetry_port=gpu_port)
    except OSError as e:
        print(f"{prog}: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m lanemon.sim`` entry point."""
    ap = argparse.ArgumentParser(prog="python -m lanemon.sim",
                                 description="Run an OpenAI-compatible simulated LLM serving lane.")
    add_arguments(ap)
    return run_args(ap.parse_args(argv), "lanemon sim")
