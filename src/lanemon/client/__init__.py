"""Everything that talks to a lane or samples this machine (the IO edge of the measuring side).

* ``http.py``      -- :class:`LaneClient`: one request -> events (timestamps, tokens, usage, errors); bounded bodies,
                      deadlines, the stall rule; ``warm()`` opens connections before a timed wave
* ``sse.py``       -- the Server-Sent-Events line splitter and chunk parser the client reads with
* ``prom.py``      -- ``/metrics`` scraping and the vLLM / SGLang name mapping
* ``host.py``      -- psutil samples of this machine; ``loadwatch.py`` -- lanemon's own event-loop lag
* ``monitors.py``  -- the /metrics and host loops every live session and bench runs

Every string a server sends passes :mod:`lanemon.untrusted` (inert, redacted) before it becomes an event.
"""
