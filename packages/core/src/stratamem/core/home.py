"""Where a runtime home lives (DESIGN.md §2) and how it is prepared (directories, writability)."""

from __future__ import annotations

from pathlib import Path

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.home import resolve_home

__all__ = ["prepare_home", "resolve_home"]


def prepare_home(home: Path) -> Path:
    """Create the home and its sub-directories; ``path_not_writable`` if it cannot be written."""
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        for sub in ("data", "logs"):
            (home / sub).mkdir(exist_ok=True, mode=0o700)
        probe = home / "data" / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise StratamemError(
            ErrorCode.PATH_NOT_WRITABLE,
            f"home {home} is not writable: {exc.strerror or exc}",
            {"home": str(home)},
        ) from exc
    return home
