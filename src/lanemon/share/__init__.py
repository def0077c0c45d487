"""Live share: serve a session's event stream to read-only viewers over websockets.

:mod:`~lanemon.share.server` (the publisher), :mod:`~lanemon.share.client`
(the viewer's event source) and :mod:`~lanemon.share.protocol` (the wire
format, bounds and close codes).  See docs/SHARE.md.  No Textual here.
"""
