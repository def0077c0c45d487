"""Made-up but consistent log-probabilities for the simulator.

Every (position, token) pair gets a deterministic top-k distribution from a
stable hash (the same in every process), so two lanes scoring the same text
agree exactly -- except a quantized lane (:data:`LANE_NOISE`), whose
probabilities are the native ones multiplied by ``exp(N(0, sigma))`` and
renormalised to the same total mass.  That gives ``lanemon kl`` a small,
finite, reproducible divergence to measure (about sigma**2 / 2 nats per token
for the listed mass).  Which lanes *serve* logprobs at all is the profile's
``logprobs`` mode; this module only decides the numbers.
"""

from __future__ import annotations

import contextvars
import hashlib
import math
import random

LANE_NOISE = {"tensorfold-exl3": 0.25}

ALTERNATIVES = (" the", ",", ".", " and", " of", " a", "\n", " to", " is", " in", " that", " it", ":", " for",
                " with", " as", " on", " be", " at", " by", " this")

#: sigma of the current request's lane (set per request by the server)
current_noise: contextvars.ContextVar[float] = contextvars.ContextVar("lanemon_sim_lp_noise", default=0.0)


def _rng(*parts: object) -> random.Random:
    h = hashlib.sha256("\x00".join(map(str, parts)).encode("utf-8", "surrogatepass")).digest()
    return random.Random(int.from_bytes(h[:16], "big"))


def token_logprobs(token: str, index: int, k: int) -> tuple[float, list[tuple[str, float]]]:
    """(logprob of ``token``, top-k [(token, logprob)] sorted best first) at position ``index``."""
    r = _rng("lp", index, token)
    alts = [a for a in ALTERNATIVES if a != token]
    r.shuffle(alts)
    cands = [token] + alts[: max(0, k - 1)]
    # native distribution over the candidates: the chosen token leads, mass decays, a tail remains
    p_first = 0.35 + 0.6 * r.random()
    probs = [p_first]
    rest = 1.0 - p_first
    for _ in cands[1:]:
        share = rest * (0.3 + 0.4 * r.random())
        probs.append(share)
        rest -= share
    sigma = current_noise.get()
    if sigma > 0:
        q = _rng("quant", index, token)
        total = sum(probs)
        noisy = [p * math.exp(q.gauss(0.0, sigma)) for p in probs]
        scale = total / sum(noisy)
        probs = [p * scale for p in noisy]
    top = sorted(zip(cands, (round(math.log(p), 6) for p in probs)), key=lambda tv: -tv[1])
    lp = dict(top)[token]
    return lp, top[: max(1, k)]
