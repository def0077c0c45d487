"""Small CLI words (issue 40 item 14)."""

from __future__ import annotations

import pytest

from lanemon.cli.check import v1_hint
from lanemon.cli.main import main


def test_a_metrics_url_is_pointed_at_the_api_root_not_metrics_v1():
    hint = v1_hint("http://127.0.0.1:19401/metrics", ["HTTP 404 Not Found (/metrics/models)"])
    assert hint is not None and "/metrics/v1" not in hint
    assert "try http://127.0.0.1:19401/v1" in hint and "/metrics" in hint
    # a bare host still gets /v1 added
    assert "try http://127.0.0.1:8001/v1" in v1_hint("http://127.0.0.1:8001", ["HTTP 404"])


def test_an_unknown_flag_prints_the_subcommands_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["replay", "--bogus", "x.jsonl"])
    assert exc.value.code == 2
    text = capsys.readouterr().err
    assert "usage: lanemon replay" in text and "unrecognized arguments: --bogus" in text


def test_a_bad_scheme_says_it_once(capsys):
    code = main(["check", "htp://127.0.0.1:19401/v1"])
    text = capsys.readouterr().err
    assert code == 2 and "URL: url" not in text
    assert "'htp://127.0.0.1:19401/v1' is not an http(s) URL" in text


def test_replaying_a_qeval_result_file_names_it(capsys, tmp_path):
    code = main(["replay", "sample_sessions/qeval-A.json"])
    text = capsys.readouterr().err
    assert code == 2 and "first line is not JSON" not in text
    assert "a qeval result file" in text and "qeval-A.jsonl" in text
