"""The durable turn spool: turns a host acknowledged that the core has not applied yet.

One format for every host (the DSH JS plugin writes it too, see ``dsh/js/spool.mjs``): a directory
holding one JSON object per turn, in a file named ``<sha256(key)[:32]>.turn``. The object carries a
string ``key`` (the turn key) and the host's payload.

- **Write** (``put``): temp file → fsync → rename → fsync of the directory; a write is acknowledged
  only after all four, so a process killed mid-write leaves at most a temp file that nobody
  acknowledged (swept later). Two writes of one key collapse into one file.
- **Consume** (``claim`` → apply → ``consumed``): a claim renames the file to ``….claimed-<pid>`` so
  two consumers never apply one turn at once; applying is idempotent by turn key (the core dedupes
  ``turn_end`` on it), so a consumer killed after applying but before deleting only replays.
  ``consumed`` deletes the file (the spool compacts as it drains); ``release`` puts it back for a
  retry; ``set_aside`` moves a record that can never apply to ``dead/`` (kept, never lost). Claims of
  a process that died are taken back at the next claim.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stratamem.contract.hostkit.home import pid_alive

SUFFIX = ".turn"
CLAIMED = ".claimed-"
TEMP_SUFFIX = ".tmp"
DEAD_DIR = "dead"
#: a temp file this old belongs to a writer that died before acknowledging it
STALE_TEMP_S = 600.0
#: how many consumed keys ``done`` remembers (newest kept; the core's turn keys are the real guard)
DONE_KEEP = 10_000


def record_name(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32] + SUFFIX


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True, slots=True)
class SpoolRecord:
    key: str
    data: dict[str, Any]
    path: Path  # the claimed file


class Spool:
    """One spool directory; thread safe; any number of writer and consumer processes."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self._lock = threading.Lock()
        #: keys this process consumed lately, with their outcome (captured, skipped, failed, duplicate)
        self.done: dict[str, str] = {}

    # ------------------------------------------------------------------ write
    def put(self, record: dict[str, Any]) -> Path:
        """Write one record durably; returns once it survives a crash of this process or the host."""
        key = record.get("key")
        if not isinstance(key, str) or not key:
            raise ValueError("a spool record needs a non-empty string key")
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        name = record_name(key)
        tmp = self.dir / f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}{TEMP_SUFFIX}"
        data = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        final = self.dir / name
        os.replace(tmp, final)
        _fsync_dir(self.dir)
        return final

    # ------------------------------------------------------------------ read
    def pending(self) -> list[Path]:
        """Unclaimed records, oldest first."""
        if not self.dir.is_dir():
            return []
        found: list[tuple[int, str, Path]] = []
        for p in self.dir.iterdir():
            if p.name.endswith(SUFFIX) and not p.name.startswith("."):
                with contextlib.suppress(FileNotFoundError):
                    found.append((p.stat().st_mtime_ns, p.name, p))
        return [p for _, _, p in sorted(found)]

    def backlog(self) -> int:
        """Records not yet consumed, including claimed ones being applied right now."""
        if not self.dir.is_dir():
            return 0
        return sum(1 for p in self.dir.iterdir() if SUFFIX in p.name and not p.name.startswith("."))

    def dead(self) -> list[Path]:
        return sorted((self.dir / DEAD_DIR).glob(f"*{SUFFIX}*")) if self.dir.is_dir() else []

    def _take_back_orphans(self) -> None:
        """Claims of processes that died go back to the spool; stale temp files are swept."""
        now = time.time()
        for p in self.dir.iterdir():
            name = p.name
            if CLAIMED in name:
                pid = name.rsplit(CLAIMED, 1)[1]
                if pid.isdigit() and not pid_alive(int(pid)):
                    with contextlib.suppress(FileNotFoundError):
                        os.replace(p, p.with_name(name.split(CLAIMED, 1)[0]))
            elif name.endswith(TEMP_SUFFIX):
                with contextlib.suppress(FileNotFoundError):
                    if now - p.stat().st_mtime > STALE_TEMP_S:
                        p.unlink()

    def claim(self, limit: int | None = None) -> list[SpoolRecord]:
        """Claim pending records (oldest first); unreadable ones are set aside, never returned."""
        out: list[SpoolRecord] = []
        with self._lock:
            if not self.dir.is_dir():
                return out
            self._take_back_orphans()
            for path in self.pending():
                if limit is not None and len(out) >= limit:
                    break
                claimed = path.with_name(f"{path.name}{CLAIMED}{os.getpid()}")
                try:
                    os.replace(path, claimed)  # another consumer may have claimed it first
                except FileNotFoundError:
                    continue
                try:
                    data = json.loads(claimed.read_bytes())
                    key = data.get("key") if isinstance(data, dict) else None
                    if not isinstance(key, str) or not key:
                        raise ValueError("no key")
                except (OSError, ValueError, UnicodeDecodeError):
                    self._to_dead(claimed)
                    continue
                out.append(SpoolRecord(key, data, claimed))
        return out

    # ------------------------------------------------------------------ outcome
    def _remember(self, key: str, status: str) -> None:
        self.done.pop(key, None)
        self.done[key] = status
        while len(self.done) > DONE_KEEP:
            del self.done[next(iter(self.done))]

    def consumed(self, record: SpoolRecord, status: str = "captured") -> None:
        """The record is applied (or needs no applying): delete it."""
        with self._lock:
            self._remember(record.key, status)
            record.path.unlink(missing_ok=True)

    def release(self, record: SpoolRecord) -> None:
        """Not applied this time: back into the spool for a later claim."""
        with contextlib.suppress(FileNotFoundError):
            os.replace(record.path, record.path.with_name(record_name(record.key)))

    def set_aside(self, record: SpoolRecord, status: str = "failed") -> None:
        """It can never apply (a permanent error): kept in ``dead/``, out of the way."""
        with self._lock:
            self._remember(record.key, status)
            self._to_dead(record.path)

    def _to_dead(self, path: Path) -> None:
        dead = self.dir / DEAD_DIR
        dead.mkdir(exist_ok=True, mode=0o700)
        with contextlib.suppress(FileNotFoundError):
            os.replace(path, dead / f"{path.name.split(CLAIMED, 1)[0]}.{uuid.uuid4().hex[:8]}")
