"""The state one simulated lane's app holds, and the API error every module of the server raises."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.responses import Response

from .. import engine as eng
from .. import thinking as sim_thinking
from ..profiles import Profile

__all__ = ["SimState", "ApiError", "json_response"]


@dataclass
class SimState:
    profile: Profile
    time_scale: float
    seed: int
    logprobs: str
    lane: eng.Lane
    needle_miss: bool = False
    agent: str = "chain"  # scripted gauntlet agent policy (sim/agent.py)
    qeval: Any = None  # QevalResponder: answers qeval task prompts (sim/qeval_responder.py)
    thinking: bool = False  # chat replies think first (reasoning_content) unless the request says not to
    reasoning_tokens: int = sim_thinking.DEFAULT_REASONING_TOKENS  # reasoning budget at effort "medium"
    tokens_per_chunk: int = 1  # tokens coalesced into one streamed chunk (after the first token)
    spec_accept: tuple[int, int] | None = None  # speculative decoding: tokens per chunk drawn from lo..hi
    usage: str = "continuous"  # continuous | final (continuous_usage_stats -> 400) | none (never usage)
    server_metrics: Any = None  # LaneMetrics behind GET /metrics (sim/metrics_endpoint.py)
    gpu: Any = None  # GpuModel: the lane's simulated GPU (sim/gpu.py)
    created: int = field(default_factory=lambda: int(time.time()))
    _entropy: random.Random = field(default_factory=lambda: random.Random(os.urandom(16)))


class ApiError(Exception):
    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None,
                 type_: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.type = status, message, param, code, type_

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code}}



def json_response(data: Any, status: int = 200, headers: dict | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, headers=headers, media_type="application/json")
