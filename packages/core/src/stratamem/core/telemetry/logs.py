"""Logging entry point. ``get_logger(channel)`` returns a structlog logger bound to a channel."""

from __future__ import annotations

from typing import Any

import structlog


def get_logger(channel: str, **bound: Any) -> Any:
    return structlog.get_logger("stratamem").bind(channel=channel, **bound)
