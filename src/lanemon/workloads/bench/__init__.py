"""The speed benches.  ``run.py`` holds :class:`BenchRun` (the event source every bench runs in), its options
and the helpers the results functions share; ``marks.py`` the plan, config and cell marks read back (typed);
one module per bench: ``decode.py`` (concurrency ladder),
``prefill.py``, ``needles.py``, ``load.py`` (open-loop arrivals), ``sweep.py`` (find the knee).
Each bench module has ``plan``, ``run`` and a pure ``results(events)``.
"""
