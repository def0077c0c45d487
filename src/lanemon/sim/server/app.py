"""The Starlette app of one simulated lane: its routes and :func:`create_app`.

Routes: ``/v1/models``, ``/v1/models/{id}``, ``/v1/completions``,
``/v1/chat/completions``, ``/health``, ``/metrics`` (sim/metrics_endpoint.py),
and the simulator's own ``/sim/info``, ``/sim/trace`` (ground truth), ``/sim/gpu`` (the simulated
GPU's exact energy counter, sim/gpu.py) and ``/sim/cache``.  Fault injection (sim/faults.py) wraps the whole app.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.routing import Route

from .. import engine as eng
from .. import logprobs as sim_logprobs
from .. import gpu as sim_gpu
from .. import metrics_endpoint
from .. import thinking as sim_thinking
from ..agent import AGENTS
from ..profiles import get_profile
from ..qeval_responder import QevalResponder
from .jobs import build_chat_job, build_completion_job
from .state import ApiError, SimState, json_response as _json
from .stream import GenerationResponse

__all__ = ["create_app"]


_T0_KEY = "lanemon.sim.t0"


ARRIVALS: dict[tuple[str, int], float] = {}
"""Client address -> when the first bytes of its next request were read from the socket (serve.py's
protocol stamps them; the middleware takes them).  With 64 requests landing at once, the ASGI task of the
last one starts many milliseconds after its bytes arrived: stamping there would make the ground truth
itself late, and every client look slower than it is."""


class _ArrivalStamp:
    """ASGI middleware: the request's arrival time, as read from the socket where the protocol stamped it."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            client = scope.get("client")
            t = ARRIVALS.pop(tuple(client), None) if client else None
            scope[_T0_KEY] = t if t is not None else time.perf_counter()
        await self.app(scope, receive, send)


def create_app(profile_name: str, *, time_scale: float = 1.0, seed: int = 0, logprobs: str | None = None,
               needle_miss: bool = False, context_len: int | None = None, agent: str = "chain",
               qeval_misses: Any = None, thinking: bool = False,
               reasoning_tokens: int = sim_thinking.DEFAULT_REASONING_TOKENS, tokens_per_chunk: int = 1,
               spec_accept: tuple[int, int] | None = None, usage: str = "continuous", faults: Any = None):
    """The Starlette app simulating lane *profile_name*.

    *time_scale* multiplies every simulated duration (0.02 runs 50x faster);
    *seed* makes generated text reproducible; *logprobs* overrides the
    profile's logprobs mode (``"reject" | "no_prompt" | "full"``);
    *needle_miss* makes the lane answer needle questions with a wrong key;
    *context_len* overrides the profile's context length (tokens);
    *agent* picks the scripted gauntlet agent (``chain``, ``traversal``, ``malformed``, ``loop``; sim/agent.py);
    *thinking* makes chat replies reason first (*reasoning_tokens* at effort medium; sim/thinking.py);
    *tokens_per_chunk* coalesces K tokens per streamed chunk, *spec_accept* ``(lo, hi)`` draws each
    chunk's size like a speculative decoder's acceptance length; *usage* is ``continuous`` (honour
    ``continuous_usage_stats``), ``final`` (reject it with HTTP 400) or ``none`` (never send usage);
    *faults* is a list of fault specs (``"drop:50@0.3"``; sim/faults.py, docs/FAULTS.md).
    """
    if isinstance(tokens_per_chunk, bool) or not isinstance(tokens_per_chunk, int) or tokens_per_chunk < 1:
        raise ValueError(f"tokens_per_chunk must be a positive integer, got {tokens_per_chunk!r}")
    if spec_accept is not None:
        lo, hi = spec_accept
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise ValueError(f"spec_accept must be (lo, hi) with 1 <= lo <= hi, got {spec_accept!r}")
        spec_accept = (lo, hi)
    if usage not in ("continuous", "final", "none"):
        raise ValueError(f"usage must be continuous, final or none, got {usage!r}")
    if isinstance(reasoning_tokens, bool) or not isinstance(reasoning_tokens, int) or reasoning_tokens < 1:
        raise ValueError(f"reasoning_tokens must be a positive integer, got {reasoning_tokens!r}")
    profile = get_profile(profile_name)
    if context_len is not None:
        if isinstance(context_len, bool) or not isinstance(context_len, int) or context_len < 1:
            raise ValueError(f"context_len must be a positive integer, got {context_len!r}")
        profile = dataclasses.replace(profile, context_len=context_len)
    if not (isinstance(time_scale, (int, float)) and time_scale > 0 and math.isfinite(time_scale)):
        raise ValueError(f"time_scale must be a positive number, got {time_scale!r}")
    mode = logprobs or profile.logprobs
    if mode not in ("reject", "no_prompt", "full"):
        raise ValueError(f"logprobs mode must be reject, no_prompt or full, got {mode!r}")
    if agent not in AGENTS:
        raise ValueError(f"agent must be one of {', '.join(AGENTS)}, got {agent!r}")
    state = SimState(profile=profile, time_scale=float(time_scale), seed=int(seed), logprobs=mode,
                     lane=eng.Lane(profile, float(time_scale)), needle_miss=bool(needle_miss), agent=agent,
                     thinking=bool(thinking), reasoning_tokens=reasoning_tokens, tokens_per_chunk=tokens_per_chunk,
                     spec_accept=spec_accept, usage=usage)
    # qeval_misses: task ids answered wrong (None = default four)
    state.qeval = QevalResponder(qeval_misses)
    # the lane's GPU: power and energy follow the scheduler's batch (sim/gpu.py); its dcgm-exporter
    # text is served on --gpu-telemetry-port, its exact counter at /sim/gpu
    state.gpu = sim_gpu.GpuModel(sim_gpu.DEVICES.get(profile.name, sim_gpu.Device()))
    state.lane.on_load = state.gpu.set_batch

    async def generation(request: Request, endpoint: str):
        sim_logprobs.current_noise.set(sim_logprobs.LANE_NOISE.get(profile.name, 0.0))
        t0 = request.scope.get(_T0_KEY) or time.perf_counter()
        rec = state.lane.new_record(endpoint, False, t0)
        try:
            raw = await request.body()
            try:
                body = orjson.loads(raw)
            except orjson.JSONDecodeError:
                raise ApiError(400, "request body is not valid JSON", None, "invalid_json") from None
            if not isinstance(body, dict):
                raise ApiError(400, "request body must be a JSON object", None, "invalid_json")
            rec["stream"] = bool(body.get("stream") is True)
            if endpoint == "completions":
                job = build_completion_job(state, body, rec)
            else:
                job = build_chat_job(state, body, rec)
        except ApiError as e:
            rec["http_status"] = e.status
            rec["error"] = e.message
            state.lane.finish(rec, "error")
            return _json(e.body(), e.status, {"x-sim-request-id": rec["id"]})
        rec["model"] = job.model
        # ids another client can be matched by (bench/peers.py): the response's own id and the client's x-request-id
        rec["response_id"] = job.resp_id
        rec["client_request_id"] = (request.headers.get("x-request-id") or "")[:128] or None
        return GenerationResponse(state, job)

    async def completions(request: Request):
        return await generation(request, "completions")

    async def chat_completions(request: Request):
        return await generation(request, "chat.completions")

    async def models(request: Request):
        return _json({"object": "list", "data": [
            {"id": m, "object": "model", "created": state.created, "owned_by": "lanemon-sim",
             "simulates": profile.name, "max_model_len": profile.context_len} for m in profile.models]})

    async def model_one(request: Request):
        mid = request.path_params["model"]
        if mid not in profile.models:
            return _json(ApiError(404, f"The model `{mid}` does not exist.", "model", "model_not_found").body(), 404)
        return _json({"id": mid, "object": "model", "created": state.created, "owned_by": "lanemon-sim",
                      "simulates": profile.name, "max_model_len": profile.context_len})

    async def health(request: Request):
        return _json({"status": "ok"})

    async def info(request: Request):
        return _json({
            "profile": profile.name, "lane": profile.lane, "engine": profile.engine,
            "time_scale": state.time_scale, "seed": state.seed, "models": list(profile.models),
            "prefix_cache": profile.prefix_cache, "logprobs": state.logprobs,
            "max_parallel": profile.max_parallel, "context_len": profile.context_len,
            "active": state.lane.active, "decoding": state.lane.decoding, "needle_miss": state.needle_miss, "agent": state.agent,
            "thinking": state.thinking, "reasoning_tokens": state.reasoning_tokens,
            "tokens_per_chunk": state.tokens_per_chunk,
            "spec_accept": list(state.spec_accept) if state.spec_accept else None, "usage": state.usage,
        })

    async def trace(request: Request):
        if request.method == "DELETE":
            state.lane.clear_trace()
            return _json({"cleared": True})
        return _json({"time_scale": state.time_scale, "profile": profile.name,
                      "requests": state.lane.trace_snapshot()})

    async def gpu(request: Request):
        return _json(state.gpu.truth())

    async def cache(request: Request):
        state.lane.cache.clear()
        return _json({"cleared": True})

    async def not_found(request: Request, exc: Exception):
        return _json(ApiError(404, f"no route for {request.url.path}", None, "not_found").body(), 404)

    async def bad_method(request: Request, exc: Exception):
        return _json(ApiError(405, f"method {request.method} not allowed", None, "method_not_allowed").body(), 405)

    app = Starlette(
        routes=[
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model:path}", model_one, methods=["GET"]),
            Route("/v1/completions", completions, methods=["POST"]),
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/health", health, methods=["GET"]),
            Route("/sim/info", info, methods=["GET"]),
            Route("/sim/trace", trace, methods=["GET", "DELETE"]),
            Route("/sim/cache", cache, methods=["DELETE"]),
            Route("/sim/gpu", gpu, methods=["GET"]),
            *metrics_endpoint.routes(state),  # GET /metrics in the profile's engine naming
        ],
        exception_handlers={404: not_found, 405: bad_method},
        middleware=[Middleware(_ArrivalStamp)],
    )
    app.state.sim = state
    if faults:  # fault injection (sim/faults.py, docs/FAULTS.md): the outermost ASGI layer
        from ..faults import FaultMiddleware

        return FaultMiddleware(app, faults, sim=state, seed=int(seed))
    return app

