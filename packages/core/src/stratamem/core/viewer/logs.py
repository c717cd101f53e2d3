"""Log lines for the viewer: a live hub fed by the ``stratamem`` logger, and a tail of the home's files.

Lines reach the hub already rendered and redacted by the telemetry processors; the tail reads the
JSON-lines files of ``<home>/logs`` and filters by level and channel.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.telemetry.logs import LOGGER_NAME

LEVELS = ("debug", "info", "warning", "error", "critical")
_ALIASES = {"warn": "warning", "fatal": "critical", "trace": "debug", "exception": "error"}
RING = 500
TAIL_BYTES = 2 * 1024 * 1024
MAX_TAIL = 1000
#: files read by the tail, newest lines win
TAIL_FILES = ("stratamem.log", "events.jsonl", "llm.jsonl")


def level_rank(name: str) -> int:
    name = _ALIASES.get(name.lower(), name.lower())
    return LEVELS.index(name) if name in LEVELS else 1


def check_level(level: str | None) -> str | None:
    if level in (None, ""):
        return None
    assert level is not None
    norm = _ALIASES.get(level.lower(), level.lower())
    if norm not in LEVELS:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT,
            f"level must be one of {', '.join(LEVELS)}",
            {"field": "level", "value": level},
        )
    return norm


def parse_line(line: str) -> dict[str, Any] | None:
    line = line.strip()
    if not line:
        return None
    try:
        rec = json.loads(line)
    except ValueError:
        return {"level": "info", "channel": "", "event": line}
    return rec if isinstance(rec, dict) else None


def matches(rec: dict[str, Any], level: str | None, channel: str | None) -> bool:
    if level and level_rank(str(rec.get("level", "info"))) < level_rank(level):
        return False
    return not channel or str(rec.get("channel", "")) == channel


class _HubHandler(logging.Handler):
    def __init__(self, hub: LogHub) -> None:
        super().__init__(logging.DEBUG)
        self.hub = hub

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            rec = parse_line(record.getMessage())
            if rec is not None:
                self.hub.publish(rec)


class LogHub:
    """Recent log records plus live subscribers (thread-safe publish, asyncio consumers)."""

    def __init__(self) -> None:
        self.ring: collections.deque[dict[str, Any]] = collections.deque(maxlen=RING)
        self._subs: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[dict[str, Any]]]] = []
        self._handler = _HubHandler(self)

    def install(self) -> None:
        logging.getLogger(LOGGER_NAME).addHandler(self._handler)

    def uninstall(self) -> None:
        logging.getLogger(LOGGER_NAME).removeHandler(self._handler)

    def publish(self, rec: dict[str, Any]) -> None:
        self.ring.append(rec)
        for loop, queue in list(self._subs):
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_offer, queue, rec)

    def subscribe(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(1024)
        self._subs.append((asyncio.get_running_loop(), queue))
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self._subs = [(lp, q) for lp, q in self._subs if q is not queue]


def _offer(queue: asyncio.Queue[dict[str, Any]], rec: dict[str, Any]) -> None:
    with contextlib.suppress(asyncio.QueueFull):
        queue.put_nowait(rec)


def _read_tail(path: Path) -> list[str]:
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            data = fh.read()
    except OSError:
        return []
    lines = data.decode("utf-8", errors="replace").splitlines()
    return lines[1:] if size > TAIL_BYTES else lines


def tail(
    logs_dir: Path,
    level: str | None,
    channel: str | None,
    limit: int,
    live: collections.abc.Iterable[dict[str, Any]] = (),
) -> list[dict[str, Any]]:
    """The newest ``limit`` records of the home's log files (plus live ones not yet on disk)."""
    records: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name in TAIL_FILES:
        for line in _read_tail(logs_dir / name):
            rec = parse_line(line)
            if rec is not None:
                seen.add(json.dumps(rec, sort_keys=True, default=str))
                records.append(rec)
    for rec in live:
        key = json.dumps(rec, sort_keys=True, default=str)
        if key not in seen:
            records.append(rec)
    records = [r for r in records if matches(r, level, channel)]
    records.sort(key=lambda r: str(r.get("timestamp", "")))
    return records[-limit:]
