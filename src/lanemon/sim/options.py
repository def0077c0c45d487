"""The simulator's command-line options, defined once for ``lanemon sim`` and ``python -m lanemon.sim``.

Kept apart from the server package so that building the CLI parser does not import the web stack;
validating and serving parsed options is :func:`lanemon.sim.server.run_args`.
"""

from __future__ import annotations

import argparse

from .agent import AGENTS
from .profiles import PROFILES


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The simulator's options: one definition for ``lanemon sim`` and ``python -m lanemon.sim``."""
    ap.add_argument("--profile", required=True, metavar="NAME",
                    help=f"tensorfold-exl3 (lane A) or sglang-native (lane B); one of: {', '.join(PROFILES)}")
    ap.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=8001, help="TCP port; 0 picks a free one (announced); default 8001")
    ap.add_argument("--gpu-telemetry-port", type=int, default=None, metavar="P",
                    help="also serve the lane's simulated GPU (GB10-like: power and energy follow the batch) in "
                         "dcgm-exporter's Prometheus format at http://HOST:P/metrics; 0 picks a free port "
                         "(announced); docs/GPU.md")
    ap.add_argument("--time-scale", type=float, default=1.0, metavar="X",
                    help="multiply every simulated duration by X (0.05 runs 20x faster)")
    ap.add_argument("--seed", type=int, default=0, help="seed for generated text (default 0)")
    ap.add_argument("--logprobs", choices=("reject", "no_prompt", "full"), default=None,
                    help="override the profile's logprobs behaviour")
    ap.add_argument("--needle-miss", action="store_true",
                    help="answer needle questions with a wrong key (tests the 'not found' path)")
    ap.add_argument("--context-len", type=int, default=None, metavar="TOKENS",
                    help="override the profile's context length (longer prompts get HTTP 400)")
    ap.add_argument("--agent", choices=AGENTS, default="chain",
                    help="scripted gauntlet agent: chain (default), traversal, malformed, loop")
    ap.add_argument("--thinking", action="store_true",
                    help="a thinking model: chat replies stream reasoning_content first, then the answer "
                         "(a request's chat_template_kwargs.thinking / reasoning_effort still decides)")
    ap.add_argument("--reasoning-tokens", type=int, default=64, metavar="N",
                    help="reasoning tokens per thinking reply at reasoning_effort medium (low x0.5, high x2; "
                         "default 64)")
    ap.add_argument("--tokens-per-chunk", type=int, default=1, metavar="K",
                    help="coalesce K tokens into each streamed chunk after the first token (default 1)")
    ap.add_argument("--spec-accept", default=None, metavar="LO-HI",
                    help="speculative decoding: each chunk carries a random acceptance length of LO..HI tokens")
    ap.add_argument("--usage", choices=("continuous", "final", "none"), default="continuous",
                    help="continuous: honour stream_options.continuous_usage_stats (default); final: reject it "
                         "with HTTP 400; none: never send a usage block")
    ap.add_argument("--fault", action="append", default=[], type=fault_spec, metavar="KIND[:ARG][@P|#N]",
                    help="inject a fault (repeatable): refuse, drop:N, stall:S, http:CODE[:text|html], malformed, "
                         "badutf8, nousage, nodone, huge:MB, slowheaders:S, models-change:N; @0.3 = with "
                         "probability 0.3, #5 = every 5th request (default: every request); a last :after=5s,for=10s "
                         "schedules it (wall-clock s after the sim starts); slow:after=5s,for=10s,factor=4[,ramp=2s] "
                         "slows every request in its window; docs/FAULTS.md")
    ap.add_argument("--qeval-misses", default=None, metavar="IDS",
                    help="qeval task ids answered wrong, comma-separated (default: the write-up's four; "
                         "\"\" = none)")


def fault_spec(text: str):
    """argparse type for ``--fault``: the parsed spec (sim/faults.py); a bad spec is a usage error."""
    from .fault_spec import parse_fault  # no web stack there

    try:
        return parse_fault(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_spec_accept(text: str) -> tuple[int, int]:
    """``"1-4"`` -> (1, 4); ``"3"`` -> (3, 3); ValueError for anything else."""
    lo, sep, hi = str(text).partition("-")
    try:
        a, b = int(lo), int(hi if sep else lo)
    except ValueError:
        raise ValueError(f"expected LO-HI like 1-4, got {text!r}") from None
    if not 1 <= a <= b:
        raise ValueError(f"expected 1 <= LO <= HI, got {text!r}")
    return a, b
