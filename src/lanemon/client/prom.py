"""Server metrics: scrape a lane's Prometheus ``/metrics`` and map vLLM and SGLang names to one view.

Three layers, the first two pure:

* :func:`parse` -- the Prometheus text exposition format (comments, HELP/TYPE,
  escaped label values, NaN/±Inf, timestamps, histograms and summaries),
  flattened to ``{sample name: [(labels, value), ...]}``.  A line-by-line
  fast path reads the strict grammar engines and exporters emit (ASCII, one
  space between fields, ``name="value"`` labels, plain numbers) with
  ``prometheus_client.parser``'s HELP/TYPE state machine replicated; a body
  with anything else (malformed ones included) is read whole by
  ``prometheus_client``, the reference implementation, which the fast path
  equals sample for sample (tests/test_prom_fast.py) at 6-10x the speed: the
  dashboard parses every lane's /metrics every 2 s, GPU telemetry every 1 s.
* :func:`map_engine` and :class:`RateTracker` -- which engine's names are
  present, the serving figures in one vocabulary (running, waiting, KV usage,
  token counters, prefix cache) and the rates derived from consecutive
  scrapes (counter resets handled like Prometheus ``rate()``).
* :class:`MetricsScraper` -- one lane's scraper: ``GET {root}/metrics`` through
  the lane's own HTTP client, one ``server_metrics`` event per scrape.  A 404
  (or a body with no vLLM/SGLang metric) ends scraping for that lane after one
  quiet event.

The mapping table is in docs/SERVER_METRICS.md.  Never imports ``textual``.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import msgspec
from prometheus_client.parser import text_string_to_metric_families

from lanemon import events as schema
from lanemon.events import Clock, Event
from lanemon.measure.bounds import clean_numbers
from lanemon.results.readings import EngineMetrics, Rates, ServerScrape, event_data

Samples = dict[str, list[tuple[dict[str, str], float]]]

# ---------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------


class PromParseError(ValueError):
    """The body is not Prometheus text exposition format."""


# The fast path's strict grammar.  Anything outside it sends the whole body to the reference, so
# these only have to agree with prometheus_client where they match (tests/test_prom_fast.py checks it).
_SPLIT_ONLY = "\x1c\x1d\x1e\x1f"
"""Whitespace to str.split, not to the reference's _split_quoted (string.whitespace); the other
characters where they differ are not ASCII.  Other control characters fail the sample grammar and
split alike in comments, and line.strip() is the reference's own."""
_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*").fullmatch
_LNAME = r"(?!__)[a-zA-Z_][a-zA-Z0-9_]*"  # __name__ and the reserved __ names: the reference's business
_LVALUE = r'[ !#-\[\]-~]*(?:\\[\\n"][ !#-\[\]-~]*)*'  # printable; only the escapes the reference undoes
_LABELS = re.compile(rf'(?:{_LNAME}="{_LVALUE}",)*(?:{_LNAME}="{_LVALUE}")?').fullmatch
"""Between the braces: ``name="value"`` pairs split by commas, a trailing comma allowed, no spaces."""
_PAIRS = re.compile(rf'({_LNAME})="({_LVALUE})"').findall
_SAMPLE = re.compile(
    # the braces hold everything to the line's last "}" (value and timestamp have none), _LABELS checks it
    r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? "
    # an integer apart: the reference reads it with int() (so "-0" is 0.0, not -0.0), 40 digits stay
    # well inside a float; everything else goes through float() there as here
    r"(?:([+-]?\d{1,40})|((?:[+-]?(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?\d+[eE][+-]?\d+|NaN|[+-]?Inf)))"
    r"(?: -?\d{1,18})?"  # a timestamp in ms: checked, dropped (parse never returned it)
).fullmatch
_ESCAPE = re.compile(r'\\[\\n"]').sub
_UNESCAPED = {"\\\\": "\\", "\\n": "\n", '\\"': '"'}
_TYPES = frozenset(("counter", "gauge", "summary", "histogram", "gaugehistogram", "unknown", "info", "stateset",
                    "untyped"))
"""The types prometheus_client's Metric accepts (any other raises when the family is built)."""


def _unescape(m: re.Match[str]) -> str:
    return _UNESCAPED[m.group(0)]


def _parse_fast(text: str) -> Samples | None:
    """:func:`parse` for the strict grammar above, None (the reference decides) for anything else.

    Replicates ``text_fd_to_metric_families``' HELP/TYPE state machine as it is, quirks included: a
    family's samples are buffered because its type is read when the family is built (a later TYPE
    line for the same name still changes it), a counter not named ``*_total`` gets ``_total``
    appended to its samples, a sample outside the current family is an untyped singleton and ends
    the family.  Samples come out in line order, as the reference yields them.
    """
    if not text.isascii() or any(c in text for c in _SPLIT_ONLY):
        return None
    out: Samples = {}
    name = ""  # the current family ('' none)
    typ = "untyped"
    allowed: tuple[str, ...] = ()  # the sample names it takes
    fam: list[tuple[str, dict[str, str], float]] = []
    seen: dict[str, tuple[tuple[str, str], ...]] = {}  # label text -> its pairs, unescaped

    def build() -> bool:  # the reference's build_metric; False where its Metric() raises
        if typ not in _TYPES or (typ == "counter" and name == "_total"):  # no such type; an empty name
            return False
        suffix = "_total" if typ == "counter" and not name.endswith("_total") else ""
        for s, labels, v in fam:
            out.setdefault(s + suffix, []).append((labels, v))
        return True

    for line in text.split("\n"):  # the reference iterates a StringIO: lines end at \n only
        line = line.strip()
        if not line:
            continue
        if line[0] == "#":
            # unquoted ASCII: str.split is the reference's _split_quoted(line, None, 3); a quote in
            # the fourth part (HELP text, a TYPE's type) does not move the split points
            parts = line.split(None, 3)
            if '"' in line and any('"' in p for p in parts[:3]):
                return None
            if len(parts) < 2:
                continue
            kw, cand = parts[1], ""
            if len(parts) > 2:
                if kw != "TYPE" and kw != "HELP":
                    continue
                cand = parts[2]
                if _NAME(cand) is None:
                    return None  # the reference raises
            if kw == "HELP":
                if cand != name:
                    if name and not build():
                        return None
                    name, typ, fam, allowed = cand, "untyped", [], (cand,)
            elif kw == "TYPE":
                if len(parts) < 4:
                    return None  # the reference raises
                if cand != name:
                    if name and not build():
                        return None
                    name, fam = cand, []
                typ = parts[3]
                allowed = ((name + "_count", name + "_sum", name) if typ == "summary"
                           else (name + "_count", name + "_sum", name + "_bucket") if typ == "histogram"
                           else (name,))
            continue
        m = _SAMPLE(line)
        if m is None:
            return None
        sname, lab, ival, fval = m.groups()
        if ival is not None:
            value = float(ival) + 0.0  # -0.0 + 0.0 is 0.0: int("-0") has no sign
        elif len(fval) > 40:
            return None
        else:
            value = float(fval)
        if lab:
            pairs = seen.get(lab)
            if pairs is None:  # label sets repeat across families: each one is read once
                if _LABELS(lab) is None:
                    return None
                found = _PAIRS(lab)
                if len({k for k, _ in found}) != len(found):
                    return None  # a duplicate label name: the reference raises
                pairs = seen[lab] = tuple((k, _ESCAPE(_unescape, v) if "\\" in v else v) for k, v in found)
            labels = dict(pairs)
        else:
            labels = {}
        if sname in allowed:
            fam.append((sname, labels, value))
        else:
            if name and not build():
                return None
            name, typ, fam, allowed = "", "untyped", [], ()
            out.setdefault(sname, []).append((labels, value))  # an untyped singleton: never renamed
    if name and not build():
        return None
    return out


def _parse_reference(text: str) -> Samples:
    """:func:`parse` by prometheus_client: any body, its errors as :class:`PromParseError`."""
    out: Samples = {}
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                out.setdefault(s.name, []).append((dict(s.labels), float(s.value)))
    except (ValueError, IndexError, KeyError, TypeError, OverflowError) as exc:
        # OverflowError: an integer value or timestamp past float's range (int() reads it, float() cannot)
        raise PromParseError(f"not Prometheus text format: {exc}") from None
    return out


def parse(text: str) -> Samples:
    """Every sample of a Prometheus text exposition, grouped by sample name.

    Histogram and summary series keep their own names (``x_bucket``,
    ``x_sum``, ``x_count``, ``x{quantile=...}``); counters keep ``_total``.
    Raises :class:`PromParseError` on a malformed body.  Read by :func:`_parse_fast` when
    the body is in its grammar, else by prometheus_client (:func:`_parse_reference`).
    """
    fast = _parse_fast(text)
    return fast if fast is not None else _parse_reference(text)


def families(text: str) -> dict[str, str]:
    """``{family name: type}`` (``counter``, ``gauge``, ``histogram``, ``summary``, ``unknown``)."""
    try:
        return {f.name: f.type for f in text_string_to_metric_families(text)}
    except (ValueError, IndexError, KeyError, TypeError, OverflowError) as exc:
        raise PromParseError(f"not Prometheus text format: {exc}") from None


# ---------------------------------------------------------------------------
# Engine-name mapping
# ---------------------------------------------------------------------------

#: Our field -> candidate sample names, first present wins; how label sets combine.
#: ``sum``: add every series (data-parallel engines / ranks); ``max``: the fullest one.
VLLM: dict[str, tuple[tuple[str, ...], str]] = {
    "running": (("vllm:num_requests_running",), "sum"),
    "waiting": (("vllm:num_requests_waiting",), "sum"),
    # renamed in vLLM 0.10 (gpu_cache_usage_perc is the V0 / older V1 name)
    "kv_usage": (("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"), "max"),
    "prompt_tokens_total": (("vllm:prompt_tokens_total",), "sum"),
    "generation_tokens_total": (("vllm:generation_tokens_total",), "sum"),
    # V1 counters (tokens); older releases prefixed them with gpu_
    "prefix_hits_total": (("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"), "sum"),
    "prefix_queries_total": (("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"), "sum"),
    # V0 gauge, used only when the counters are absent
    "prefix_hit_rate_gauge": (("vllm:gpu_prefix_cache_hit_rate",), "max"),
}
SGLANG: dict[str, tuple[tuple[str, ...], str]] = {
    "running": (("sglang:num_running_reqs",), "sum"),
    "waiting": (("sglang:num_queue_reqs",), "sum"),
    "kv_usage": (("sglang:token_usage",), "max"),
    "prompt_tokens_total": (("sglang:prompt_tokens_total",), "sum"),
    "generation_tokens_total": (("sglang:generation_tokens_total",), "sum"),
    "prefix_hits_total": (("sglang:cached_tokens_total",), "sum"),
    "prefix_hit_rate_gauge": (("sglang:cache_hit_rate",), "max"),
    "gen_throughput": (("sglang:gen_throughput",), "sum"),
}
ENGINES = {"vllm": VLLM, "sglang": SGLANG}

VLLM.update({
    "prompt_tokens_cached_total": (("vllm:prompt_tokens_cached_total",), "sum"),
    "preemptions_total": (("vllm:num_preemptions_total",), "sum"),
    "requests_success_total": (("vllm:request_success_total",), "sum"),
})
SGLANG.update({
    "requests_success_total": (("sglang:num_requests_total",), "sum"),
    "preemptions_total": (("sglang:num_retracted_reqs_total",), "sum"),
    "kv_capacity_tokens": (("sglang:max_total_num_tokens",), "max"),
})

# Speculative decoding (vLLM V1 counters; SGLang exports the mean acceptance length as a gauge)
VLLM.update({
    "spec_drafts_total": (("vllm:spec_decode_num_drafts_total",), "sum"),
    "spec_draft_tokens_total": (("vllm:spec_decode_num_draft_tokens_total",), "sum"),
    "spec_accepted_tokens_total": (("vllm:spec_decode_num_accepted_tokens_total",), "sum"),
})
SGLANG.update({
    "spec_accept_length": (("sglang:spec_accept_length",), "max"),
})

#: Counters kept per data-parallel rank (vLLM's ``engine`` label) when there are several
#: (measure/counters.py: the per-rank split and its imbalance).
RANK_COUNTERS = ("prompt_tokens_total", "generation_tokens_total", "prefix_hits_total", "prefix_queries_total",
                 "preemptions_total", "requests_success_total", "spec_draft_tokens_total",
                 "spec_accepted_tokens_total")
MAX_RANKS = 64


def _by_engine(samples: Samples, engine: str) -> dict[str, dict[str, float]]:
    """``{rank: {key: value}}`` of the :data:`RANK_COUNTERS` when the series carry two or more ``engine``
    label values (data parallelism); {} otherwise."""
    table = ENGINES[engine]
    out: dict[str, dict[str, float]] = {}
    for key in RANK_COUNTERS:
        names = table.get(key, ((), ""))[0]
        for name in names:
            if name not in samples:
                continue
            for labels, v in samples[name]:
                rank = labels.get("engine")
                if rank is None or math.isnan(v):
                    continue
                rank = str(rank)[:16]
                if rank not in out and len(out) >= MAX_RANKS:
                    continue
                d = out.setdefault(rank, {})
                d[key] = d.get(key, 0.0) + v
            break
    return out if len(out) >= 2 else {}


def _lora(samples: Samples, out: EngineMetrics) -> None:
    """vLLM's ``vllm:lora_requests_info`` into *out*: the adapters named in its newest series (its value is a
    timestamp): ``lora_running``, ``lora_waiting`` (names, inert, at most 16), ``lora_max``."""
    from lanemon.untrusted import inert

    rows = [(v, labels) for labels, v in samples.get("vllm:lora_requests_info", []) if not math.isnan(v)]
    if not rows:
        return
    _, labels = max(rows, key=lambda r: r[0])

    def names(text: Any) -> list[str]:
        return [inert(n.strip(), 64) for n in str(text or "").split(",") if n.strip()][:16]

    out.lora_running = names(labels.get("running_lora_adapters"))
    out.lora_waiting = names(labels.get("waiting_lora_adapters"))
    try:
        out.lora_max = int(labels.get("max_lora", ""))
    except ValueError:
        pass


#: Latency histograms (seconds): our key -> candidate family names per engine.  Their ``_sum`` and
#: ``_count`` are mapped as ``<key>_sum`` / ``<key>_count``; ``measure.server.server_timings`` turns two scrapes
#: into means over the requests that ended in between (docs/SERVER_METRICS.md).
HISTOGRAMS: dict[str, dict[str, tuple[str, ...]]] = {
    "vllm": {"ttft": ("vllm:time_to_first_token_seconds",), "itl": ("vllm:inter_token_latency_seconds",
                                                                   "vllm:time_per_output_token_seconds"),
             "tpot": ("vllm:request_time_per_output_token_seconds",), "e2e": ("vllm:e2e_request_latency_seconds",),
             "queue": ("vllm:request_queue_time_seconds",), "prefill": ("vllm:request_prefill_time_seconds",),
             "decode": ("vllm:request_decode_time_seconds",), "inference": ("vllm:request_inference_time_seconds",)},
    "sglang": {"ttft": ("sglang:time_to_first_token_seconds",), "itl": ("sglang:inter_token_latency_seconds",),
               "e2e": ("sglang:e2e_request_latency_seconds",), "queue": ("sglang:queue_time_seconds",)},
}
#: Counters split by a label: (family, label, label value) -> our key.
BY_LABEL: dict[str, dict[str, tuple[str, str, str]]] = {
    "vllm": {"prompt_tokens_computed_total": ("vllm:prompt_tokens_by_source_total", "source", "local_compute"),
             "prompt_tokens_hit_total": ("vllm:prompt_tokens_by_source_total", "source", "local_cache_hit")},
}
FINISH_COUNTERS = {"vllm": ("vllm:request_success_total", "finished_reason")}


def _labelled(samples: Samples, engine: str, out: EngineMetrics) -> None:
    """Histogram sums/counts, by-label counters, finish reasons and KV capacity of one scrape, into *out*."""
    for key, names in HISTOGRAMS.get(engine, {}).items():
        for name in names:
            s, c = samples.get(name + "_sum"), samples.get(name + "_count")
            if s and c:
                setattr(out, key + "_sum", sum(v for _, v in s if not math.isnan(v)))
                setattr(out, key + "_count", sum(v for _, v in c if not math.isnan(v)))
                break
    for key, (name, label, value) in BY_LABEL.get(engine, {}).items():
        vals = [v for labels, v in samples.get(name, []) if labels.get(label) == value and not math.isnan(v)]
        if vals:
            setattr(out, key, sum(vals))
    if engine in FINISH_COUNTERS:
        name, label = FINISH_COUNTERS[engine]
        by: dict[str, float] = {}
        for labels, v in samples.get(name, []):
            if not math.isnan(v):
                by[str(labels.get(label, "?"))[:32]] = by.get(str(labels.get(label, "?"))[:32], 0.0) + v
        if by:
            out.requests_by_finish = dict(list(by.items())[:16])
    for labels, _ in samples.get("vllm:cache_config_info", [])[:1] if engine == "vllm" else []:
        try:
            block = int(labels["block_size"])
            out.block_size = block
            blocks = labels.get("num_gpu_blocks_override")
            blocks = int(blocks) if blocks not in (None, "None", "") else int(labels.get("num_gpu_blocks", ""))
            out.kv_blocks = blocks
            out.kv_capacity_tokens = block * blocks
        except (KeyError, ValueError):
            pass
        out.prefix_caching = labels.get("enable_prefix_caching") == "True"


def detect_engine(samples: Samples) -> str | None:
    """``"vllm"``, ``"sglang"`` or None from the metric names present (the one with more known names wins)."""
    best, best_n = None, 0
    for engine, table in ENGINES.items():
        n = sum(1 for names, _ in table.values() if any(name in samples for name in names))
        if n > best_n:
            best, best_n = engine, n
    return best


def _combine(values: list[float], how: str) -> float | None:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return None
    return max(vals) if how == "max" else sum(vals)


def map_engine(samples: Samples, engine: str | None = None) -> EngineMetrics | None:
    """The serving figures in lanemon's vocabulary (:class:`~lanemon.results.readings.EngineMetrics`; a figure the
    engine does not export is None), or None when the body speaks neither engine's names.

    When the prefix-cache *queries* are not exported (SGLang), the prompt
    tokens count as queries: SGLang's cached tokens are a subset of them.
    """
    engine = engine or detect_engine(samples)
    if engine is None:
        return None
    out = EngineMetrics(engine=engine)
    for key, (names, how) in ENGINES[engine].items():
        for name in names:
            if name in samples:
                v = _combine([val for _, val in samples[name]], how)
                if v is not None:
                    setattr(out, key, int(v) if key in ("running", "waiting") and math.isfinite(v) else v)
                break
    if out.prefix_hits_total is not None and out.prefix_queries_total is None and out.prompt_tokens_total is not None:
        out.prefix_queries_total = out.prompt_tokens_total
    _labelled(samples, engine, out)
    ranks = _by_engine(samples, engine)
    if ranks:
        out.by_engine = ranks
    if engine == "vllm":
        _lora(samples, out)
    starts = [v for _, v in samples.get("process_start_time_seconds", [])[:64] if math.isfinite(v) and v > 0]
    if starts:  # prometheus_client's process collector: a changed value is a restart (measure/restarts.py)
        out.process_start_s = max(starts)  # the newest process: one restarted alone still moves it
    return out


def _order(engine: str) -> tuple[str, ...]:
    """The order a recording holds an engine's figures in: its table's, then what is derived or labelled."""
    keys = ["engine", *ENGINES[engine], "prefix_queries_total"]
    keys += [key + part for key in HISTOGRAMS.get(engine, {}) for part in ("_sum", "_count")]
    keys += [*BY_LABEL.get(engine, {}), "requests_by_finish", "block_size", "kv_blocks", "kv_capacity_tokens",
             "prefix_caching", "by_engine", "lora_running", "lora_waiting", "lora_max", "process_start_s"]
    return tuple(dict.fromkeys(keys))


KEY_ORDER = {engine: _order(engine) for engine in ENGINES}
"""engine -> the order of its figures in a ``server_metrics`` event (:func:`scrape_data`)."""


def scrape_data(scrape: ServerScrape) -> dict[str, Any]:
    """A scrape as its ``server_metrics`` event holds it (the engine's figures in :data:`KEY_ORDER`)."""
    return event_data(scrape, KEY_ORDER.get(scrape.metrics.engine, ()) if scrape.metrics is not None else ())


@dataclass
class RateTracker:
    """Rates from consecutive scrapes of one lane's counters (Prometheus ``rate()`` semantics).

    A counter that went down was reset (server restart): the increase over
    that interval is its new value, as Prometheus counts it.
    """

    last_t: int | None = None
    last: dict[str, float] = field(default_factory=dict)

    COUNTERS = ("prompt_tokens_total", "generation_tokens_total", "prefix_hits_total", "prefix_queries_total",
                "prompt_tokens_computed_total")

    def update(self, t_ns: int, mapped: EngineMetrics) -> Rates:
        """Derived figures for this scrape: ``prompt_tok_s``, ``gen_tok_s``, ``prompt_compute_tok_s``,
        ``prefix_hit_rate``."""
        out = Rates()
        inc: dict[str, float] = {}
        dt = (t_ns - self.last_t) / 1e9 if self.last_t is not None else 0.0
        now: dict[str, float] = {}
        for key in self.COUNTERS:
            value = getattr(mapped, key)
            if value is None:
                continue
            now[key] = float(value)
            if key in self.last and dt > 0:
                prev = self.last[key]
                inc[key] = now[key] - prev if now[key] >= prev else now[key]
        if dt > 0:
            if "prompt_tokens_total" in inc:
                out.prompt_tok_s = inc["prompt_tokens_total"] / dt
            if "generation_tokens_total" in inc:
                out.gen_tok_s = inc["generation_tokens_total"] / dt
            if "prompt_tokens_computed_total" in inc:  # prefill actually computed (cache hits apart)
                out.prompt_compute_tok_s = inc["prompt_tokens_computed_total"] / dt
        hits, queries = inc.get("prefix_hits_total"), inc.get("prefix_queries_total")
        if hits is not None and queries:
            out.prefix_hit_rate = max(0.0, min(1.0, hits / queries))
        elif mapped.prefix_hit_rate_gauge is not None:
            out.prefix_hit_rate = float(mapped.prefix_hit_rate_gauge)
        elif self.last_t is None and mapped.prefix_queries_total:
            out.prefix_hit_rate = (mapped.prefix_hits_total or 0.0) / mapped.prefix_queries_total
        self.last_t = t_ns
        self.last = now
        return out


# ---------------------------------------------------------------------------
# Scraping
# ---------------------------------------------------------------------------


def metrics_url(lane_url: str) -> str:
    """The server root's ``/metrics`` for an OpenAI base URL (``…/v1`` stripped, query dropped)."""
    parts = urlsplit(lane_url.rstrip("/"))
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    else:
        path = ""  # an OpenAI base without /v1: the engines serve /metrics at the server root
    return urlunsplit((parts.scheme, parts.netloc, path + "/metrics", "", ""))


def finite_samples(samples: Samples) -> tuple[Samples, int]:
    """*samples* without their infinite values (``+Inf`` is a valid exposition value, never a count a reader
    can add up), and how many there were; NaN (Prometheus' "no value") is left to the mappers, which skip it."""
    dropped = 0
    out: Samples = {}
    for name, rows in samples.items():
        kept = [(labels, v) for labels, v in rows if not math.isinf(v)]
        dropped += len(rows) - len(kept)
        out[name] = kept
    return out, dropped


METRICS_BODY_LIMIT = 8 << 20
"""A /metrics body larger than this is not read (vLLM's and SGLang's are well under 1 MiB)."""


class MetricsScraper:
    """Scrapes one lane's ``/metrics``; each :meth:`scrape` emits one ``server_metrics`` event.

    ``available`` becomes False for good after a 404/410 or a body without any
    vLLM/SGLang metric; the caller then stops scraping.  Transport errors and
    other HTTP errors are reported (``ok: false``) and the caller tries again
    on its next interval.
    """

    def __init__(self, lane: str, url: str, http: httpx.AsyncClient, *, clock: Clock,
                 emit: Callable[[Event], None], timeout: float = 5.0, redactor: Any = None) -> None:
        from lanemon.untrusted import Redactor, url_secrets

        self.lane = lane
        self.url = metrics_url(url)
        self.redactor = redactor or Redactor(url_secrets(url))
        """Server text in the event (label values, parse errors) passes this (docs/SECURITY.md)."""
        self.http = http
        self.clock = clock
        self.emit = emit
        self.timeout = timeout
        self.available = True
        self.engine: str | None = None
        self.rates = RateTracker()
        self._lock: asyncio.Lock | None = None

    async def scrape(self) -> ServerScrape:
        """One scrape and its event; scrapes of one lane never overlap (an edge scrape waits for the loop's)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            return await self._scrape()

    async def _scrape(self) -> ServerScrape:
        start = self.clock.now()
        scrape: ServerScrape
        from lanemon.client.http import drop_idle_connections, get_bounded, retry_note

        async def retrying(exc: BaseException) -> None:  # a keep-alive connection the server closed while idle
            self.emit(retry_note(self.clock.now(), self.lane, exc, what=" a /metrics scrape"))
            await drop_idle_connections(self.http)

        try:
            resp, body = await get_bounded(self.http, "GET", self.url, limit=METRICS_BODY_LIMIT,
                                           deadline=2 * self.timeout, timeout=httpx.Timeout(self.timeout),
                                           headers={"Accept": "text/plain;version=0.0.4;q=1,*/*;q=0.1",
                                                    "Accept-Encoding": "identity"},  # client/encoding.py
                                           on_retry=retrying)
            t = self.clock.now()
            latency = (t - start) / 1e9
            if resp.status_code in (404, 410):
                self.available = False
                scrape = ServerScrape(ok=False, available=False, status=resp.status_code, cls=schema.ERR_HTTP,
                                      message=f"no /metrics (HTTP {resp.status_code})")
            elif resp.status_code >= 400:
                scrape = ServerScrape(ok=False, status=resp.status_code, cls=schema.ERR_HTTP,
                                      message=f"/metrics: HTTP {resp.status_code}")
            else:
                # parsing is pure CPU (0.8 ms for the simulator's 27 KB on the fast path, 5.5 ms on the
                # reference's): off the event loop, so it never holds up the stamps of the streams in flight
                scrape = await asyncio.to_thread(self._read, body.decode("utf-8", "replace"), t, latency)
                # the counters are as of the read, not of this event: how long the parse took (on a busy
                # machine the thread may wait), so the server view can put the snapshot where it was taken
                scrape.parse_s = round(max(0, self.clock.now() - t) / 1e9, 6)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # transport errors, a body over the cap, the deadline
            from lanemon.client.errors import describe_exception

            cls, message = describe_exception(exc, self.url)
            scrape = ServerScrape(ok=False, cls=cls, message=message)
        if scrape.message is not None:  # server text: inert and redacted
            scrape.message = self.redactor.text(scrape.message, 300, newlines=True)
        if scrape.metrics is not None:  # its label values too (finish reasons, ranks, adapter names)
            scrape.metrics = msgspec.convert(self.redactor.scrub(msgspec.to_builtins(scrape.metrics), 300, items=512),
                                             EngineMetrics)
        self.emit(Event(self.clock.now(), schema.SERVER_METRICS, self.lane, None, scrape_data(scrape)))
        return scrape

    def _read(self, text: str, t: int, latency: float) -> ServerScrape:
        try:
            samples = parse(text)
        except PromParseError as exc:
            self.available = False
            return ServerScrape(ok=False, available=False, cls=schema.ERR_MALFORMED, message=str(exc)[:300])
        samples, dropped = finite_samples(samples)
        mapped = map_engine(samples, self.engine)
        if mapped is None:
            self.available = False
            return ServerScrape(ok=False, available=False, cls=schema.ERR_MALFORMED,
                                message="/metrics has no vLLM or SGLang metric")
        self.engine = mapped.engine
        # sums past float's range, 2**53 and beyond (measure/bounds.py): left out and counted, never summed or shown
        figures, more = clean_numbers(msgspec.to_builtins(mapped))
        mapped = msgspec.convert(figures, EngineMetrics)
        return ServerScrape(ok=True, latency_s=latency, metrics=mapped, rates=self.rates.update(t, mapped),
                            dropped=dropped + more)
