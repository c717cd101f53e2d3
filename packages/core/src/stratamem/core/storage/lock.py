"""One process owns a home: an exclusive ``fcntl`` lock on ``<home>/owner.lock``.

The lock file records the owner (pid, optional socket path) so a second process can name it,
and later reach it over its socket instead of opening the store (the host kit's ``owner_record``
reads it: one reader for the engine and the clients).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from pathlib import Path
from typing import Any

from stratamem.contract import __version__ as CONTRACT_VERSION
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.client import OWNER_LOCK, owner_record

LOCK_FILE = OWNER_LOCK


class HomeLock:
    """Exclusive, non-blocking; released on ``release()`` or when the process dies."""

    def __init__(self, home: Path) -> None:
        self.path = Path(home) / LOCK_FILE
        self._fd: int | None = None
        self.owner: dict[str, Any] = {}

    def acquire(self, socket: str | None = None) -> HomeLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            owner = owner_record(self.path.parent) or {}
            pid = owner.get("pid", "unknown")
            raise StratamemError(
                ErrorCode.HOME_LOCKED,
                f"home {self.path.parent} is owned by process {pid}; "
                "reach it through that process (its socket) instead of opening the store",
                {"home": str(self.path.parent), "pid": pid, "socket": owner.get("socket")},
            ) from None
        self._fd = fd
        self.owner = {
            "pid": os.getpid(),
            "uid": os.getuid(),
            "contract_version": CONTRACT_VERSION,  # clients check it before using the socket
            "socket": socket,
        }
        self._write()
        return self

    def set_socket(self, socket: str | None) -> None:
        """Advertise the owner's socket (the gRPC server calls this once it listens)."""
        self.owner["socket"] = socket
        self._write()

    def _write(self) -> None:
        assert self._fd is not None
        data = json.dumps(self.owner).encode()
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, data, 0)
        os.fsync(self._fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None
