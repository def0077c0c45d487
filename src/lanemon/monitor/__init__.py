"""A monitor you keep open: the edges around the pure folds (IO lives here).

* ``exporter.py`` -- Prometheus text (prometheus-client, a private registry) served by a small bounded
  asyncio HTTP server (``--serve-metrics HOST:PORT``, ``[exporter] listen``);
* ``alerting.py`` -- evaluates alert rules (measure/alerts.py) on a timer: ``alert`` events on the bus,
  one stderr line each when headless, an optional command (argv, JSON on stdin, bounded time);
* ``history.py`` -- the SQLite catalogue of session summaries (measure/summary.py) in the data directory;
* ``headless.py`` -- ``lanemon live --headless``: the probe loops, the exporter and the alerts without a TUI.

Never imports Textual (docs/MONITOR.md).
"""
