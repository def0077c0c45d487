"""Event sources the UI can be fed from: a live session (probe loops over real or simulated lanes), a
replay of a recording (``sources.py``), and the gauntlet run (``gauntlet.py``).  Benches and races are
sources too (:class:`lanemon.workloads.bench.run.BenchRun`, :mod:`lanemon.workloads.race`).
``runner.py`` runs a source that measures on an event loop of its own in a thread, apart from the UI's.
"""
