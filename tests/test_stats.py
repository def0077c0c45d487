"""measure/stats.py: steady-state window, the noise band, exact tests on reps, multiple-test correction."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from lanemon.measure import stats

S = stats.NS


# ------------------------------------------------------------------ permutation / Mann-Whitney
def test_permutation_test_exact_against_hand_counts():
    # fully separated 3 vs 3: only the observed split and its mirror are as extreme: 2 / C(6,3)
    assert stats.permutation_test([1, 2, 3], [4, 5, 6]) == pytest.approx(2 / 20)
    # 5 vs 5 separated: 2 / 252
    assert stats.permutation_test([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    # identical groups: every split is at least as extreme as a zero difference
    assert stats.permutation_test([1, 1, 1], [1, 1, 1]) == 1.0
    assert stats.permutation_test([], [1.0]) is None


def test_permutation_test_matches_brute_force_on_random_data():
    rng = random.Random(4)
    for _ in range(20):
        x = [rng.gauss(0, 1) for _ in range(4)]
        y = [rng.gauss(0.5, 1) for _ in range(3)]
        pooled = x + y
        obs = abs(sum(x) / 4 - sum(y) / 3)
        hits = total = 0
        for idx in itertools.combinations(range(7), 4):
            a = [pooled[i] for i in idx]
            b = [pooled[i] for i in range(7) if i not in idx]
            hits += abs(sum(a) / 4 - sum(b) / 3) >= obs - 1e-12
            total += 1
        assert stats.permutation_test(x, y) == pytest.approx(hits / total)


def test_permutation_monte_carlo_beyond_the_exact_limit(monkeypatch):
    monkeypatch.setattr(stats, "EXACT_LIMIT", 10)
    p = stats.permutation_test([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert 0 < p < 0.02  # exact is 0.0079; MC with +1 correction lands near it


def test_mann_whitney_u_and_exact_p():
    u, p = stats.mann_whitney_u([1, 2, 3], [4, 5, 6])
    assert u == 0 and p == pytest.approx(0.1)
    u, p = stats.mann_whitney_u([4, 5, 6], [1, 2, 3])
    assert u == 9 and p == pytest.approx(0.1)
    u, p = stats.mann_whitney_u([1, 2, 2], [2, 3, 4])  # ties: the three 2s share rank 3
    assert u == pytest.approx(1.0) and 0.1 < p <= 1


def test_rep_test_refuses_fewer_than_three_reps_a_side():
    t = stats.rep_test([100, 101], [200, 201])
    assert t.testable is False and t.p is None and (t.n_old, t.n_new) == (2, 2)
    t = stats.rep_test([100, 101, None, float("nan")], [200, 201, 202])
    assert t.testable is False and t.n_old == 2
    t = stats.rep_test([100, 101, 102], [200, 201, 202])
    assert t.testable and t.p == pytest.approx(0.1)


# ------------------------------------------------------------------ corrections
def test_benjamini_hochberg_against_hand_computation():
    p = [0.01, 0.04, 0.03, 0.005, None]
    adj = stats.benjamini_hochberg(p)
    # sorted: 0.005 (r1), 0.01 (r2), 0.03 (r3), 0.04 (r4); m = 4
    assert adj[3] == pytest.approx(0.02) and adj[0] == pytest.approx(0.02)
    assert adj[2] == pytest.approx(0.04) and adj[1] == pytest.approx(0.04) and adj[4] is None
    assert stats.benjamini_hochberg([None, None]) == [None, None]


def test_holm_against_hand_computation():
    adj = stats.holm([0.01, 0.04, 0.03, 0.005])
    assert adj == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_false_positive_rate_with_five_reps_and_correction():
    """No real difference, 24 rows of 5 vs 5 reps each: a comparison flags something rarely."""
    rng = random.Random(7)
    flagged = 0
    trials = 150
    for _ in range(trials):
        ps = []
        for _row in range(24):
            x = [rng.gauss(100, 3) for _ in range(5)]
            y = [rng.gauss(100, 3) for _ in range(5)]
            ps.append(stats.rep_test(x, y).p)
        flagged += any(p < stats.ALPHA for p in stats.benjamini_hochberg(ps))
    assert flagged / trials <= 0.08


def test_a_real_ten_percent_change_on_every_row_is_found_with_five_reps():
    rng = random.Random(8)
    ps = [stats.rep_test([rng.gauss(100, 1.5) for _ in range(5)], [rng.gauss(90, 1.5) for _ in range(5)]).p
          for _ in range(24)]
    adj = stats.benjamini_hochberg(ps)
    assert sum(p < stats.ALPHA for p in adj) >= 22


# ------------------------------------------------------------------ noise band and leads
def test_noise_band_default_and_widened_by_reps():
    assert stats.noise_band("throughput") == stats.NoiseBand(band=0.05, default=0.05, from_reps=False)
    assert stats.noise_band("latency").band == 0.10
    b = stats.noise_band("throughput", [100, 110, 105], [200])
    assert b.band == pytest.approx(10 / 105, abs=1e-4) and b.from_reps is True
    assert stats.noise_band("throughput", [100, 101]).band == 0.05  # narrower reps keep the floor


def test_lead_uses_the_band_and_direction():
    assert stats.lead(100, 105, 0.05) == "tie"
    assert stats.lead(100, 105.1, 0.05) == "b"
    assert stats.lead(100, 90, 0.05) == "a"
    assert stats.lead(1.0, 0.8, 0.10, higher_is_better=False) == "b"
    assert stats.lead(None, 1, 0.1) is None


def test_lead_text_carries_its_uncertainty():
    t = stats.lead_text("A", 100, [], "B", 105, [])
    assert t.startswith("A and B within noise (B +5.0 %") and "noise band 5.0 %, default; no reps" in t
    t = stats.lead_text("A", 100, [98, 100, 102], "B", 120, [118, 120, 122])
    assert t.startswith("B ahead of A by 20.0 %") and "B/A over the reps +15.7 % to +24.5 %" in t
    t = stats.lead_text("A", 120, [], "B", 100, [])
    assert t.startswith("A ahead of B by 20.0 %")


# ------------------------------------------------------------------ steady state
def _req(sent, end, rate=None, tokens=None, step=0.01):
    """A request sent at ``sent`` s, ending at ``end`` s, with a token every ``step`` s from sent + 0.1."""
    t = sent + 0.1
    tns = []
    while t <= end + 1e-9:
        tns.append(int(round(t * S)))
        t += step
    return {"sent_ns": int(sent * S), "end_ns": int(end * S), "token_ns": tns, "chunk_tokens": [None] * len(tns),
            "generated": tokens if tokens is not None else len(tns)}


def test_steady_window_starts_when_all_are_in_flight_and_ends_when_the_drain_starts():
    spans = [(0, 10), (2, 4), (4, 12), (10, 15)]  # closed loop of 2: the second worker starts at 2
    assert stats.steady_window([(a * S, b * S) for a, b in spans], 2) == (2 * S, 12 * S)
    assert stats.steady_window([(0, S)], 2) is None
    assert stats.steady_window([], 1) is None


def test_steady_state_leaves_out_ramp_up_and_drain():
    # 2 workers at 100 tok/s each; the second starts 1 s late; one ends 1 s early
    reqs = [_req(0, 5), _req(1, 6)]
    ss = stats.steady_state(reqs, 2)
    assert ss["window_s"] == pytest.approx(4.0)
    assert ss["tok_s"] == pytest.approx(200, rel=0.02)
    # first send -> last end divides the same tokens by 6 s: well under 200
    total = sum(len(r["token_ns"]) for r in reqs)
    assert total / 6.0 < 170
    # per-chunk counts are used when every chunk says how many tokens it carried
    r = _req(0, 2, step=0.1)
    r["chunk_tokens"] = [3] * len(r["token_ns"])
    assert stats.steady_state([r], 1)["tokens"] == 3 * len(r["token_ns"])
    # usage counts spread over the chunks when they do not
    r["chunk_tokens"] = [None] * len(r["token_ns"])
    r["generated"] = 2 * len(r["token_ns"])
    assert stats.steady_state([r], 1)["tokens"] == pytest.approx(r["generated"])


def test_rel_spread_and_finite():
    assert stats.rel_spread([90, 100, 110]) == pytest.approx(0.2)
    assert stats.rel_spread([5]) == 0.0
    assert stats.finite([1, None, True, "x", math.inf, 2.5]) == [1.0, 2.5]
