"""`lanemon race` (being built)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the `race` parser (nothing yet)."""
