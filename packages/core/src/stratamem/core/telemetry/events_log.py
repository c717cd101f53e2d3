"""``events.jsonl``: an EventBus observer that writes every core event envelope on the ``events`` channel."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from stratamem.core.telemetry.logs import get_logger


def event_log_observer() -> Callable[[Any], None]:
    log = get_logger("events")

    def observe(event: Any) -> None:
        log.info(
            "event",
            type=event.type,
            seq=event.seq,
            ts=event.ts,
            epoch=getattr(event, "epoch", None),
            correlation_id=event.correlation_id,
            payload=event.payload,
        )

    return observe


def attach_event_log(bus: Any) -> Callable[[Any], None]:
    """``bus.add_observer`` with the events.jsonl writer; returns the observer."""
    observer = event_log_observer()
    bus.add_observer(observer)
    return observer
