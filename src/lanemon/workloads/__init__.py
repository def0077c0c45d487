"""Workloads: what lanemon sends to the lanes, and each one's results rebuilt from events alone.

* ``harness.py`` -- lanes + clients + one bus and clock for any workload
* ``check.py`` (smoke test), ``race.py``, ``agree.py`` (greedy agreement), ``kl.py`` (logprob divergence)
* ``bench/``     -- decode ladder, prefill ladder, needles, open-loop load, concurrency sweep
* ``qeval/``     -- the quality gate (code runs in a bubblewrap sandbox, verdicts recorded)
* ``gauntlet/``  -- the 20-hop agent tool-call chain
* ``prompts.py``, ``toolcalls.py``, ``data/`` -- shipped prompt sets, tool-call checking
"""
