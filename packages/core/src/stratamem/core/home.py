"""Where a runtime home lives (DESIGN.md §2) and how it is prepared (directories, writability)."""

from __future__ import annotations

from pathlib import Path

from stratamem.contract.hostkit.home import make_dirs, resolve_home

__all__ = ["prepare_home", "resolve_home"]


def prepare_home(home: Path) -> Path:
    """Create the home and its sub-directories; ``path_not_writable`` if it cannot be written."""
    return make_dirs(home, ("data", "logs"), "data")
