"""Folds: event stream -> what one screen shows (pure, cheap per event, the same live and in replay).

``dashboard.py`` (lanes, probes, server and host panels), ``series.py`` (the dashboard's time charts and
window statistics), ``race.py``, ``bench.py``, ``gauntlet.py`` and ``requests.py`` (the request timeline).
A screen subscribes its fold to the bus and redraws from it on a timer; nothing reads a run behind the bus.
"""
