"""``python -m lanemon.sim --profile NAME [--port 0] ...`` — see :func:`lanemon.sim.server.main`."""

import sys

if __name__ == "__main__":
    from .process import die_with_parent

    die_with_parent()  # before the web stack loads: a child of a dead lanemon exits at once

    from .server import main

    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C before the server installed its handlers
        sys.exit(130)
