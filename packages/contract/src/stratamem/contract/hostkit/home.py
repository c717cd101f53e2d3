"""Where a runtime home lives (DESIGN.md §2) and where its Unix socket is: one rule for the core, the
CLI and every adapter (the JS plugins mirror ``socket_path_for``)."""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path

from stratamem.contract.errors import ErrorCode, StratamemError

#: host -> (environment variable naming the host's home, the host's default home)
HOST_DEFAULTS: dict[str, tuple[str | None, str]] = {
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
    if host in HOST_DEFAULTS:
        var, default = HOST_DEFAULTS[host]
        base = env.get(var) if var else None
        root = Path(base).expanduser() if base else Path(default).expanduser()
        return (root / "stratamem").absolute()
    return Path("~/.stratamem").expanduser().absolute()


#: Longest socket path (bytes) the kernel accepts, without the terminating NUL (``sun_path`` is 108).
MAX_SOCKET_PATH_BYTES = 107


def run_dir(home: Path) -> Path:
    return Path(home) / "run"


def socket_path_for(home: Path, name: str = "stratamem.sock") -> Path:
    """The home's socket path; a short, home-specific temp path when the natural one is too long."""
    natural = run_dir(home) / name
    if len(os.fsencode(str(natural))) <= MAX_SOCKET_PATH_BYTES:
        return natural
    digest = hashlib.sha256(os.fsencode(str(Path(home).absolute()))).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"stratamem-{digest}.sock"


def pid_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists (another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def make_dirs(home: Path, subdirs: tuple[str, ...], probe_in: str) -> Path:
    """Create ``home`` and ``subdirs`` (mode 0700) and prove ``probe_in`` writable; a home that
    cannot be written is ``path_not_writable`` at once, before anything else is attempted."""
    try:
        home.mkdir(parents=True, exist_ok=True, mode=0o700)
        for sub in subdirs:
            (home / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        # per thread too: two threads preparing one home (a closing and a new bridge) shared the
        # name, and one's unlink made the other's a false ``path_not_writable``
        probe = home / probe_in / f".write-probe-{os.getpid()}-{threading.get_ident()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise StratamemError(
            ErrorCode.PATH_NOT_WRITABLE,
            f"home {home} is not writable: {exc.strerror or exc}",
            {"home": str(home)},
        ) from exc
    return home
