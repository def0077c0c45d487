"""The published contract of ``--json`` outputs (issue 37, item 3): the typed results (``lanemon.results``),
and the JSON Schema each one has (``lanemon schema NAME``; ``lanemon schema --list`` names them).

Every Struct forbids unknown fields: an output that gains a key the contract does not name fails
``tests/test_json_schema.py``, which decodes every ``--json`` output the suite makes into its Struct (strict).
A key whose *meaning* changes, or a key added, bumps that output's version (:data:`VERSIONS`; docs/JSON.md says how).  Blocks whose keys are
the engine's own (``server``) or a run's bookkeeping (``cut``, ``not_run``) are objects
described in docs/JSON.md, not listed key by key here.

Units follow the metric catalogue (measure/catalogue.py): keys ending ``_s`` are seconds, ``_tok_s`` tokens per
second, ``_rps`` requests per second.
"""

from __future__ import annotations

from typing import Any

import msgspec

from lanemon.measure.summary import LaneSummary
from lanemon.recording.schema import DATA_SCHEMAS, EventRow, Header
from lanemon.results.agree import AgreeResult
from lanemon.results.analysis import Analysis
from lanemon.results.check import CheckResult
from lanemon.results.compare import Comparison
from lanemon.results.decode import DecodeResult
from lanemon.results.gauntlet import GauntletResult
from lanemon.results.kl import KlResult
from lanemon.results.load import LoadResult
from lanemon.results.needles import NeedleResult
from lanemon.results.prefill import PrefillResult
from lanemon.results.qeval import QevalCompare, QevalResult
from lanemon.results.race import RaceResult
from lanemon.results.sweep import SweepResult

SCHEMA_VERSION = "1"
"""The version of every output :data:`VERSIONS` does not name.  An output's version moves on when a key's meaning
changes or when it gains keys: its schema forbids unknown keys, so a strict reader of the old one would refuse them."""

VERSIONS: dict[str, str] = {
    "history": "2",  # 2: a load row's ``requests`` is the rep's own (warm-up included); ``measured`` added
    "agree": "2",  # 2: ``histogram_share`` (each bucket's share of the prompts compared)
    "gauntlet": "2",  # 2: each lane's per-rep figures (turn_count ... last_prompt_tokens), medians, by_turn
    "qeval": "2",  # 2: ``median_s``, ``median_tok_s`` and ``kinds`` (the run's figures per task kind)
    "report": "2",  # 2: its agree, gauntlet, qeval and decode sections carry their outputs' version-2 keys
    "bench-decode": "2",  # 2: a cell's ``steady_min``/``steady_max``, ``category_ratios`` (A/B per category)
    "bench-sweep": "2",  # 2: each level is a decode cell: ``steady_min``/``steady_max``
    "race": "2",  # 2: each lane's ``behind_s``/``behind_ratio`` (E2E behind the winner)
}
"""Outputs whose version moved on: bumped, for that output alone, when one of its keys' meaning changes."""

#: every published output: name -> (its type, what prints it)
OUTPUTS: dict[str, tuple[Any, str]] = {
    "bench-decode": (DecodeResult, "lanemon bench decode --json"),
    "bench-prefill": (PrefillResult, "lanemon bench prefill --json"),
    "bench-needles": (NeedleResult, "lanemon bench needles --json"),
    "bench-load": (LoadResult, "lanemon bench load --json"),
    "bench-sweep": (SweepResult, "lanemon bench sweep --json"),
    "race": (RaceResult, "lanemon race --json"),
    "check": (CheckResult, "lanemon check --json"),
    "agree": (AgreeResult, "lanemon agree --json"),
    "kl": (KlResult, "lanemon kl --json"),
    "gauntlet": (GauntletResult, "lanemon gauntlet --json"),
    "qeval": (QevalResult, "lanemon qeval run --json (and qeval rescore --json of one lane)"),
    "qeval-compare": (QevalCompare, "lanemon qeval compare --json"),
    "history": (list[LaneSummary], "lanemon history --json"),
    "report": (Analysis, "lanemon report --format json"),
    "compare": (Comparison, "lanemon compare --format json"),
    "recording": (EventRow, "a recording (--record): a header line, then one event per line"),
}


def version(name: str) -> str:
    """Output ``name``'s schema version (KeyError for one not published)."""
    OUTPUTS[name]
    return VERSIONS.get(name, SCHEMA_VERSION)


def schema(name: str) -> dict[str, Any]:
    """The JSON Schema of output ``name`` (KeyError for one not published), with its version."""
    typ, command = OUTPUTS[name]
    if name == "recording":  # the header, the event envelope and each event kind's data (recording/schema.py)
        kinds = sorted(DATA_SCHEMAS)
        (header, event, *data), defs = msgspec.json.schema_components([Header, EventRow,
                                                                      *(DATA_SCHEMAS[k] for k in kinds)])
        out = {"$defs": defs, "header": header, "event": event, "data": dict(zip(kinds, data)),
               "description": "each line is JSON: the first the header, every other an event whose data has the "
                              "schema of its kind (unknown keys are read past: a newer writer may add some)"}
    else:
        out = msgspec.json.schema(typ)
    return {"$id": f"lanemon:{name}:{version(name)}", "title": f"{command} (lanemon {name} schema)",
            "version": version(name), **out}


def validate(name: str, obj: Any) -> Any:
    """``obj`` (decoded JSON) as output ``name``'s type, strictly (msgspec.ValidationError names the path);
    ``recording``: one line of a recording."""
    if name == "recording":  # one line: the header, or an event of a kind the schema names
        if isinstance(obj, dict) and "schema" in obj:
            return msgspec.convert(obj, Header, strict=True)
        row = msgspec.convert(obj, EventRow, strict=True)
        if row.kind not in DATA_SCHEMAS:
            raise msgspec.ValidationError(f"event kind {row.kind[:40]!r} is not in the recording schema")
        msgspec.convert(row.data or {}, DATA_SCHEMAS[row.kind], strict=True)
        return row
    return msgspec.convert(obj, OUTPUTS[name][0], strict=True)
