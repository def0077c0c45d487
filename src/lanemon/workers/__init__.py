"""Worker processes: a workload's requests sent from several processes, their events merged in time order.

* ``merge.py`` -- the pure timestamp-order merge (watermarks from heartbeats)
* ``pool.py``  -- :class:`WorkerPool`: spawn N processes, hand them jobs, publish their events on the bus
* ``ray_pool.py`` -- the same over Ray actors (local, or on a cluster's load hosts; docs/WORKERS.md)
* ``clocks.py`` -- across hosts (pure): the clock-offset exchange, the version check, the heartbeat rule
"""

import os


def default_workers() -> int:
    """One worker per core beyond the one the main process (merging, recording, UI) keeps (here, not in pool.py,
    so ``bench load --help`` names it without importing the pool)."""
    return max(1, (os.cpu_count() or 2) - 1)
