"""What every source of events shows of a lane: :class:`PublicLane` (its own module, so that building the CLI's
parsers -- which reads lanemon.config -- does not import msgspec: tests/test_startup.py)."""

from __future__ import annotations

import msgspec


class PublicLane(msgspec.Struct):
    """What every source of events shows of a lane (``Source.lanes``: the screens, a share's viewers): its name,
    its URL without credentials or query, and the model it serves (None: not known yet).  ``url`` is None where a
    recording's header said null."""

    name: str
    url: str | None = ""
    model: str | None = None
