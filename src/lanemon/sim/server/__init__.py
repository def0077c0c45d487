"""The simulator's OpenAI-compatible HTTP server (Starlette + uvicorn).

* ``state.py`` -- :class:`SimState` (one lane's state) and :class:`ApiError`.
* ``jobs.py`` -- request validation and job building: what the lane says (no IO).
* ``logprobs.py`` -- logprobs in the OpenAI wire shapes.
* ``stream.py`` -- :class:`GenerationResponse`, the writer that times and sends SSE chunks or a JSON body.
* ``app.py`` -- :func:`create_app`: the routes of one lane (``/v1/*``, ``/metrics``, ``/sim/*``).
* ``serve.py`` -- :class:`SimThread` (a daemon thread, for ``lanemon demo`` and the tests), :func:`run`,
  :func:`run_args` and :func:`main` (``lanemon sim``, ``python -m lanemon.sim``).

The model the server speaks for (timings, text, tokenizer, behaviours) lives beside this package in
``lanemon.sim``.  Never imports ``textual`` or lanemon's measuring side.
"""

from .app import create_app
from .serve import SimThread, main, run, run_args
from .state import ApiError, SimState

__all__ = ["create_app", "SimThread", "run", "run_args", "main", "SimState", "ApiError"]
