"""Adapter logging without the core: ``log.warning("dsh.spool_bad_record", error=...)`` on stdlib logging.

Each record is one JSON line (timestamp, level, channel, event, fields) on a child of the
``stratamem`` logger, so where the core runs in the same process (``stratamem serve``) its sinks write
adapter lines to the same files; elsewhere the host's own logging decides.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

#: the record attribute the core's sinks route channels by
CHANNEL_ATTR = "stratamem_channel"


class HostLogger:
    def __init__(self, channel: str) -> None:
        self.channel = channel
        self._std = logging.getLogger(f"stratamem.{channel}")

    def _log(self, level: int, event: str, fields: dict[str, Any]) -> None:
        if not self._std.isEnabledFor(level):
            return
        line = {
            "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "level": logging.getLevelName(level).lower(),
            "channel": self.channel,
            "event": event,
            **fields,
        }
        self._std.log(
            level,
            json.dumps(line, default=str, ensure_ascii=False),
            extra={CHANNEL_ATTR: self.channel},
        )

    def debug(self, event: str, **fields: Any) -> None:
        self._log(logging.DEBUG, event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._log(logging.INFO, event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._log(logging.WARNING, event, fields)

    def error(self, event: str, **fields: Any) -> None:
        self._log(logging.ERROR, event, fields)


def get_logger(channel: str) -> HostLogger:
    return HostLogger(channel)
