"""Logprobs in the OpenAI wire shapes (chat ``logprobs.content`` entries, completions' parallel lists).

The numbers themselves are :mod:`lanemon.sim.logprobs` (deterministic, per-lane noise).
"""

from __future__ import annotations

from .. import logprobs as sim_logprobs

__all__ = ["chat_lp_entry", "completion_lp"]


def _token_logprobs(token: str, index: int, k: int) -> tuple[float, list[tuple[str, float]]]:
    """Deterministic made-up (logprob, top-k alternatives) for one token (see sim/logprobs.py)."""
    return sim_logprobs.token_logprobs(token, index, k)


def chat_lp_entry(token: str, index: int, k: int) -> dict:
    lp, top = _token_logprobs(token, index, k)
    b = list(token.encode("utf-8"))
    return {
        "token": token, "logprob": lp, "bytes": b,
        "top_logprobs": [{"token": t, "logprob": v, "bytes": list(t.encode("utf-8"))} for t, v in top],
    }


def completion_lp(tokens: list[str], start_index: int, k: int, offset: int, prompt: bool = False) -> dict:
    out = {"text_offset": [], "token_logprobs": [], "tokens": [], "top_logprobs": []}
    for j, tok in enumerate(tokens):
        if prompt and j == 0 and start_index == 0:
            lp, top = None, None
        else:
            lp, top = _token_logprobs(tok, start_index + j, max(1, k))
            top = {t: v for t, v in top[: max(1, k)]} if k else {tok: lp}
        out["text_offset"].append(offset)
        out["token_logprobs"].append(lp)
        out["tokens"].append(tok)
        out["top_logprobs"].append(top)
        offset += len(tok)
    return out
