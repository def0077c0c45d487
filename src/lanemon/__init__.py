"""lanemon: watch, race, benchmark and record OpenAI-compatible LLM serving lanes."""

__version__ = "0.1.0"
