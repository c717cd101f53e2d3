"""A process-wide concurrency limit for background LLM work, usable from any event loop or thread.

Waiting polls a thread semaphore with short sleeps, so it is cancel-safe and never binds to one loop.
"""

from __future__ import annotations

import asyncio
import threading
from types import TracebackType


class ConcurrencyLimit:
    def __init__(self, slots: int) -> None:
        self.slots = max(1, int(slots))
        self._sem = threading.BoundedSemaphore(self.slots)
        self._lock = threading.Lock()
        self.in_use = 0
        self.peak = 0

    async def __aenter__(self) -> ConcurrencyLimit:
        pause = 0.002
        while not self._sem.acquire(blocking=False):
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)
        with self._lock:
            self.in_use += 1
            self.peak = max(self.peak, self.in_use)
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        with self._lock:
            self.in_use -= 1
        self._sem.release()


_shared: dict[int, ConcurrencyLimit] = {}
_shared_lock = threading.Lock()


def background_limit(slots: int = 2) -> ConcurrencyLimit:
    """The shared limit for ``slots`` (``session.bg_llm_concurrency``, default 2): one per size."""
    with _shared_lock:
        lim = _shared.get(slots)
        if lim is None:
            lim = _shared[slots] = ConcurrencyLimit(slots)
        return lim
