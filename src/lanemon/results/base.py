"""The strict base every typed result derives from (:class:`Result`): here, below ``common`` and ``counters``,
so a result in either may hold the other's.

Part of the typed results (``lanemon.results``): see the package docstring."""

from __future__ import annotations

import msgspec


class Result(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True, kw_only=True):
    """The base of every typed result: a key the contract does not name is an error when read strictly.

    Encoded (``--json``: :func:`to_json_obj`), a field still at its default is left out.  A key ``--json`` always
    carries, even as ``null``, is a field with no default (required: the schema says so, and a result built
    without it fails at construction); a key carried only sometimes has a default.  Fields are keyword-only."""
