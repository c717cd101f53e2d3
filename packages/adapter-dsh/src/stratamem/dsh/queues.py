"""Per-session serial background queues: routing and capture run here, one job at a time per session.

Nothing on the foreground path (recall, later pre-steps, session disposal) ever awaits a queue; only
``drain`` does, within a bound, at plugin dispose (and tests).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from stratamem.contract.hostkit.log import get_logger

_log = get_logger("dsh.queue")

Job = Callable[[], Awaitable[None]]


class SerialQueues:
    def __init__(self) -> None:
        self._tails: dict[str, asyncio.Future[None]] = {}
        self.pending = 0

    def enqueue(self, lane: str, job: Job, label: str = "") -> None:
        """Run ``job`` after every earlier job of ``lane``; returns at once."""
        previous = self._tails.get(lane)
        self.pending += 1

        async def run() -> None:
            if previous is not None:
                await asyncio.wait({previous})
            try:
                await job()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                _log.warning("dsh.job_failed", lane=lane, job=label, error=str(exc))
            finally:
                self.pending -= 1

        tail = asyncio.ensure_future(run())
        self._tails[lane] = tail

        def forget(fut: asyncio.Future[None]) -> None:
            if self._tails.get(lane) is fut:
                del self._tails[lane]

        tail.add_done_callback(forget)

    def lanes(self) -> list[str]:
        return list(self._tails)

    async def drain(self, timeout_s: float | None = None, lane: str | None = None) -> bool:
        """Wait for the queued work (of one lane, or all) within ``timeout_s``; True when idle."""
        end = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            tails = [t for name, t in self._tails.items() if lane is None or name == lane]
            if not tails:
                return True
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            await asyncio.wait(tails, timeout=left)

    def cancel(self) -> None:
        for tail in list(self._tails.values()):
            tail.cancel()

    async def cancel_and_wait(self) -> None:
        """Cancel every lane and wait until each has ended (none is left pending)."""
        tails = list(self._tails.values())
        self.cancel()
        await asyncio.gather(*tails, return_exceptions=True)
