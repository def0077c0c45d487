"""Timing and scheduling model of one simulated lane.

The top half is pure functions over a :class:`~lanemon.sim.profiles.Profile`
(prefill curve, decode curves, TTFT, category classifier) plus the
:class:`PrefixCache` block logic; they are unit-tested without any server.

The bottom half is :class:`Lane`, the asyncio scheduler one server owns: a FIFO
admission queue bounded by ``profile.max_parallel`` active streams, the set of
streams currently decoding (which sets every stream's per-token interval), and
the bounded ground-truth trace.  Token emission uses absolute deadlines on
``time.perf_counter`` so sleep jitter never accumulates.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import itertools
import math
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Callable, Sequence

from .profiles import Profile

# ---------------------------------------------------------------------------
# Curves
# ---------------------------------------------------------------------------


def prefill_rate(profile: Profile, prompt_tokens: int) -> float:
    """Cold prefill rate (tok/s) for a prompt of *prompt_tokens* tokens.

    Log-linear interpolation: linear in ``log(prompt_tokens)`` between the
    curve points, clamped to the end values outside them.
    """
    pts = profile.prefill_curve
    if prompt_tokens <= pts[0][0]:
        return float(pts[0][1])
    if prompt_tokens >= pts[-1][0]:
        return float(pts[-1][1])
    xs = [p[0] for p in pts]
    i = bisect.bisect_right(xs, prompt_tokens)
    (x0, y0), (x1, y1) = pts[i - 1], pts[i]
    f = (math.log(prompt_tokens) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return y0 + f * (y1 - y0)


def agg_rate(profile: Profile, n: float) -> float:
    """Aggregate decode throughput (tok/s) at *n* concurrent decoding streams.

    Linear interpolation over the profile's curve, flat beyond its last point
    (16) and equal to the C1 value below 1.
    """
    pts = profile.agg_curve
    if n <= pts[0][0]:
        return float(pts[0][1])
    if n >= pts[-1][0]:
        return float(pts[-1][1])
    xs = [p[0] for p in pts]
    i = bisect.bisect_right(xs, n)
    (x0, y0), (x1, y1) = pts[i - 1], pts[i]
    return y0 + (n - x0) / (x1 - x0) * (y1 - y0)


def category_rate(profile: Profile, category: str) -> float:
    """Per-stream C1 decode rate of *category* (unknown → ``"default"``)."""
    c1 = profile.category_c1
    return float(c1.get(category, c1["default"]))


def per_stream_rate(profile: Profile, category: str, n: int) -> float:
    """Per-stream decode rate (tok/s) of one *category* stream among *n*.

    ``cat_rate_c1 * (agg(n) / n) / agg(1)``: the category's C1 speed scaled by
    how the lane's per-stream share falls as streams stack up.
    """
    n = max(1, n)
    return category_rate(profile, category) * (agg_rate(profile, n) / n) / agg_rate(profile, 1)


def model_ttft(profile: Profile, prompt_tokens: int, cached_tokens: int, active: int) -> float:
    """Unscaled time to first token (s), not counting queueing.

    ``max(floor * (1 + slope*(active-1)), uncached/prefill_rate + cached/cache_rate)``
    where *active* counts the streams admitted on the lane including this one.
    """
    cached = max(0, min(cached_tokens, prompt_tokens))
    uncached = prompt_tokens - cached
    floor = profile.ttft_floor_s * (1.0 + profile.ttft_concurrency_slope * max(0, active - 1))
    compute = uncached / prefill_rate(profile, prompt_tokens) + cached / profile.cache_rate
    return max(floor, compute)


# ---------------------------------------------------------------------------
# Category classifier
# ---------------------------------------------------------------------------

#: Checked in order; the first rule with a matching keyword wins.  Keywords
#: match at word starts, case-insensitively ("implement" also matches
#: "implementation", "summar" would not be needed: both forms are listed).
CATEGORY_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("translation", ("translate", "translation", "in french", "in spanish", "in german")),
    ("extraction", ("extract", "json", "parse the", "fields from")),
    ("summarization", ("summarize", "summarise", "summary", "tl;dr", "tldr")),
    ("coding", ("function", "code", "python", "implement", "program", "script", "class ",
                "bug", "refactor", "algorithm", "def ")),
    ("math", ("solve", "calculate", "compute", "math", "equation", "integral", "arithmetic")),
    ("reasoning", ("reason", "explain why", "step by step", "puzzle", "logic", "deduce", "riddle")),
    ("narrative", ("story", "narrative", "tale", "once upon", "character")),
    ("prose", ("essay", "prose", "describe", "article", "paragraph", "poem", "letter")),
)

def _has_keyword(text: str, kw: str) -> bool:
    """True if *kw* occurs in *text* (lower-cased) at the start of a word."""
    i = text.find(kw)
    while i >= 0:
        if i == 0 or not text[i - 1].isalnum():
            return True
        i = text.find(kw, i + 1)
    return False


def classify(text: str) -> str:
    """Prompt category from keywords (see ``CATEGORY_KEYWORDS``); else ``"default"``.

    Only the last 4,000 characters are looked at, so huge prompts classify by
    their instruction, which conventionally comes last.
    """
    tail = text[-4000:].lower()
    for cat, kws in CATEGORY_KEYWORDS:
        if any(_has_keyword(tail, kw) for kw in kws):
            return cat
    return "default"


# ---------------------------------------------------------------------------
# Prefix cache
# ---------------------------------------------------------------------------


class PrefixCache:
    """Block-hash prefix cache with LRU eviction (models SGLang's radix cache).

    A prompt's token sequence is cut into blocks of ``block`` tokens; block *i*
    is keyed by the cumulative hash of blocks ``0..i``.  The trailing partial
    block is keyed too (as a final, shorter block), so an identical repeat of a
    prompt matches all of it.  ``cached_tokens`` is the number of tokens in the
    longest run of leading blocks already seen, capped at ``len(tokens) - 1``
    (the last prompt token is always recomputed, as real engines do).
    """

    def __init__(self, block: int = 256, max_blocks: int = 200_000) -> None:
        self.block = block
        self.max_blocks = max_blocks
        self._lru: collections.OrderedDict[int, int] = collections.OrderedDict()

    def __len__(self) -> int:
        return len(self._lru)

    def clear(self) -> None:
        self._lru.clear()

    def block_keys(self, tokens: Sequence[str]) -> list[tuple[int, int]]:
        """(cumulative hash, tokens so far) for every block incl. the tail."""
        keys: list[tuple[int, int]] = []
        h = 0
        for start in range(0, len(tokens), self.block):
            chunk = tuple(tokens[start : start + self.block])
            h = hash((h, chunk))
            keys.append((h, start + len(chunk)))
        return keys

    def lookup(self, tokens: Sequence[str], *, insert: bool = True) -> int:
        """Cached prefix length of *tokens*; then (by default) remember them."""
        keys = self.block_keys(tokens)
        cached = 0
        for h, upto in keys:
            if h in self._lru:
                self._lru.move_to_end(h)
                cached = upto
            else:
                break
        if insert:
            for h, upto in keys:
                self._lru[h] = upto
                self._lru.move_to_end(h)
            while len(self._lru) > self.max_blocks:
                self._lru.popitem(last=False)
        return min(cached, max(0, len(tokens) - 1))


# ---------------------------------------------------------------------------
# Lane scheduler
# ---------------------------------------------------------------------------


#: How much earlier than a precise deadline the event loop is asked to wake
#: us (its timer granularity is ~1 ms); the rest is spent yielding.
_SPIN_S = 0.0015


async def _sleep_until_precise(deadline: float) -> None:
    """Sleep until ``perf_counter() >= deadline`` to within ~0.1 ms.

    Used for the first token only (TTFT is the figure clients check most
    closely); later tokens use plain absolute-deadline sleeps, whose ~1 ms
    jitter does not accumulate.
    """
    remaining = deadline - time.perf_counter()
    if remaining > _SPIN_S:
        await asyncio.sleep(remaining - _SPIN_S)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0)


class Closed(Exception):
    """The lane is shutting down."""


@dataclass
class Stream:
    """One admitted generation request inside the scheduler."""

    record: dict
    category: str
    t_arrival: float
    decoding: bool = False


@dataclass
class Lane:
    """The asyncio scheduler of one simulated lane (one per server/app)."""

    profile: Profile
    time_scale: float = 1.0
    trace_max: int = 10_000
    active: int = 0
    decoding: int = 0
    closing: bool = False
    # Cumulative counters and the KV gauge behind GET /metrics (sim/metrics_endpoint.py);
    # never reset (clearing the trace does not touch them).
    prompt_tokens_total: int = 0
    cached_tokens_total: int = 0
    generation_tokens_total: int = 0
    requests_admitted: int = 0
    kv_tokens: int = 0
    """Tokens held by admitted streams right now (prompt + generated so far)."""
    on_finish: Callable[[dict], None] | None = None
    slowdown: Callable[[], tuple[float, list[str]]] | None = None
    """The scheduled ``slow`` faults (sim/faults.py): asked at each admission for (factor, specs); the request's
    TTFT and token gaps are ``factor`` times longer, and its trace record lists the specs under ``faults``."""
    """Called with each trace record when its request ends (the /metrics histograms, sim/metrics_endpoint.py)."""
    on_load: Callable[[int], None] | None = None
    """Called with ``active`` each time it changes (the simulated GPU's power and energy, sim/gpu.py)."""
    trace: collections.deque = field(init=False)
    cache: PrefixCache = field(init=False)
    _waiters: collections.deque = field(init=False)
    _ids: itertools.count = field(init=False)

    def __post_init__(self) -> None:
        self.trace = collections.deque(maxlen=self.trace_max)
        self.cache = PrefixCache(self.profile.cache_block_tokens, self.profile.cache_max_blocks)
        self._waiters = collections.deque()
        self._ids = itertools.count(1)

    # -- trace -----------------------------------------------------------
    def new_record(self, endpoint: str, stream: bool, t_arrival: float) -> dict:
        rid = f"{self.profile.lane}-{next(self._ids):06d}"
        rec = {
            "id": rid,
            "endpoint": endpoint,
            "stream": stream,
            "model": None,
            "prompt_tokens": None,
            "cached_tokens": None,
            "completion_tokens": 0,
            "category": None,
            "active_at_start": None,
            "queued_s": None,
            "model_ttft_s": None,
            "scheduled_ttft_s": None,
            "ttft_s": None,
            "token_times_s": [],
            "chunk_tokens": [],
            "reasoning_tokens": 0,
            "ttfo_s": None,
            "e2e_s": None,
            "finish_reason": None,
            "status": "running",
            "http_status": 200,
            "error": None,
            "t_arrival_wall": time.time(),
            "t_arrival_mono": t_arrival,  # perf_counter (CLOCK_MONOTONIC): comparable across processes here
            "_t0": t_arrival,
        }
        self.trace.append(rec)
        return rec

    def trace_snapshot(self) -> list[dict]:
        out = []
        for rec in list(self.trace):
            d = {k: v for k, v in rec.items() if not k.startswith("_")}
            d["token_times_s"] = list(rec["token_times_s"])
            d["chunk_tokens"] = list(rec["chunk_tokens"])
            out.append(d)
        return out

    def clear_trace(self) -> None:
        self.trace.clear()

    # -- admission ---------------------------------------------------------
    @property
    def waiting(self) -> int:
        """Requests queued for a slot (FIFO), not yet admitted."""
        return sum(1 for f in self._waiters if not f.done())

    async def acquire(self) -> None:
        """Wait (FIFO) for one of the ``max_parallel`` slots."""
        if self.closing:
            raise Closed()
        if self.active < self.profile.max_parallel and not self._waiters:
            self.active += 1
            if self.on_load is not None:
                self.on_load(self.active)
            return
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        try:
            await fut  # the releaser has already counted us in ``active``
        except BaseException:
            if fut.done() and not fut.cancelled() and fut.exception() is None:
                self._release_slot()  # we were handed a slot but are leaving
            else:
                try:
                    self._waiters.remove(fut)
                except ValueError:
                    pass
            raise
        if self.closing:
            self._release_slot()
            raise Closed()

    def _release_slot(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)  # hand the slot over: ``active`` unchanged
                return
        self.active -= 1
        if self.on_load is not None:
            self.on_load(self.active)

    def close(self) -> None:
        """Make every waiting and running stream end promptly."""
        self.closing = True
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_exception(Closed())

    # -- one request -------------------------------------------------------
    async def run(
        self,
        rec: dict,
        *,
        prompt_tokens: Sequence[str],
        n_tokens: int,
        category: str,
    ) -> AsyncIterator[int]:
        """Schedule one request; yield token indices 0..n_tokens-1 on time.

        The caller writes the chunk for token *i* when it is yielded and then
        calls :meth:`mark_token` with the time the write began, so the trace
        records when the bytes were handed to the socket.
        Raises :class:`Closed` if the lane shuts down meanwhile.
        """
        t0 = rec["_t0"]
        scale = self.time_scale
        p = self.profile
        t_wait = time.perf_counter()
        await self.acquire()
        stream = Stream(rec, category, t0)
        held = 0  # KV tokens this stream holds
        try:
            t_adm = time.perf_counter()
            n_prompt = len(prompt_tokens)
            cached = self.cache.lookup(prompt_tokens) if p.prefix_cache else 0
            self.requests_admitted += 1
            self.prompt_tokens_total += n_prompt
            self.cached_tokens_total += cached
            self.kv_tokens += n_prompt
            held = n_prompt
            ttft = model_ttft(p, n_prompt, cached, self.active)
            queued = t_adm - t_wait
            if self.slowdown is not None:
                factor, hit = self.slowdown()
                if factor > 1.0:
                    scale *= factor
                    rec.setdefault("faults", []).extend(s for s in hit if s not in rec.get("faults", ()))
                    rec["slow_factor"] = factor
            rec.update(
                prompt_tokens=n_prompt,
                cached_tokens=cached,
                category=category,
                active_at_start=self.active,
                queued_s=queued,
                model_ttft_s=ttft * scale,
                scheduled_ttft_s=queued + ttft * scale,
            )
            # The first token is due model_ttft after arrival plus queueing:
            # parsing/tokenizing the request overlaps the simulated prefill.
            deadline = t0 + queued + ttft * scale
            for i in range(n_tokens):
                if i > 0:
                    if not stream.decoding:
                        stream.decoding = True
                        self.decoding += 1
                    deadline += scale / per_stream_rate(p, category, self.decoding)
                if self.closing:
                    raise Closed()
                if i == 0:
                    await _sleep_until_precise(deadline)
                else:
                    await asyncio.sleep(max(0.0, deadline - time.perf_counter()))
                if self.closing:
                    raise Closed()
                self.generation_tokens_total += 1
                self.kv_tokens += 1
                held += 1
                yield i
        finally:
            self.kv_tokens -= held
            if stream.decoding:
                self.decoding -= 1
            self._release_slot()

    @staticmethod
    def mark_token(rec: dict, chunk_carries_token: bool = True, at: float | None = None) -> None:
        """Record that a token-carrying chunk was written.

        *at* is the ``time.perf_counter()`` reading taken just before the write
        began.  Stamping after ``await send(...)`` returns is too late on a busy
        machine: the client may already have read the bytes (and stamped them)
        while this coroutine waited to be resumed, so the trace's TTFT came out
        longer than any client could have seen.  Without *at*, the time of this
        call is used (for non-streamed requests, where nothing is written)."""
        if chunk_carries_token:
            dt = (time.perf_counter() if at is None else at) - rec["_t0"]
            if rec["ttft_s"] is None:
                rec["ttft_s"] = dt
            rec["token_times_s"].append(dt)

    def finish(self, rec: dict, status: str, finish_reason: str | None = None) -> None:
        rec["e2e_s"] = time.perf_counter() - rec["_t0"]
        rec["status"] = status
        if finish_reason is not None:
            rec["finish_reason"] = finish_reason
        if self.on_finish is not None:
            self.on_finish(rec)
