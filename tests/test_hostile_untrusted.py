"""untrusted.py: inert text, markup escaping and the Redactor, unit by unit."""

from __future__ import annotations

import pytest
from rich.markup import render as rich_render
from textual.markup import to_content

from lanemon.config import LaneConfig
from lanemon.untrusted import (PUBLIC, REDACTED, Redactor, inert, inert_token, lane_secrets, markup_escape,
                               rich_escape, url_secrets)

KEY = "sk-lanemon-planted-7f3a9c1e5b"


@pytest.mark.parametrize("raw", [
    "\x1b]0;pwned\x07model", "\x1b]8;;http://evil/\x1b\\model\x1b]8;;\x1b\\", "\x1b[2J\x1b[Hmodel", "\x1bcmodel",
    "\x9b31mmodel", "\x9d0;t\x9cmodel", "mo\x00d\x07e\x08l", "\x1bP+q\x1b\\model", "\u202emodel",
])
def test_inert_removes_escape_sequences_and_controls(raw):
    out = inert(raw)
    assert "model" in out
    assert not any(ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f or c == "\u202e" for c in out), repr(out)


def test_inert_cuts_with_an_ellipsis_and_keeps_newlines_only_when_asked():
    assert inert("x" * 1000, 10) == "x" * 9 + "…" and len(inert("y" * 5_000_000, 200)) == 200
    assert inert("a\nb\tc\r\nd") == "a b c d"
    assert inert("a\nb\tc\r\nd", newlines=True) == "a\nb\tc\nd"
    assert inert(123) == "123" and inert(None) == ""


def test_token_text_keeps_its_whitespace_but_not_escapes():
    assert inert_token("def f():\r\n\treturn 1\n") == "def f():\r\n\treturn 1\n"
    assert inert_token("a\x1b]0;t\x07b\x1b[31mc") == "abc"


@pytest.mark.parametrize("text", ["[/bold]", "[red]x", "a\\", "x\\[b]y", "[link=file:///etc/passwd]x[/link]",
                                  "[DONE]", "\\"])
def test_markup_escape_never_breaks_markup_and_shows_the_text(text):
    for_textual = markup_escape(text)
    assert to_content(f"[b]{for_textual}[/b]").plain.replace("\u200b", "") == text
    assert rich_render(f"[b]{rich_escape(text)}[/b]").plain == text


def test_redactor_removes_configured_secrets_and_their_encodings():
    r = Redactor([KEY, "hunter2hunter2", "b64+key/with=signs9"])
    for text in (f"Incorrect API key provided: {KEY}.", "url-encoded b64%2Bkey%2Fwith%3Dsigns9 here",
                 'json "b64+key\\/with=signs9"', f'{{"k": "{KEY}"}}', "pw hunter2hunter2 leaked", f"ZZ{KEY}ZZ"):
        out = r.text(text)
        assert KEY not in out and "hunter2hunter2" not in out and "signs9" not in out and REDACTED in out, out
    assert r.token(f"the key is {KEY}") == f"the key is {REDACTED}"
    assert r.token("ordinary model output") == "ordinary model output"


@pytest.mark.parametrize("text, gone", [
    ("GET http://bob:s3cretpw@host:8000/v1 failed", "s3cretpw"),
    ("http://host/v1/models?api_key=abc123def&model=x", "abc123def"),
    ("http://host/v1?x=1&token=tok987654", "tok987654"),
    ("https://h/p?sig=Zm9vYmFy1&se=2026", "Zm9vYmFy1"),
    ("Authorization: Bearer abcdef1234567890xyz", "abcdef1234567890xyz"),
    ('{"api_key": "abc12345678", "max_tokens": 5}', "abc12345678"),
    ("your key sk-proj-AbC123def456GHI789 is invalid", "sk-proj-AbC123def456GHI789"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijk", "eyJhbGciOiJIUzI1NiJ9"),
])
def test_generic_patterns_catch_credentials_nobody_configured(text, gone):
    out = PUBLIC.text(text)
    assert gone not in out and REDACTED in out, out


@pytest.mark.parametrize("text", ["invalid token provided", "Basic authentication required",
                                  "password: must be at least 8 characters", "max_tokens must be <= 4096",
                                  "see risk-management-plan", "model sk-abc not found"])
def test_generic_patterns_leave_ordinary_messages_alone(text):
    assert PUBLIC.text(text) == text


def test_lane_secrets_cover_key_headers_userinfo_and_query(monkeypatch):
    monkeypatch.setenv("HOSTILE_TEST_KEY", KEY)
    lane = LaneConfig("A", "http://alice:pa55word9@h:1/v1?api_key=qkey12345&token=qtok67890&x=plain1234",
                      api_key_env="HOSTILE_TEST_KEY", headers={"X-Auth": "Bearer hdr-secret-123"})
    found = set(lane_secrets([lane]))
    assert {KEY, "pa55word9", "qkey12345", "qtok67890", "Bearer hdr-secret-123", "hdr-secret-123"} <= found
    assert "plain1234" not in found  # not a sensitive parameter
    assert "pa55word9" in url_secrets(lane.url)


def test_scrub_bounds_structures_and_cleans_keys_and_values():
    r = Redactor([KEY])
    deep: object = KEY
    for _ in range(20):
        deep = [deep]
    out = r.scrub({f"\x1b]0;{KEY}\x07": ["x" * 10_000, deep, 3, None, True], "many": list(range(1000))})
    text = repr(out)
    assert KEY not in text and "\x1b" not in text and len(text) < 5000
