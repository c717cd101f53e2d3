"""File sinks in ``<home>/logs/``: size-rotated app/error/jsonl logs and the monthly, never-deleted audit log."""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import logging
import logging.handlers
import os
import shutil
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

#: Attribute on a ``LogRecord`` holding the structlog channel.
CHANNEL_ATTR = "stratamem_channel"
#: Marker attribute on handlers installed by ``configure_logging`` (so a reconfigure replaces them).
OWNED_ATTR = "_stratamem_owned"


class ChannelFilter(logging.Filter):
    """Pass records whose channel is (``include``) or is not (``exclude``) in a set."""

    def __init__(self, include: Iterable[str] = (), exclude: Iterable[str] = ()) -> None:
        super().__init__()
        self.include = frozenset(include)
        self.exclude = frozenset(exclude)

    def filter(self, record: logging.LogRecord) -> bool:
        channel = getattr(record, CHANNEL_ATTR, "")
        if self.include and channel not in self.include:
            return False
        return channel not in self.exclude


def _gzip_rotator(source: str, dest: str) -> None:
    with open(source, "rb") as src, gzip.open(dest, "wb") as out:
        shutil.copyfileobj(src, out)
    os.remove(source)


def _private(path: Path) -> None:
    if not path.exists():
        path.touch()
    with contextlib.suppress(OSError):  # e.g. a filesystem without modes
        path.chmod(0o600)


class SizeRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """``RotatingFileHandler`` without its two ``stat`` calls per record (they guard against
    rotating a device or a FIFO; our sinks are regular files we created) and formatting once."""

    def shouldRollover(self, record: logging.LogRecord) -> bool:
        if self.stream is None:
            self.stream = self._open()
        if self.maxBytes <= 0:
            return False
        self.stream.seek(0, 2)  # another process may have appended
        return bool(self.stream.tell() + len(record.getMessage()) + 1 >= self.maxBytes)


def rotating_file(
    path: Path, *, max_bytes: int, backups: int, compress: bool = True
) -> logging.Handler:
    """Size-rotated file; rotated files are gzip-compressed; at most ``backups`` are kept."""
    _private(path)
    handler = SizeRotatingFileHandler(
        path, maxBytes=max(1024, max_bytes), backupCount=max(1, backups), encoding="utf-8"
    )
    if compress:
        handler.namer = lambda name: name + ".gz"
        handler.rotator = _gzip_rotator
    return handler


def month_of(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m")


class MonthlyFileHandler(logging.FileHandler):
    """Appends to ``audit.log``; when the UTC month changes the file becomes ``audit-YYYY-MM.log.gz``.

    Rotated files are never deleted. ``clock`` is injectable so the rollover can be tested.
    """

    def __init__(self, path: Path, clock: Callable[[], float] | None = None) -> None:
        import time

        self._clock = clock or time.time
        _private(path)
        super().__init__(path, encoding="utf-8")
        self._month = (
            month_of(path.stat().st_mtime) if path.stat().st_size else month_of(self._clock())
        )

    def rotated_name(self, month: str) -> Path:
        base = Path(self.baseFilename)
        target = base.with_name(f"{base.stem}-{month}{base.suffix}.gz")
        n = 1
        while target.exists():
            target = base.with_name(f"{base.stem}-{month}.{n}{base.suffix}.gz")
            n += 1
        return target

    def emit(self, record: logging.LogRecord) -> None:
        now_month = month_of(self._clock())
        if now_month != self._month:
            self.acquire()
            try:
                if self.stream is not None:
                    self.stream.close()
                    self.stream = None
                base = Path(self.baseFilename)
                if base.exists() and base.stat().st_size:
                    _gzip_rotator(str(base), str(self.rotated_name(self._month)))
                _private(base)
                self._month = now_month
            finally:
                self.release()
        super().emit(record)


class StderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is at emit time (test capture, CLI redirection)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)
