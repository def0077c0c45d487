"""The 20-hop agent gauntlet: lanemon plays an agent harness against each lane.

* ``config.py``  -- configuration, the ``read_file`` tool, the system prompt and first instruction
* ``sandbox.py`` -- the virtual file chain the tool calls read (no real filesystem)
* ``run.py``     -- the run loop (:class:`GauntletRun`, :func:`run_gauntlet`) and tool-call parsing
* ``results.py`` -- :func:`gauntlet_results` and the summary sentence, from events alone

The screen's fold is :mod:`lanemon.folds.gauntlet`; the UI source is :mod:`lanemon.sessions.gauntlet`.
"""

from lanemon.workloads.gauntlet.config import (BENCH, DEFAULT_HOPS, DEFAULT_REPS, DEFAULT_SYSTEM_PROMPT_TOKENS,
                                               MIN_SYSTEM_PROMPT_TOKENS, READ_FILE_TOOL, GauntletConfig,
                                               build_system_prompt, first_instruction)
from lanemon.workloads.gauntlet.results import gauntlet_results, summary_sentence
from lanemon.workloads.gauntlet.run import GauntletRun, merge_tool_deltas, run_gauntlet
from lanemon.workloads.harness import LaneDown

__all__ = [
    "BENCH", "DEFAULT_HOPS", "DEFAULT_REPS", "DEFAULT_SYSTEM_PROMPT_TOKENS", "MIN_SYSTEM_PROMPT_TOKENS",
    "READ_FILE_TOOL", "GauntletConfig", "GauntletRun", "LaneDown", "build_system_prompt", "first_instruction",
    "gauntlet_results", "merge_tool_deltas", "run_gauntlet", "summary_sentence",
]
