"""The event bus: one place every event passes through, live or replayed.

Publishers (lane clients, the replayer) call :meth:`EventBus.publish`;
subscribers (the recorder, the dashboard state, the share server) are plain
callables.  Delivery is synchronous and in order; a subscriber that raises is
reported once through ``on_error`` and never stops the others.

A ``gate`` (set while worker processes run a workload, lanemon.workers.pool)
takes every published event instead, and hands events on with :meth:`deliver`
once it can put them in time order with the workers' events.
"""

from __future__ import annotations

from collections.abc import Callable

from lanemon.events import Event

Subscriber = Callable[[Event], None]


class EventBus:
    def __init__(self, on_error: Callable[[Subscriber, BaseException], None] | None = None) -> None:
        self._subscribers: list[Subscriber] = []
        self._on_error = on_error
        self.published = 0
        self.gate: Subscriber | None = None
        """When set, :meth:`publish` hands every event to it; it calls :meth:`deliver` in its own order."""

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        """Add a subscriber; returns a function that removes it."""
        self._subscribers.append(fn)

        def unsubscribe() -> None:
            if fn in self._subscribers:
                self._subscribers.remove(fn)

        return unsubscribe

    def publish(self, event: Event) -> None:
        if self.gate is not None:
            self.gate(event)
            return
        self.deliver(event)

    def deliver(self, event: Event) -> None:
        """Fan ``event`` out to every subscriber, now."""
        self.published += 1
        for fn in tuple(self._subscribers):
            try:
                fn(event)
            except Exception as exc:  # a broken subscriber must not stop the stream
                if self._on_error is not None:
                    self._on_error(fn, exc)


class FixedPace:
    """Mixin for event sources that run at the pace of the lanes: no pause, no speed (benches, the
    gauntlet, a static screen).  The UI's keys for them do nothing."""

    paused = False
    speed: float | None = None

    def toggle_pause(self) -> bool:
        return self.paused

    def faster(self) -> None:
        return None

    def slower(self) -> None:
        return None
