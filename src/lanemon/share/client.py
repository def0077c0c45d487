"""The share viewer: a dashboard :class:`~lanemon.sessions.sources` source fed from a publisher's websocket.

:class:`RemoteSource` implements the Source protocol (``mode = "attach"``):
it says hello with the token, takes the lanes from the snapshot header, and
publishes every received event on its own bus -- so the viewer's dashboard
folds exactly the events the publisher's dashboard folds.  It is read-only:
``toggle_pause`` only holds the local display (events keep arriving and are
shown on resume), ``faster``/``slower`` do nothing, and nothing but the hello is
ever sent.  No Textual here.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import orjson
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

from lanemon.bus import EventBus
from lanemon.public_lane import PublicLane
from lanemon import events as schema
from lanemon.events import Event
from lanemon.results.requests import note_data
from lanemon.share import protocol as P
from lanemon.recording.schema import BadRow, decode_event
from lanemon.share.protocol import ShareError
from lanemon.untrusted import ID_LIMIT, inert


MAX_HELD_BYTES = 64 << 20
"""While paused, at most this many bytes of events (as JSON) are held; then the display resumes."""


class RemoteSource:
    """Events from ``lanemon share`` at ``url`` (ws://HOST:PORT), shown read-only."""

    mode = "attach"
    real_time = True
    """A shared live session's events, as they happen."""

    def __init__(self, url: str, token: str, *, bus: EventBus | None = None, open_timeout: float = 5.0,
                 max_held_events: int = 500_000) -> None:
        self.url = P.validate_ws_url(url)  # ValueError: the CLI exits 2
        self.token = token
        self.bus = bus or EventBus()
        self.open_timeout = open_timeout
        self.max_held_events = max_held_events
        self.lanes: list[PublicLane] = []
        self.recording_path = None
        self.paused = False
        self.speed: float | None = None
        self.finished = False
        self.remote_mode: str | None = None
        """The publisher's mode: live, demo or replay."""
        self.remote_version: str | None = None
        self.snapshot_events = 0
        self.dropped_events = 0
        """Events the publisher no longer held when we joined (its log is bounded)."""
        self.synced = False
        """True once the whole snapshot has been received (live events follow)."""
        self.received = 0
        self.bad_messages = 0
        self.error: str | None = None
        self._ws: ClientConnection | None = None
        self._held: list[Event] = []
        self._held_bytes = 0
        """The JSON size of the held events (a publisher's events may be large: bounded by :data:`MAX_HELD_BYTES`)."""
        self._stop = False
        self._closing: asyncio.Task | None = None
        self._last_t = 0

    # -- connecting ------------------------------------------------------------

    async def connect(self) -> None:
        """Connect, say hello and read the header; ShareError (one line) if refused or unreachable."""
        try:
            ws = await connect(self.url, max_size=4 * P.MAX_MESSAGE, compression=None,
                               open_timeout=self.open_timeout, close_timeout=2, ping_interval=20, ping_timeout=20,
                               max_queue=64)
        except (OSError, asyncio.TimeoutError) as exc:
            what = getattr(exc, "strerror", None) or str(exc) or "timed out"
            raise ShareError(f"cannot connect to {self.url}: {what}") from None
        except InvalidURI as exc:
            raise ShareError(f"{self.url} is not a share URL ({exc})") from None
        except InvalidHandshake as exc:
            raise ShareError(f"{self.url} is not a lanemon share ({exc})") from None
        try:
            await ws.send(orjson.dumps({"type": "hello", "token": self.token, "protocol": P.PROTOCOL}).decode())
            raw = await asyncio.wait_for(ws.recv(), self.open_timeout + P.HELLO_TIMEOUT_S)
            header = orjson.loads(raw)
            if not isinstance(header, dict) or header.get("type") != "header":
                raise ShareError(f"{self.url} is not a lanemon share (no header)")
        except ConnectionClosed as exc:
            raise ShareError(P.close_explanation(exc.rcvd.code if exc.rcvd else None,
                                                 exc.rcvd.reason if exc.rcvd else "")) from None
        except asyncio.TimeoutError:
            await ws.close()
            raise ShareError(f"{self.url} sent no header within {self.open_timeout + P.HELLO_TIMEOUT_S:g}s") from None
        except (orjson.JSONDecodeError, ShareError) as exc:
            await ws.close()
            if isinstance(exc, ShareError):
                raise
            raise ShareError(f"{self.url} is not a lanemon share (not JSON)") from None
        self._apply_header(header)
        self._ws = ws

    def _apply_header(self, header: dict[str, Any]) -> None:
        lanes = header.get("lanes") if isinstance(header.get("lanes"), list) else []
        # the header is the publisher's text: inert and bounded, as a recording's (at most 64 lanes)
        self.lanes = [PublicLane(inert(d.get("name", ""), ID_LIMIT), inert(d.get("url") or "", 2048),
                                 inert(d["model"], ID_LIMIT) if isinstance(d.get("model"), str) else None)
                      for d in lanes[:64] if isinstance(d, dict) and d.get("name")]
        self.remote_mode = inert(header.get("mode", ""), 32)
        self.remote_version = inert(header.get("lanemon", ""), 32)
        self.snapshot_events = _int(header.get("snapshot_events"))
        self.dropped_events = _int(header.get("dropped_events"))

    # -- the stream --------------------------------------------------------------

    async def run(self) -> None:
        """Publish every received event until the publisher goes away or :meth:`stop`."""
        if self._ws is None:
            try:
                await self.connect()
            except ShareError as exc:
                self._end(str(exc), "error")
                return
        ws = self._ws
        assert ws is not None
        self._note(f"attached to {self.url} ({self.remote_mode}, lanemon {self.remote_version}); read-only", "info")
        if self.dropped_events:
            self._note(f"the publisher keeps a bounded log: {self.dropped_events:,} older events were dropped "
                       "before you joined, so counts and histories cover only the later ones", "warning")
        try:
            async for raw in ws:
                self._handle(raw)
                await asyncio.sleep(0)  # a big batch must not starve the UI
        except ConnectionClosed:
            pass
        if self._stop:
            self.finished = True
            return
        code = ws.close_code
        reason = ws.close_reason or ""
        if code in (None, 1006):
            code = None
        self._end(P.close_explanation(code, reason), "warning" if code == P.CLOSE_GOING_AWAY else "error")

    def _handle(self, raw: str | bytes) -> None:
        try:
            msg = orjson.loads(raw)
        except orjson.JSONDecodeError:
            self.bad_messages += 1
            return
        if not isinstance(msg, dict):
            self.bad_messages += 1
            return
        kind = msg.get("type")
        if kind == "events":
            events = msg.get("events")
            for obj in events if isinstance(events, list) else ():
                try:  # a publisher is as untrusted as a recording file: the recording schema decides
                    line = orjson.dumps(obj)
                    ev = decode_event(line)
                except (BadRow, TypeError, orjson.JSONEncodeError):
                    self.bad_messages += 1
                    continue
                self._deliver(ev, len(line))
        elif kind == "live":
            self.synced = True
        # anything else (a newer protocol's message) is ignored

    def _deliver(self, ev: Event, size: int = 0) -> None:
        self.received += 1
        self._last_t = max(self._last_t, ev.t)
        if self.paused:
            self._held.append(ev)
            self._held_bytes += size
            if len(self._held) >= self.max_held_events or self._held_bytes >= MAX_HELD_BYTES:
                self.paused = False
                self._release()
                self._note("display resumed: too many events held while paused", "warning")
            return
        self.bus.publish(ev)

    def _release(self) -> None:
        held, self._held, self._held_bytes = self._held, [], 0
        for ev in held:
            self.bus.publish(ev)

    def _note(self, message: str, level: str) -> None:
        self.bus.publish(Event(self._last_t, schema.NOTE, None, None, note_data(f"share: {message}", level)))

    def _end(self, message: str, level: str) -> None:
        self.error = message
        if self._held:
            self.paused = False
            self._release()
        self._note(message, level)
        self.finished = True

    # -- controls (local only) ---------------------------------------------------

    def toggle_pause(self) -> bool:
        """Hold or resume the local display; the publisher is not told and does not pause."""
        self.paused = not self.paused
        if not self.paused:
            self._release()
        return self.paused

    def faster(self) -> None:
        return None

    def slower(self) -> None:
        return None

    def stop(self) -> None:
        self._stop = True
        ws = self._ws
        if ws is None:
            return
        with contextlib.suppress(RuntimeError):
            self._closing = asyncio.get_running_loop().create_task(ws.close())

    async def aclose(self) -> None:
        self._stop = True
        if self._ws is not None:
            await self._ws.close()


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0
