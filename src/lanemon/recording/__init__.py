"""Recordings: one JSON-lines file per session, written as it happens and read back for replay and reports.

* ``writer.py`` -- :class:`Recorder`, the append-only writer (header, then one event per line).
* ``reader.py`` -- :class:`Recording`: the header now, the events lazily; bad lines skipped and counted.
* ``schema.py`` -- the typed schema (msgspec) of the header and of every event kind, and the size bounds.
* ``index.py`` -- the seek index a replay builds in one pass (byte offsets, markers).

The format is docs/RECORDING.md.  Never imports Textual.
"""
