"""The shipped prompt set, user prompt sets, filler text and long-prompt builders."""

from __future__ import annotations

import random

import pytest

from lanemon.sim.engine import classify
from lanemon.sim.needle import needle_reply, wrong_key
from lanemon.workloads.prompts import (CATEGORIES, PromptSetError, chars_for_tokens, filler_text, load_prompt_set, needle_prompt, new_key, prefill_prompt)


def test_shipped_set_has_eight_categories_of_at_least_five():
    ps = load_prompt_set()
    assert ps.version == "1"
    assert ps.categories == list(CATEGORIES)
    groups = ps.by_category()
    for cat in CATEGORIES:
        assert len(groups[cat]) >= 5, cat
        for i, p in enumerate(groups[cat], 1):
            assert p.id == f"{cat}-{i:02d}"
            assert p.max_tokens >= 128
    long_cap = min(p.max_tokens for c in ("prose", "reasoning", "narrative") for p in groups[c])
    short_cap = max(p.max_tokens for c in ("summarization", "extraction", "translation") for p in groups[c])
    assert long_cap > short_cap  # long-output categories get more room


def test_every_shipped_prompt_is_classified_into_its_own_category_by_the_sim():
    for p in load_prompt_set().prompts:
        assert classify(p.text) == p.category, p.id


def test_interleaved_order_covers_every_category_in_each_round():
    ps = load_prompt_set()
    order = ps.interleaved()
    assert len(order) == len(ps.prompts)
    for r in range(5):
        assert [p.category for p in order[r * 8:(r + 1) * 8]] == list(CATEGORIES)
    sub = ps.select(["prose", "coding"])
    assert sub.categories == ["prose", "coding"]
    with pytest.raises(PromptSetError, match="unknown category nope"):
        ps.select(["nope"])


def test_user_prompt_set_loads(tmp_path):
    f = tmp_path / "mine.toml"
    f.write_text('[set]\nname = "mine"\nversion = "3"\nmax_tokens = 64\n\n'
                 '[[prompt]]\nid = "a-1"\ncategory = "coding"\ntext = "Write a Python function."\n\n'
                 '[[prompt]]\nid = "b-1"\ncategory = "chat"\nmax_tokens = 9\ntext = "Hello"\n')
    ps = load_prompt_set(f)
    assert (ps.name, ps.version, ps.categories) == ("mine", "3", ["coding", "chat"])
    assert [p.max_tokens for p in ps.prompts] == [64, 9]


@pytest.mark.parametrize("body, words", [
    ('[[prompt]]\nid = "x"\ncategory = "coding"\n', "prompt 1 (x): missing field 'text'"),
    ('[[prompt]]\nid = "x"\ncategory = "coding"\ntext = "t"\nmax_tokens = 0\n', "'max_tokens' must be a positive"),
    ('[[prompt]]\nid = "x"\ncategory = "coding"\ntext = "t"\ncolour = 1\n', "unknown field 'colour'"),
    ('[[prompt]]\nid = "x"\ncategory = "Coding!"\ntext = "t"\n', "'category' must be"),
    ('[[prompt]]\nid = "x"\ncategory = "c"\ntext = "t"\n[[prompt]]\nid = "x"\ncategory = "c"\ntext = "u"\n',
     "prompt 2 (x): duplicate id"),
    ('[set]\nname = "n"\n', "no [[prompt]] tables"),
    ('[[prompt]\n', "not valid TOML"),
])
def test_bad_prompt_sets_fail_in_one_line_naming_the_field(tmp_path, body, words):
    f = tmp_path / "bad.toml"
    f.write_text(body)
    with pytest.raises(PromptSetError) as info:
        load_prompt_set(f)
    msg = str(info.value)
    assert words in msg and "\n" not in msg and str(f) in msg
    assert isinstance(info.value, ValueError)


def test_missing_prompt_file_is_one_line(tmp_path):
    with pytest.raises(PromptSetError, match="no such file"):
        load_prompt_set(tmp_path / "nope.toml")


def test_filler_is_readable_sized_and_seeded():
    a = filler_text(5000, random.Random(1))
    assert 4800 <= len(a) <= 5000
    assert a == filler_text(5000, random.Random(1))
    assert a != filler_text(5000, random.Random(2))
    assert "pass key" not in filler_text(200_000, random.Random(3)).lower()
    assert chars_for_tokens(1000, 0.25) == 4000


def test_prefill_prompts_start_with_a_unique_nonce():
    p1, p2 = prefill_prompt(3000, random.Random(1)), prefill_prompt(3000, random.Random(2))
    assert p1[:40] != p2[:40]
    assert p1.startswith("Reference ") and p1.rstrip().endswith("ok.")
    assert abs(len(p1) - 3000) < 200


def test_needle_prompt_hides_the_key_where_asked_and_the_sim_answers_it():
    key = new_key(random.Random(5))
    assert len(key) == 8 and key.isalnum()
    text, depth = needle_prompt(40_000, key, 0.5, random.Random(5))
    assert abs(depth - 0.5) < 0.05 and text.count(key) == 2
    assert needle_reply(text) == f"The pass key is {key}."
    miss = needle_reply(text, miss=True)
    assert key not in miss and wrong_key(key) in miss and len(wrong_key(key)) == 8
    assert needle_reply("What is the capital of France?") is None
