"""Recall latency for the Overview chart, from the retrieval events (memory growth is an engine
aggregate: ``engine.overview.growth``)."""

from __future__ import annotations

import collections
import time
from collections.abc import Collection
from typing import Any

from stratamem.contract.dtos import Event
from stratamem.core.events import NAMESPACE_KEY

KEEP = 200


class Metrics:
    """An event-bus observer pairing ``retrieval.triggered`` with its ``hit``/``empty`` outcome."""

    def __init__(self) -> None:
        self._open: dict[str, float] = {}
        self._samples: collections.deque[dict[str, Any]] = collections.deque(maxlen=KEEP)

    def observe(self, event: Event) -> None:
        ns = event.payload.get(NAMESPACE_KEY)
        key = f"{ns}:{event.payload.get('session_id')}:{event.payload.get('reason')}"
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
                        "namespace": ns,
                    }
                )

    def latencies(self, namespaces: Collection[str] | None = None) -> list[dict[str, Any]]:
        """The samples, or those measured in ``namespaces`` (``AGENT/PROFILE`` keys) only."""
        return [s for s in self._samples if namespaces is None or s["namespace"] in namespaces]
