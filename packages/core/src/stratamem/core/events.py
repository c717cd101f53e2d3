"""In-process event bus: envelope with monotonic seq and epoch, ring buffer, async subscriptions.

Emitting never blocks the core: a subscriber whose queue is full is dropped (it sees an end of stream
and can resume from the last seq it got, while the ring buffer still holds it).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import time
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from stratamem.contract.dtos import Event, Namespace
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.events import EVENT_TYPES

#: payload key naming the namespace (``AGENT/PROFILE``) an event is about
NAMESPACE_KEY = "namespace"
RING_SIZE = 1024
SUBSCRIBER_QUEUE = 1024


def namespace_key(ns: Namespace) -> str:
    return f"{ns.agent_kind or 'unknown'}/{ns.profile_id or 'default'}"


def event_namespace(event: Event) -> Namespace | None:
    """The namespace an event is about (None: a system-wide event)."""
    raw = event.payload.get(NAMESPACE_KEY)
    if not isinstance(raw, str) or "/" not in raw:
        return None
    kind, profile = raw.split("/", 1)
    return Namespace(agent_kind=kind, profile_id=profile)


def for_namespace(ns: Namespace) -> Callable[[Event], bool]:
    """Subscriber filter: events about ``ns`` only (system-wide events are the owner's)."""
    key = namespace_key(ns)
    return lambda e: e.payload.get(NAMESPACE_KEY) == key


class _Subscriber:
    __slots__ = ("accepts", "dropped", "loop", "queue", "types")

    def __init__(
        self,
        types: frozenset[str],
        loop: asyncio.AbstractEventLoop,
        accepts: Callable[[Event], bool] | None = None,
    ) -> None:
        self.types = types
        self.accepts: Callable[[Event], bool] = accepts or (lambda e: True)
        self.loop = loop
        self.queue: asyncio.Queue[Event | None] = asyncio.Queue(SUBSCRIBER_QUEUE)
        self.dropped = False


class EventBus:
    """Thread-safe emit; async subscribe. One epoch per bus (a new process = a new epoch)."""

    def __init__(self, ring_size: int = RING_SIZE) -> None:
        self.epoch = uuid.uuid4().hex[:12]
        self._seq = itertools.count(1)
        self._ring: collections.deque[Event] = collections.deque(maxlen=ring_size)
        self._subs: list[_Subscriber] = []
        self._observers: list[Callable[[Event], None]] = []
        self.emitted_types: set[str] = set()

    def add_observer(self, observer: Callable[[Event], None]) -> None:
        """Synchronous observer (log sink, plugin); exceptions are swallowed per observer."""
        self._observers.append(observer)

    def emit(
        self,
        type: str,
        payload: dict[str, Any] | None = None,
        correlation_id: str | None = None,
        *,
        namespace: Namespace | None = None,
    ) -> Event:
        """Publish one event. ``namespace``: whose data it is about (``payload["namespace"]``,
        ``AGENT/PROFILE``); events without one are system-wide and reach unscoped subscribers only."""
        if type not in EVENT_TYPES:
            raise StratamemError(ErrorCode.INTERNAL, f"event type {type!r} is not in the catalogue")
        body = dict(payload or {})
        if namespace is not None:
            body[NAMESPACE_KEY] = namespace_key(namespace)
        event = Event(
            type=type,
            ts=int(time.time() * 1000),
            seq=next(self._seq),
            payload=body,
            correlation_id=correlation_id,
            epoch=self.epoch,
        )
        self._ring.append(event)
        self.emitted_types.add(type)
        for obs in list(self._observers):
            with contextlib.suppress(Exception):
                obs(event)
        for sub in list(self._subs):
            if (sub.types and type not in sub.types) or not sub.accepts(event):
                continue
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is sub.loop:
                self._offer(sub, event)
            else:
                with contextlib.suppress(RuntimeError):
                    sub.loop.call_soon_threadsafe(self._offer, sub, event)
        return event

    def _offer(self, sub: _Subscriber, event: Event) -> None:
        if sub.dropped:
            return
        try:
            sub.queue.put_nowait(event)
        except asyncio.QueueFull:
            sub.dropped = True
            with contextlib.suppress(ValueError):
                self._subs.remove(sub)
            with contextlib.suppress(asyncio.QueueEmpty):
                sub.queue.get_nowait()
            sub.queue.put_nowait(None)

    def recent(self, since_seq: int | None = None) -> list[Event]:
        return [e for e in self._ring if since_seq is None or e.seq > since_seq]

    def oldest_seq(self) -> int:
        return self._ring[0].seq if self._ring else 0

    async def subscribe(
        self,
        since_seq: int | None = None,
        types: Sequence[str] = (),
        accepts: Callable[[Event], bool] | None = None,
    ) -> AsyncIterator[Event]:
        """Yield events live; with ``since_seq`` first replay what the ring still holds after it.
        ``accepts`` filters (e.g. :func:`for_namespace`): a scoped subscriber sees its own events."""
        wanted = frozenset(types)
        sub = _Subscriber(wanted, asyncio.get_running_loop(), accepts)
        self._subs.append(sub)
        try:
            last = since_seq or 0
            if since_seq is not None:
                if since_seq and self._ring and since_seq < self.oldest_seq() - 1:
                    raise StratamemError(
                        ErrorCode.INVALID_ARGUMENT,
                        f"seq {since_seq} is no longer buffered (oldest {self.oldest_seq()})",
                        {"oldest_seq": self.oldest_seq()},
                    )
                for e in self.recent(since_seq):
                    if (not wanted or e.type in wanted) and sub.accepts(e):
                        last = e.seq
                        yield e
            while True:
                item = await sub.queue.get()
                if item is None:
                    raise StratamemError(
                        ErrorCode.QUOTA_EXCEEDED,
                        "event subscriber too slow; dropped (resume from the last seq received)",
                        {"last_seq": last},
                    )
                if item.seq <= last:
                    continue
                last = item.seq
                yield item
        finally:
            with contextlib.suppress(ValueError):
                self._subs.remove(sub)
