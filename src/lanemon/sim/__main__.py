"""``python -m lanemon.sim --profile NAME [--port 0] ...`` — see :func:`lanemon.sim.server.main`."""

import sys

from .server import main

if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C before the server installed its handlers
        sys.exit(130)
