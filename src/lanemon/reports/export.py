"""Per-request traces from a recording (``lanemon export --requests``).

One row per finished request with its lane, start, TTFT, TTFO, every
inter-chunk gap, tokens, reasoning tokens, outcome (``complete``, ``truncated``,
``empty``, ``error``), flags (``burst``; ``client_bound``: the request ran while lanemon itself was starved,
the same rule every workload's results count by), status and error
class: the raw material for your own notebooks.  TPOT and decode are empty for
a request that is not complete or was a burst; the raw gaps are always there.
Every row says whether its lane is lanemon's simulator (``simulated``), so a
figure copied out of an export cannot pass for a real server's.
:func:`request_rows` is pure; the writers only format.
"""

from __future__ import annotations

import csv
import io
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from lanemon.events import Event
from lanemon.measure.load import CLIENT_BOUND, client_load, is_client_bound
from lanemon.measure.metrics import NS, request_metrics
from lanemon.measure.records import RequestRecord, iter_records, reiterable

CSV_COLUMNS = (
    "lane", "simulated", "req", "server_request_id", "purpose", "bench", "run_interrupted", "endpoint", "model", "start_s", "ttft_s", "ttfo_s", "first_byte_s", "e2e_s",
    "tpot_s", "decode_tok_s", "prompt_tokens", "cached_tokens", "output_tokens", "reasoning_tokens",
    "reasoning_estimated", "generated_tokens", "tokens_estimated", "chunks", "tokens_per_chunk",
    "chunk_counts_estimated", "outcome", "flags", "notes", "status", "error_cls", "error_message", "finish_reason", "itl_s", "itl_per_token_s",
    "meta",
)


def request_rows(events: Iterable[Event], simulated: Iterable[str] = ()) -> list[dict[str, Any]]:
    """One row per finished request; ``simulated`` names the lanes that are lanemon's simulator;
    ``run_interrupted`` is true on the rows of a bench whose run was interrupted (:func:`interruptions`)."""
    return list(iter_request_rows(events, simulated))


def iter_request_rows(events: Iterable[Event], simulated: Iterable[str] = ()) -> Iterator[dict[str, Any]]:
    """:func:`request_rows` one row at a time (each row's gap lists exist only while it is written): what
    ``lanemon export`` streams.  *events* may be a compact list (:func:`lanemon.measure.records.compact_events`)."""
    sim = set(simulated)
    events = reiterable(events)
    cut_benches = {ev.data.get("bench") for ev in events if ev.kind == "mark" and ev.data.get("interrupted")}
    cut_benches |= _unended(events)
    load = client_load(events)  # the starved windows: a request whose span touches one is client_bound, as in
    for rec in _in_send_order(events):  # every workload's results (measure/load.is_client_bound)
        m = request_metrics(rec)
        flags = set(m.flags)
        if is_client_bound(rec, load):
            flags.add(CLIENT_BOUND)
        meta = {k: v for k, v in rec.meta.items()
                if k not in ("prompt_chars", "max_tokens", "temperature", "seed", "continuous_usage")}
        yield {
            "lane": rec.lane,
            "simulated": rec.lane in sim,
            "req": rec.req,
            "server_request_id": rec.server_request_id,  # the engine's id (its logs), as the lane sent it
            "purpose": rec.purpose,
            "bench": rec.meta.get("bench"),
            "run_interrupted": rec.meta.get("bench") in cut_benches if rec.meta.get("bench") else False,
            "endpoint": rec.endpoint,
            "model": rec.model,
            "start_s": rec.sent_ns / NS if rec.sent_ns is not None else None,
            "ttft_s": m.ttft_s,
            "ttfo_s": m.ttfo_s,
            "first_byte_s": m.first_byte_s,
            "e2e_s": m.e2e_s,
            "tpot_s": m.tpot_s,
            "decode_tok_s": m.decode_tok_s,
            "prompt_tokens": m.prompt_tokens,
            "cached_tokens": m.cached_tokens,
            "output_tokens": m.output_tokens,
            "reasoning_tokens": m.reasoning_tokens,
            "reasoning_estimated": m.reasoning_estimated,
            "generated_tokens": m.generated_tokens,
            "tokens_estimated": m.tokens_estimated,
            "chunks": m.chunks,
            "tokens_per_chunk": m.tokens_per_chunk,
            "chunk_counts_estimated": m.chunk_counts_estimated,
            "outcome": m.outcome,
            "flags": sorted(flags),
            "notes": list(rec.notes),
            "status": "ok" if rec.ok else "error",
            "error_cls": m.error_cls,
            "error_message": rec.error.message if rec.error is not None else None,
            "finish_reason": rec.finish_reason,
            "itl_s": list(m.itl_s),
            "itl_per_token_s": list(m.itl_per_token_s),
            "meta": meta,
        }


def _in_send_order(events: Iterable[Event]) -> Iterator[RequestRecord]:
    """The finished requests sorted by (send time, id), ties in finishing order, holding only their sort keys
    and the records that finished before their turn: a first pass ranks the keys, a second hands each record on
    as soon as every earlier one has gone (requests finish roughly in the order they were sent, so the records
    waiting are about as many as were in flight, not every request of the recording)."""
    keys = sorted((rec.sent_ns if rec.sent_ns is not None else 0, rec.req, i)
                  for i, rec in enumerate(iter_records(events, keep_text=False)))
    rank = array("q", bytes(8 * len(keys)))
    for pos, (_, _, i) in enumerate(keys):
        rank[i] = pos
    del keys
    waiting: dict[int, RequestRecord] = {}
    turn = 0
    for i, rec in enumerate(iter_records(events, keep_text=False)):
        waiting[rank[i]] = rec
        while turn in waiting:
            yield waiting.pop(turn)
            turn += 1


def _unended(events: Iterable[Event]) -> set[str]:
    """Benches whose start mark has no end mark (the process died mid-run)."""
    started, ended = set(), set()
    for ev in events:
        if ev.kind == "mark" and ev.data.get("label") == "bench":
            (started if ev.data.get("phase") == "start" else ended).add(ev.data.get("bench"))
    return started - ended


def interruptions(events: Iterable[Event]) -> list[str]:
    """What each interrupted run in ``events`` did not run, in words (the report's sentence), from its marks
    alone: an export says so as a report does."""
    from lanemon.workloads.bench.run import interruption_text, read_marks, run_state

    events = reiterable(events)  # not the marks as a list: a file of a million marks held them all (1.4 GB)

    def marks():
        return (ev for ev in events if ev.kind == "mark")

    benches: dict[str, None] = {}
    for ev in marks():
        name = ev.data.get("bench")
        if name and len(benches) < MAX_BENCHES:  # each is a pass: a hostile file's million names are not
            benches.setdefault(str(name))
    out = []
    for bench in benches:
        ends = any(ev.data.get("bench") == bench and ev.data.get("label") == "bench" for ev in marks())
        if ends:  # a speed bench: its start mark holds the plan
            state = run_state(read_marks(marks(), bench), in_progress=False)
            text = interruption_text(bench, state)
        elif any(ev.data.get("bench") == bench and ev.data.get("interrupted") for ev in marks()):
            text = f"{bench} run interrupted: the rows cover only what finished"
        else:
            text = None
        if text:
            out.append(text)
    return out


MAX_BENCHES = 32
"""Bench names an export looks at for interrupted runs (a session holds a handful)."""


def to_jsonl(rows: Iterable[dict[str, Any]]) -> bytes:
    return b"".join(jsonl_chunks(rows))


def jsonl_chunks(rows: Iterable[dict[str, Any]]) -> Iterator[bytes]:
    """JSON lines, one chunk per row (streamed by ``lanemon export``)."""
    for row in rows:
        yield orjson.dumps(row) + b"\n"


def to_csv(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(csv_chunks(rows))


def csv_chunks(rows: Iterable[dict[str, Any]], *, chunk_chars: int = 1 << 18) -> Iterator[str]:
    """The CSV text in chunks of about *chunk_chars* (streamed by ``lanemon export``; a row with thousands of
    gaps is tens of KB)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for row in rows:
        if buf.tell() >= chunk_chars:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
        flat = dict(row)
        flat["itl_s"] = " ".join(f"{x:.6f}" for x in row["itl_s"])
        flat["itl_per_token_s"] = " ".join(f"{x:.6f}" for x in row.get("itl_per_token_s") or ())
        flat["meta"] = orjson.dumps(row["meta"]).decode() if row["meta"] else ""
        flat["flags"] = " ".join(row.get("flags") or ())
        flat["notes"] = "; ".join(row.get("notes") or ())
        writer.writerow({k: ("" if v is None else v) for k, v in flat.items()})
    yield buf.getvalue()
