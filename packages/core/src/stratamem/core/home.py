"""Where a runtime home lives (DESIGN.md §2) and how it is prepared (directories, writability)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from stratamem.contract.errors import ErrorCode, StratamemError

_HOST_DEFAULTS: dict[str, tuple[str | None, str]] = {
    "openclaw": (None, "~/.openclaw"),
    "hermes": ("HERMES_HOME", "~/.hermes"),
    "dsh": ("DSH_HOME", "~/.dsh"),
}


def resolve_home(
    explicit: str | os.PathLike[str] | None = None,
    host: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Path:
    """Explicit path, else ``$STRATAMEM_HOME``, else the host's default, else ``~/.stratamem``."""
    env = os.environ if env is None else env
    if explicit:
        return Path(explicit).expanduser().absolute()
    if env.get("STRATAMEM_HOME"):
        return Path(env["STRATAMEM_HOME"]).expanduser().absolute()
    if host in _HOST_DEFAULTS:
        var, default = _HOST_DEFAULTS[host]
        base = env.get(var) if var else None
        root = Path(base).expanduser() if base else Path(default).expanduser()
        return (root / "stratamem").absolute()
    return Path("~/.stratamem").expanduser().absolute()


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
