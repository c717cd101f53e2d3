"""Trends for the Overview charts: recall latency from the retrieval events, memory growth by day."""

from __future__ import annotations

import collections
import datetime as dt
import time
from typing import Any

from stratamem.contract.dtos import Event

KEEP = 200


class Metrics:
    """An event-bus observer pairing ``retrieval.triggered`` with its ``hit``/``empty`` outcome."""

    def __init__(self) -> None:
        self._open: dict[str, float] = {}
        self._samples: collections.deque[dict[str, Any]] = collections.deque(maxlen=KEEP)

    def observe(self, event: Event) -> None:
        key = f"{event.payload.get('session_id')}:{event.payload.get('reason')}"
        if event.type == "retrieval.triggered":
            self._open[key] = time.perf_counter()
            if len(self._open) > 1000:
                self._open.clear()
        elif event.type in ("retrieval.hit", "retrieval.empty"):
            start = self._open.pop(key, None)
            if start is not None:
                self._samples.append(
                    {
                        "ts": event.ts,
                        "ms": round((time.perf_counter() - start) * 1000, 2),
                        "hits": int(event.payload.get("hits") or 0),
                        "reason": event.payload.get("reason"),
                    }
                )

    def latencies(self) -> list[dict[str, Any]]:
        return list(self._samples)

    @staticmethod
    def growth(stamps: list[int]) -> list[dict[str, Any]]:
        """Cumulative trace count per UTC day."""
        per_day: collections.Counter[str] = collections.Counter(
            dt.datetime.fromtimestamp(s / 1000, dt.UTC).strftime("%Y-%m-%d") for s in stamps if s
        )
        total = 0
        out = []
        for day in sorted(per_day):
            total += per_day[day]
            out.append({"day": day, "added": per_day[day], "total": total})
        return out
