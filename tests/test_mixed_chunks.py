"""Per-token counts survive a chunk that carries reasoning *and* answer (issue 38, item 4).

vLLM's reasoning parser at ``--stream-interval`` > 1 sends several tokens a chunk, with continuous usage on every
chunk; the chunk in which the reasoning ends carries the end of the reasoning and the start of the answer.  The
per-chunk counts are known: only that chunk's split is not, and it comes from its usage block
(``completion_tokens_details.reasoning_tokens``) where sent, else from the text of each part, marked estimated.
The per-stream rate counts every generated token (usage): it is never ``est.`` when usage came on every chunk.
"""

from __future__ import annotations

import asyncio

from lanemon.client.http import LaneClient
from lanemon.config import LaneConfig
from lanemon.events import Clock, Event
from lanemon.measure import metrics
from lanemon.reports.tables import decode_table
from lanemon.results.common import as_result
from lanemon.results.decode import DecodeResult
from lanemon.workloads.bench.run import token_figures
from scripted_server import DONE, ScriptedServer, sse, sse_head
from typed_cells import full_result

CHAT = "/v1/chat/completions"
REASONING, ANSWER = 40, 37


def chunks_of_four() -> list[list[int]]:
    """Tokens 1..77 as chunks: the first of 2 tokens (vLLM's first chunk comes out of prefill), then 4 a chunk;
    the 11th carries tokens 39-40 (the end of the reasoning) and 41-42 (the start of the answer)."""
    toks = list(range(1, REASONING + ANSWER + 1))
    out = [toks[:2]]
    rest = toks[2:]
    out += [rest[i:i + 4] for i in range(0, len(rest), 4)]
    return out


def stream(reasoning_in_usage: bool, misleading_text: bool = False) -> list:
    def u(ct: int, rt: int) -> dict:
        usage = {"prompt_tokens": 9, "completion_tokens": ct, "total_tokens": 9 + ct}
        if reasoning_in_usage:
            usage["completion_tokens_details"] = {"reasoning_tokens": rt}
        return usage

    out: list = [sse_head(), sse({"id": "c", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                          "finish_reason": None}], "usage": u(0, 0)})]
    chunks = chunks_of_four()
    for k, toks in enumerate(chunks):
        think = "".join(f"r{i:02d} " * (5 if misleading_text else 1) for i in toks if i <= REASONING)
        say = "".join(f"a{i:02d} " for i in toks if i > REASONING)
        delta = {}
        if think:
            delta["reasoning_content"] = think
        if say:
            delta["content"] = say
        last = k == len(chunks) - 1
        out += [0.002, sse({"id": "c", "choices": [{"index": 0, "delta": delta,
                                                     "finish_reason": "stop" if last else None}],
                            "usage": u(toks[-1], min(toks[-1], REASONING))})]
    out.append(sse({"id": "c", "choices": [], "usage": u(REASONING + ANSWER, REASONING)}))
    out.append(DONE)
    return out


async def _stream(url: str, n: int):
    events: list[Event] = []
    client = LaneClient(LaneConfig("X", url, "m"), clock=Clock(), emit=events.append, stall_timeout=10)
    client.continuous_usage = True
    try:
        return [await client.stream("chat", client.build_body("chat", prompt="hi", max_tokens=96))
                for _ in range(n)]
    finally:
        await client.aclose()


def play(script: list, n: int = 2):
    with ScriptedServer({CHAT: script}) as srv:
        return asyncio.run(_stream(srv.url, n))


def test_the_crafted_stream_has_the_shape_the_issue_names():
    chunks = chunks_of_four()
    mixed = [c for c in chunks if min(c) <= REASONING < max(c)]
    assert len(chunks) == 20 and all(len(c) == 4 for c in chunks[1:-1]) and mixed == [[39, 40, 41, 42]]


def test_a_mixed_chunk_split_by_its_text_gives_40_reasoning_and_37_answer_tokens_per_request():
    recs = play(stream(reasoning_in_usage=False))
    assert len(recs) == 2
    for rec in recs:
        m = metrics.request_metrics(rec)
        assert rec.ok and rec.completion_tokens == 77 and rec.reasoning_tokens is None
        assert m.reasoning_tokens == REASONING and m.output_tokens == ANSWER
        # only the one mixed chunk's split was estimated; the counts of tokens are the lane's own
        assert rec.split_chunks == 1 and m.reasoning_estimated and not m.tokens_estimated
        assert sum(rec.chunk_tokens) == 77 and not m.chunk_counts_estimated


def test_usage_that_says_the_reasoning_count_splits_the_chunk_exactly_whatever_the_text():
    recs = play(stream(reasoning_in_usage=True, misleading_text=True))
    for rec in recs:
        m = metrics.request_metrics(rec)
        assert rec.split_chunks == 0 and rec.reasoning_n == REASONING  # the chunk's own usage said 2 of 4
        assert m.reasoning_tokens == REASONING and m.output_tokens == ANSWER and not m.reasoning_estimated


def test_split_mixed_prefers_usage_and_keeps_a_token_for_each_part():
    from lanemon.measure.records import split_mixed

    assert split_mixed(4, 3, "x", "yyyyyyyy") == (3, False)
    assert split_mixed(4, None, "rr", "aaaaaa") == (1, True)
    assert split_mixed(4, None, "r" * 100, "a") == (3, True)  # each part carried text: at least one token
    assert split_mixed(4, 9, "rrrr", "aaaa") == (2, True)  # a rise above the chunk's tokens is not believed
    assert split_mixed(0, None, "r", "a") == (0, False)


def test_the_decode_table_marks_only_the_estimated_count_and_says_which():
    recs = play(stream(reasoning_in_usage=False))
    m = [metrics.request_metrics(r) for r in recs]
    cell = {"aggregate_tok_s": 500.0, "ttft_p50_s": 0.01, "ttft_p90_s": 0.01, "ttft_n": 2,
            "per_stream_tok_s_p50": 480.0, "requests": 2, "errors": 0,
            "tokens_estimated": any(x.tokens_estimated for x in m), **token_figures(recs)._asdict()}
    assert cell["reasoning_tokens"] == 2 * REASONING and cell["reasoning_split_estimated"] == 2
    t = decode_table(as_result(full_result({"bench": "decode", "lanes": {"A": {"levels": {"1": cell}}}}), DecodeResult))
    row = [c.text for c in t.rows[0]]
    labels = t.labels()
    rate = row[labels.index("per-stream tok/s")] if "per-stream tok/s" in labels else None
    assert rate is not None and "est." not in rate  # usage came on every chunk: the rate is exact
    assert any("est." in x for x in row)  # the reasoning count is marked
    assert not any("no usage block" in n for n in t.notes)
    assert any("split by the length of each part's text" in n for n in t.notes)
