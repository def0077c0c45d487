"""Hostile files and publishers for issue 39 (terminal escapes, bounds at read, history on odd disks).

:func:`escape_recording` writes a recording with escape sequences (OSC title sets, CSI, 8-bit CSI and OSC,
C1 controls, BEL, bidi overrides) in every string field of every event kind of recording/schema.py, in the
envelope (lane, request id) and in the header (the date, the command, lane names, models, host).
:func:`escape_events` gives the same events as objects, for a hostile ``share`` publisher.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_args

import msgspec
import orjson

from lanemon import events as schema
from lanemon.recording.schema import DATA_SCHEMAS

ESC = "\x1b]0;PWNED\x07\x1b[2J\x1b[31m\x9b1m\x9d0;PWNED\x9c\x85\x1bc\u202e\u2066"
"""A window title set (OSC ... BEL), clear screen, colour, 8-bit CSI and OSC, a C1 NEL, full reset, bidi."""
FORBIDDEN = ("\x1b", "\x9b", "\x07", "\x9d", "\x9c", "\x85", "\u202e", "\u2066")
"""Characters that must never reach a terminal from such a file."""
LANE = "A" + ESC
MS = 1_000_000


def leaks(text: str) -> list[str]:
    """The forbidden characters found in ``text`` (repr'd), empty when it is clean."""
    return [repr(c) for c in FORBIDDEN if c in text]


def _with_escapes(kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with every string field the kind's schema names (and one it does not) carrying :data:`ESC`."""
    out = dict(data)
    schema_type = DATA_SCHEMAS.get(kind)
    for f in msgspec.structs.fields(schema_type) if schema_type else ():
        if str in (f.type, *get_args(f.type)) and f.name not in out:  # a field a string may fill
            out[f.name] = f.name + ESC
    for name, value in list(out.items()):
        if isinstance(value, str) and ESC not in value:
            out[name] = value + ESC
    out["extra" + ESC] = "unknown field" + ESC
    return out


def escape_header(created: str = "2026-12-01T10:00:00+00:00") -> dict[str, Any]:
    return {"schema": schema.SCHEMA_NAME, "version": schema.SCHEMA_VERSION_STR, "lanemon": "0.1" + ESC,
            "created": created + ESC, "command": "race" + ESC,
            "lanes": [{"name": LANE, "url": "http://127.0.0.1:1/v1" + ESC, "model": "m" + ESC}],
            "host": {"platform": "linux" + ESC, "cpus": 2}}


def escape_events(requests: int = 3) -> list[dict[str, Any]]:
    """Events of every kind, every string field carrying escapes (JSON objects, in time order)."""
    out: list[dict[str, Any]] = []

    def add(t: int, kind: str, data: dict[str, Any], req: str | None = None, lane: str | None = LANE) -> None:
        out.append({"t": t, "kind": kind, "lane": lane, "req": req, "data": _with_escapes(kind, data)})

    add(1 * MS, schema.LANE, {"name": LANE, "url": "http://127.0.0.1:1/v1", "model": "m", "telemetry": "dcgm"})
    add(2 * MS, schema.PROBE, {"ok": False, "latency_s": 0.01, "models": ["m" + ESC], "cls": "http", "status": 500})
    add(3 * MS, schema.PROBE, {"ok": True, "latency_s": 0.01, "models": ["m" + ESC], "model": "m"})
    add(4 * MS, schema.NOTE, {"level": "warning", "message": "note"}, lane=None)
    add(5 * MS, schema.MARK, {"label": "race", "race": "r1" + ESC, "bench": "x"})
    for i in range(requests):
        t0 = (10 + 100 * i) * MS
        req = f"r{i}" + ESC
        add(t0, schema.REQUEST, {"endpoint": "chat", "purpose": "race", "model": "m", "max_tokens": 8,
                                 "prompt_chars": 5, "prompt": "hi", "race": "r1"}, req)
        add(t0 + 5 * MS, schema.FIRST_BYTE, {"status": 200, "server_request_id": "id"}, req)
        for k in range(4):
            add(t0 + (10 + k) * MS, schema.TOKEN, {"text": f"w{k} ", "n": 1,
                                                    "tool_calls": [{"name": "f", "arguments": "{}"}]}, req)
        add(t0 + 20 * MS, schema.USAGE, {"prompt_tokens": 5, "completion_tokens": 4}, req)
        if i == requests - 1:
            add(t0 + 21 * MS, schema.ERROR, {"cls": "http", "message": "boom", "status": 500}, req)
        else:
            add(t0 + 21 * MS, schema.DONE, {"finish_reason": "length", "chunks": 4}, req)
    t = (20 + 100 * requests) * MS
    add(t, schema.SERVER_METRICS, {"ok": True, "engine": "vllm", "running": 1.0})
    add(t + 1, schema.HOST, {"cpu_pct": 5.0, "cpus": 2, "gpus": [{"name": "g" + ESC, "util": 1.0}]}, lane=None)
    add(t + 2, schema.CLIENT_LOAD, {"lag_ms": 1.0, "window_s": 1.0, "samples": 3}, lane=None)
    add(t + 3, schema.GPU, {"ok": True, "source": "dcgm", "power_w": 100.0, "gpu_count": 1,
                            "gpus": [{"gpu": "0" + ESC, "uuid": "u" + ESC, "model": "H100" + ESC, "host": "h" + ESC,
                                      "util_pct": 50.0, "power_w": 100.0, "throttle": ["hot" + ESC]}]})
    add(t + 4, schema.GPU, {"ok": False, "cls": "http", "message": "gpu down"})
    add(t + 5, schema.ALERT, {"state": "firing", "alert": "slow", "rule": "ttft_p50 > 1", "severity": "warn",
                              "lane": LANE, "values": {"ttft_p50" + ESC: 2.0}, "since_s": 1.0, "t_s": 1.0})
    add(t + 5, schema.LANE_STATE, {"state": "down", "t_s": 1.0, "cls": "connect", "message": "refused"})
    add(t + 6, schema.MARK, {"label": "race end", "race": "r1", "phase": "end"})
    add(t + 7, "unknown" + ESC, {"message": "x"})
    assert {e["kind"] for e in out} >= set(DATA_SCHEMAS), "every event kind of the schema"
    return out


def escape_recording(path: Path, requests: int = 3, created: str = "2026-12-01T10:00:00+00:00") -> Path:
    """A recording (see the module doc) at ``path``."""
    lines = [orjson.dumps(escape_header(created))] + [orjson.dumps(e) for e in escape_events(requests)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


# -- big and many (row 13): files that once cost hundreds of MB to replay ------------------------------------
def _write(path: Path, header: dict[str, Any], events: Any) -> Path:
    with path.open("wb") as fh:
        fh.write(orjson.dumps(header) + b"\n")
        for e in events:
            fh.write(orjson.dumps(e) + b"\n")
    return path


def plain_header(lanes: list[str]) -> dict[str, Any]:
    return {"schema": schema.SCHEMA_NAME, "version": schema.SCHEMA_VERSION_STR, "created": "2026-12-01T10:00:00+00:00",
            "command": "live", "lanes": [{"name": n, "url": "http://127.0.0.1:1/v1", "model": "m"} for n in lanes]}


def huge_alerts_recording(path: Path, n: int = 120, size: int = 4 << 20) -> Path:
    """``n`` alert events whose name, rule and values carry ``size`` bytes of incompressible-ish text."""
    pad = ("x\x1b[31m" * (size // 12 + 1))[: size // 2]
    values = {f"v{i:06d}": float(i) for i in range(size // 64)}
    return _write(path, plain_header(["A"]), (
        {"t": (i + 1) * MS, "kind": schema.ALERT, "lane": "A", "req": None,
         "data": {"state": "firing" if i % 2 == 0 else "resolved", "alert": f"a{i}" + pad, "rule": pad[:1000],
                  "severity": "warning", "values": values}} for i in range(n)))


def huge_notes_recording(path: Path, n: int = 120, size: int = 4 << 20) -> Path:
    pad = "y" * (size - 100)
    return _write(path, plain_header(["A"]), (
        {"t": (i + 1) * MS, "kind": schema.NOTE, "lane": None, "req": None,
         "data": {"level": "warning", "message": f"note {i} " + pad}} for i in range(n)))


def many_alerts_recording(path: Path, n: int = 20_000) -> Path:
    """``n`` distinct alerts firing (none resolves)."""
    return _write(path, plain_header(["A"]), (
        {"t": (i + 1) * MS, "kind": schema.ALERT, "lane": "A", "req": None,
         "data": {"state": "firing", "alert": f"alert-{i:06d}-" + "z" * 100, "rule": "ttft_p50 > 1",
                  "severity": "warning", "values": {"ttft_p50": 2.0}}} for i in range(n)))


def many_lanes_recording(path: Path, n: int = 10_000) -> Path:
    """``n`` distinct lane names (header and events): ~6 MB."""
    names = [f"lane-{i:05d}" for i in range(n)]

    def events():
        for i, name in enumerate(names):
            t = (i + 1) * MS
            yield {"t": t, "kind": schema.LANE, "lane": name, "req": None,
                   "data": {"name": name, "url": "http://127.0.0.1:1/v1", "model": "m"}}
            yield {"t": t + 1, "kind": schema.PROBE, "lane": name, "req": None,
                   "data": {"ok": True, "latency_s": 0.01, "model": "m"}}
            yield {"t": t + 2, "kind": schema.REQUEST, "lane": name, "req": f"r{i}",
                   "data": {"endpoint": "chat", "purpose": "probe", "max_tokens": 4}}
            yield {"t": t + 3, "kind": schema.ERROR, "lane": name, "req": f"r{i}",
                   "data": {"cls": "http", "message": "down", "status": 500}}
    return _write(path, plain_header(names), events())
