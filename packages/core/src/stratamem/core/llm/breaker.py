"""A circuit breaker for terminal provider errors (bad key, no credit): fail fast for a cool-down."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

#: The reference's cool-down on terminal errors (memos-core §6.2: max(30 s, 300 s default)).
DEFAULT_COOLDOWN_S = 300.0


class CircuitBreaker:
    def __init__(
        self, cooldown_s: float = DEFAULT_COOLDOWN_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.cooldown_s = max(0.0, cooldown_s)
        self._clock = clock
        self._open_until = 0.0
        self.reason = ""
        self._lock = threading.Lock()

    def trip(self, reason: str) -> None:
        with self._lock:
            self._open_until = self._clock() + self.cooldown_s
            self.reason = reason

    def reset(self) -> None:
        with self._lock:
            self._open_until = 0.0
            self.reason = ""

    @property
    def is_open(self) -> bool:
        return self.remaining_s > 0

    @property
    def remaining_s(self) -> float:
        with self._lock:
            return max(0.0, self._open_until - self._clock())
