"""Where a home's Unix socket lives: ``<home>/run/<name>``, or a short temp path past the 107-byte limit.

``sun_path`` holds at most 108 bytes including the terminating NUL, so longer paths cannot be bound.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from pathlib import Path

from stratamem.contract.hostkit.home import MAX_SOCKET_PATH_BYTES, run_dir, socket_path_for

__all__ = [
    "MAX_SOCKET_PATH_BYTES",
    "clear_stale",
    "remove",
    "restrict",
    "run_dir",
    "socket_path_for",
]


def _is_live(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(0.5)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def clear_stale(path: Path) -> None:
    """Remove a leftover socket file from a dead owner (the home lock already proves we own it)."""
    with contextlib.suppress(FileNotFoundError):
        mode = path.lstat().st_mode
        if stat.S_ISSOCK(mode) and not _is_live(path):
            path.unlink()
        elif stat.S_ISSOCK(mode):
            # a live socket on a home we hold the lock for can only be a leaked child: replace it
            path.unlink()


def restrict(path: Path) -> None:
    """Only the owner's user may connect: mode 0600."""
    os.chmod(path, 0o600)


def remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
