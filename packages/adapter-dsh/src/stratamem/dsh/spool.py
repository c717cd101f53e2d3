"""The durable capture spool: completed turns the plugin appended (write + fsync) and a done ledger.

The plugin only appends to ``spool.jsonl``; the service only appends to ``spool.done``. Replaying the
spool minus the ledger is idempotent by turn key, so start-up resumes whatever a crash left queued.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

from stratamem.core.telemetry import get_logger

_log = get_logger("dsh.spool")

SPOOL_DIR = "dsh"
SPOOL_FILE = "spool.jsonl"
DONE_FILE = "spool.done"


def spool_dir(home: Path) -> Path:
    return Path(home) / SPOOL_DIR


def spool_path(home: Path) -> Path:
    return spool_dir(home) / SPOOL_FILE


def append_line(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line and fsync it (what the plugin does from its sync listener)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


class Spool:
    """Reads new complete lines of the spool; remembers which turn keys are done."""

    def __init__(self, home: Path) -> None:
        self.path = spool_path(home)
        self.done_path = spool_dir(home) / DONE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._offset = 0
        self._partial = b""
        self._lock = threading.Lock()
        self.done: dict[str, str] = {}
        self._load_done()

    def _load_done(self) -> None:
        try:
            raw = self.done_path.read_bytes()
        except FileNotFoundError:
            return
        for line in raw.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn last line from a crash: that turn is simply replayed
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                self.done[entry["key"]] = str(entry.get("status") or "captured")

    def read_new(self) -> list[dict[str, Any]]:
        """Records appended since the last call (complete lines only)."""
        with self._lock:
            try:
                with self.path.open("rb") as fh:
                    fh.seek(self._offset)
                    chunk = fh.read()
            except FileNotFoundError:
                return []
            self._offset += len(chunk)
            data = self._partial + chunk
            lines = data.split(b"\n")
            self._partial = lines.pop()
        out: list[dict[str, Any]] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                _log.warning("dsh.spool_bad_line", size=len(line))
                continue
            if isinstance(record, dict):
                out.append(record)
        return out

    def mark(self, key: str, status: str = "captured") -> None:
        with self._lock:
            if key in self.done:
                return
            append_line(self.done_path, {"key": key, "status": status})
            self.done[key] = status
