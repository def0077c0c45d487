"""``lanemon check``: ``run_check`` returns the typed result (lanemon.results.check), and ``check --json`` prints
exactly that result's JSON (issue 37, item 2)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import msgspec
import pytest

from lanemon.config import LaneConfig
from lanemon.reports.json_schema import validate
from lanemon.results.check import CheckItem, CheckResult
from lanemon.results.common import to_json_obj
from lanemon.workloads.check import run_check

NAMES = ["models", "completion", "stream_completion", "stream_chat", "usage", "tools", "logprobs"]


def _words(result: CheckResult) -> list[tuple[str, bool, bool]]:
    """What does not depend on timing: each check's name, outcome and whether it is required."""
    return [(c.name, c.passed, c.required) for c in result.checks]


def test_run_check_returns_the_typed_result_and_check_json_prints_it(fast_sims):
    a, b = fast_sims
    result = asyncio.run(run_check(LaneConfig(name="check", url=b.url)))  # the name `check URL` gives
    assert isinstance(result, CheckResult) and all(isinstance(c, CheckItem) for c in result.checks)
    assert [c.name for c in result.checks] == NAMES
    assert result.passed is True and result.lane == "check" and result.url == b.url
    # the streaming checks carry their TTFT; every check carries the keys, null where it has no such figure
    obj = to_json_obj(result)
    assert all("ttft_s" in c and "tok_s" in c for c in obj["checks"])
    by_name = {c.name: c for c in result.checks}
    assert by_name["stream_chat"].ttft_s > 0 and by_name["models"].ttft_s is None
    # lane A refuses logprobs: reported, not required, so the lane still passes
    refused = asyncio.run(run_check(LaneConfig(name="A", url=a.url)))
    assert refused.passed is True and {c.name: c.passed for c in refused.checks}["logprobs"] is False
    # what --json prints decodes strictly into the Struct and says what the in-process result says
    out = subprocess.run([sys.executable, "-m", "lanemon", "check", b.url, "--json"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    assert list(printed) == list(obj) and [list(c) for c in printed["checks"]] == [list(c) for c in obj["checks"]]
    typed = validate("check", printed)
    bad = json.loads(out.stdout)  # a value the contract does not name is refused (a check's verdict is one of its words)
    bad["checks"][0]["verdict"] = "fine"
    with pytest.raises(msgspec.ValidationError, match="verdict"):
        validate("check", bad)
    assert _words(typed) == _words(result) and (typed.lane, typed.url, typed.model, typed.passed) == \
        (result.lane, result.url, result.model, result.passed)


def _stream(token_s: list[float], counts: list[int], *, finish: str | None = "stop"):
    """A streamed reply's record: chunks at ``token_s`` seconds carrying ``counts`` tokens each (usage sent)."""
    from lanemon.measure.records import RequestRecord

    r = RequestRecord(lane="A", req="r1")
    r.sent_ns = 0
    r.token_ns = [int(t * 1e9) for t in token_s]
    r.chunk_tokens = list(counts)
    r.completion_tokens = sum(counts)
    r.first_content_ns = r.token_ns[0]
    r.end_ns = r.token_ns[-1] + 1000
    r.finish_reason = finish
    return r


def test_a_stream_without_a_decode_rate_says_why():
    """A passed stream check with no tok/s says why (it printed nothing when the reason was not a burst)."""
    from lanemon.measure.metrics import request_metrics
    from lanemon.workloads.check import no_rate_reason

    timed = request_metrics(_stream([0.1, 0.2, 0.3], [1, 1, 1]))
    assert timed.decode_tok_s and timed.decode_tok_s > 0  # the ordinary case has a rate: nothing to explain
    cases = {  # record -> the words its reason must hold
        "first chunk": _stream([0.1], [24]),  # every token in one chunk
        "burst": _stream([0.1 + i * 1e-6 for i in range(24)], [1] * 24),  # read in one go
        "not complete": _stream([0.1, 0.2, 0.3], [1, 1, 1], finish=None),  # no finish_reason: truncated
    }
    for words, rec in cases.items():
        m = request_metrics(rec)
        assert m.decode_tok_s is None and words in no_rate_reason(m), (words, m)
