"""The simulator: two OpenAI-compatible lanes with timings fitted to the write-up (docs/SIMULATOR.md).

The model (what a lane is and says):

* ``profiles.py`` -- the lanes' numbers; ``engine.py`` -- the timing curves and the asyncio
  scheduler with its ground-truth trace; ``tokenizer.py`` -- the simulator's tokenizer;
* ``text.py`` -- generated text; ``divergence.py``, ``thinking.py``, ``needle.py``, ``logprobs.py``
  -- the quantized lane's divergence, reasoning tokens, needle answers, made-up logprobs;
* ``tools.py`` and ``agent.py`` -- tool calls and the scripted gauntlet agent;
* ``qeval_responder.py`` with ``qeval_answers.json`` -- scripted qeval answers from the simulator's
  own data.

The server: ``server/`` (the HTTP app, request validation, the streaming writer, serving),
``metrics_endpoint.py`` (``GET /metrics`` in vLLM's or SGLang's naming), ``fault_spec.py`` and
``faults.py`` (fault injection), ``options.py`` (command-line options).

The simulator never imports Textual nor lanemon's measuring side (``client``, ``measure``,
``folds``, ``workloads``, ``reports``), and they never import it.
"""
