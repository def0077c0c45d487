"""The simulator's command-line options, defined once for ``lanemon sim`` and ``python -m lanemon.sim``.

Kept apart from server.py so that building the CLI parser does not import the web stack.
"""

from __future__ import annotations

import argparse
import math
import sys

from .agent import AGENTS
from .profiles import PROFILES


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """The simulator's options: one definition for ``lanemon sim`` and ``python -m lanemon.sim``."""
    ap.add_argument("--profile", required=True, metavar="NAME",
                    help=f"tensorfold-exl3 (lane A) or sglang-native (lane B); one of: {', '.join(PROFILES)}")
    ap.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    ap.add_argument("--port", type=int, default=8001, help="TCP port; 0 picks a free one (announced); default 8001")
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
                         "probability 0.3, #5 = every 5th request (default: every request); docs/FAULTS.md")
    ap.add_argument("--qeval-misses", default=None, metavar="IDS",
                    help="qeval task ids answered wrong, comma-separated (default: the write-up's four; "
                         "\"\" = none)")


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
        from .server import run

        run(args.profile, host=args.host, port=args.port, time_scale=args.time_scale, seed=args.seed,
            announce=lambda line: print(line, flush=True), logprobs=args.logprobs,
            needle_miss=args.needle_miss, context_len=args.context_len, agent=args.agent,
            qeval_misses=args.qeval_misses, thinking=args.thinking, reasoning_tokens=args.reasoning_tokens,
            tokens_per_chunk=args.tokens_per_chunk, spec_accept=spec, usage=args.usage,
            faults=getattr(args, "fault", None) or None)
    except OSError as e:
        print(f"{prog}: cannot listen on {args.host}:{args.port}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


def fault_spec(text: str):
    """argparse type for ``--fault``: the parsed spec (sim/faults.py); a bad spec is a usage error."""
    from .faults import parse_fault  # no web stack there

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
