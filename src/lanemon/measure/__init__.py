"""Measurement: pure functions and folds from events to numbers (no IO, no Textual).

* ``records.py`` -- :class:`RequestRecord` (one request's timestamps, tokens, usage, outcome, flags) and the
                    :class:`Assembler` that folds events into records
* ``metrics.py`` -- TTFT, TPOT, ITL, decode and aggregate rates, percentiles (vLLM ``bench serve`` names)
* ``stats.py``   -- steady-state windows, the shared noise band, significance tests and their corrections
* ``load.py``    -- lanemon's own loop lag over time: which requests ran while the client was starved
* ``server.py``  -- the lane's own latency histograms over an interval, beside the client's figures
"""
