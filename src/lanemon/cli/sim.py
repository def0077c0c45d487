"""`lanemon sim`: run one simulated lane as an OpenAI-compatible HTTP server."""

from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("sim", help="run one simulated lane (an OpenAI-compatible HTTP server)",
                       description="Serve an OpenAI-compatible API with timings fitted to the write-up's lanes "
                                   "(docs/SIMULATOR.md). Ground truth at GET /sim/trace.")
    from lanemon.sim.options import add_arguments as add_sim_arguments

    add_sim_arguments(p)

    p.set_defaults(func=cmd_sim)


def cmd_sim(args: argparse.Namespace) -> int:
    from lanemon.sim.server import run_args

    return run_args(args)


