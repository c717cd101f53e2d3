"""An absolute deadline shared by every retrieval stage: nothing new starts after it passes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from stratamem.core.telemetry import get_logger

T = TypeVar("T")
_log = get_logger("retrieval")


class Deadline:
    def __init__(self, at: float | None) -> None:
        self.at = at  # time.monotonic() seconds, or None for no deadline
        self.cut_off = False

    def remaining(self) -> float | None:
        return None if self.at is None else self.at - time.monotonic()

    def expired(self) -> bool:
        left = self.remaining()
        if left is not None and left <= 0:
            self.cut_off = True
            return True
        return False

    async def run(self, stage: str, factory: Callable[[], Awaitable[T]]) -> T | None:
        """Start ``factory()`` only before the deadline; a timeout or a failure yields ``None``.

        ``asyncio.timeout`` runs the stage in the calling task: ``wait_for`` (3.11) wrapped it in a
        task of its own, two event-loop turns per stage even when it never waits (the served
        path's fixed query vector, an in-memory stage)."""
        if self.expired():
            return None
        try:
            async with asyncio.timeout(self.remaining()):
                return await factory()
        except TimeoutError:
            self.cut_off = True
            return None
        except Exception as exc:  # one broken channel must not sink the whole recall
            _log.warning("retrieval.stage_failed", stage=stage, error=repr(exc))
            return None

    def call(self, stage: str, fn: Callable[[], T]) -> T | None:
        """``run`` for an in-memory step (nothing to await, nothing to time out): not started
        after the deadline, a failure logged as the stage's and yielding ``None``, so the caller
        goes on without it (the query expansion: the un-expanded query)."""
        if self.expired():
            return None
        try:
            return fn()
        except Exception as exc:
            _log.warning("retrieval.stage_failed", stage=stage, error=repr(exc))
            return None
