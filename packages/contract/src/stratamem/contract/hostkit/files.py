"""Replacing a file whole, with the permission bits it must have.

The files Stratamem writes for a user (an export bundle, a host's config with its API keys, the
run directory's records) are replaced through a temp file and a rename (or, for a file that must
only be created, a hard link), so a reader never sees half a file; the temp file is 0600 from its first byte, so no copy is readable by others while it
is written, and it ends with the mode asked for (an explicit ``chmod``: the umask masks
``O_CREAT``'s mode).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def mode_of(path: Path, default: int) -> int:
    """``path``'s permission bits, or ``default`` when it does not exist yet."""
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        return default


def _temp_for(path: Path) -> Path:
    """A temp name beside ``path`` that no other process or thread writing it uses."""
    return path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")


def _write_temp(path: Path, data: str | bytes, mode: int) -> Path:
    """``data`` in a private temp file beside ``path``, with ``mode`` (removed if the write fails)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_for(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, mode)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def write_atomic(path: Path, data: str | bytes, mode: int = 0o600) -> None:
    """Replace ``path`` with ``data`` (text as UTF-8) and give it ``mode``; the temp file is
    removed if the write fails."""
    tmp = _write_temp(path, data, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def create_whole(path: Path, data: str | bytes, mode: int = 0o600) -> bool:
    """Create ``path`` with ``data`` and ``mode`` unless it exists; False when it already did.

    Processes that create the same file at once (two opening a fresh home) neither fail nor
    overwrite each other, and a reader never sees the new file half written: the content goes to
    a private temp file, hard-linked into place (``link`` fails if the name exists).
    """
    tmp = _write_temp(path, data, mode)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True
