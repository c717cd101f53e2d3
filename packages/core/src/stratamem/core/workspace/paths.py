"""Canonical workspace paths and the validation every layered-file request passes through.

Only ``MEMORY.md``, ``DREAMS.md`` and ``YYYY-MM-DD.md`` under ``<root>/.stratamem/memory/`` are served.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from pathlib import Path, PurePosixPath

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace.errors import invalid

STRATAMEM_DIR = ".stratamem"
MEMORY_WORKSPACE_PATH = ".stratamem/memory"
MEMORY_LONG_TERM_FILENAME = "MEMORY.md"
MEMORY_DREAMS_FILENAME = "DREAMS.md"
MEMORY_INSIGHTS_FILENAME = "memory-insights.md"
MEMORY_AUDIT_FILENAME = "memory-audit.md"
SETTINGS_PATH = ".stratamem/settings.json"
MEMORY_LONG_TERM_PATH = f"{MEMORY_WORKSPACE_PATH}/{MEMORY_LONG_TERM_FILENAME}"
#: the largest layered file we read or write (bytes of UTF-8)
MAX_FILE_BYTES = 1024 * 1024

_DAILY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})\.md$")


def validate_project_root(root: str | os.PathLike[str]) -> Path:
    """An existing directory, returned resolved; anything else is ``invalid_argument``."""
    if not isinstance(root, str | os.PathLike):
        raise invalid("project root must be a path", got=type(root).__name__)
    text = os.fspath(root)
    if not text or "\x00" in text:
        raise invalid("project root must be a non-empty path")
    path = Path(text)
    if not path.is_absolute():
        raise invalid("project root must be an absolute path", root=text)
    if not path.is_dir():
        raise StratamemError(ErrorCode.NOT_FOUND, "project root is not a directory", {"root": text})
    return path.resolve()


def project_key(root: Path) -> str:
    """Stable 16-hex id of a project root (the index and recall store are keyed by it)."""
    return hashlib.sha256(str(root).encode("utf-8")).hexdigest()[:16]


def memory_workspace_path(root: Path) -> Path:
    return root / MEMORY_WORKSPACE_PATH


def memory_long_term_path(root: Path) -> Path:
    return memory_workspace_path(root) / MEMORY_LONG_TERM_FILENAME


def memory_dreams_path(root: Path) -> Path:
    return memory_workspace_path(root) / MEMORY_DREAMS_FILENAME


def daily_memory_path(root: Path, day: dt.date) -> Path:
    return memory_workspace_path(root) / f"{day.isoformat()}.md"


def is_layered_name(name: str) -> bool:
    """True for ``MEMORY.md``, ``DREAMS.md`` and a real calendar date ``YYYY-MM-DD.md``."""
    if name in (MEMORY_LONG_TERM_FILENAME, MEMORY_DREAMS_FILENAME):
        return True
    m = _DAILY.match(name)
    if not m:
        return False
    try:
        dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return True


def canonical_relpath(name: str) -> str:
    """Project-relative canonical path of a layered file name."""
    return f"{MEMORY_WORKSPACE_PATH}/{name}"


def layered_name(path: str) -> str:
    """Validate a requested layered path and return its file name.

    Accepts ``NAME`` or ``.stratamem/memory/NAME``; rejects absolute paths, ``..``, backslashes,
    sub-directories, other names and impossible dates.
    """
    if not isinstance(path, str) or not path:
        raise invalid("memory file path must be a non-empty string")
    if "\x00" in path or "\\" in path:
        raise invalid("memory file path contains forbidden characters", path=path)
    if path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        raise invalid("memory file path must be workspace-relative, not absolute", path=path)
    parts = PurePosixPath(path).parts
    if any(part in ("..", ".") for part in path.split("/")):
        raise invalid("memory file path must not contain '.' or '..' segments", path=path)
    prefix = tuple(MEMORY_WORKSPACE_PATH.split("/"))
    if len(parts) == len(prefix) + 1 and parts[: len(prefix)] == prefix:
        name = parts[-1]
    elif len(parts) == 1:
        name = parts[0]
    else:
        raise invalid("memory file path must name a layered file in the workspace", path=path)
    if not is_layered_name(name):
        raise invalid(
            "only MEMORY.md, DREAMS.md and YYYY-MM-DD.md (a real date) are memory files",
            path=path,
        )
    return name


def resolve_layered_file(root: Path, path: str) -> Path:
    """Absolute path of a validated layered file; symlinks that leave the workspace are rejected."""
    name = layered_name(path)
    workspace = memory_workspace_path(root)
    target = workspace / name
    ensure_inside_workspace(root, target)
    return target


def ensure_inside_workspace(root: Path, target: Path) -> None:
    workspace = memory_workspace_path(root)
    expected = (root / MEMORY_WORKSPACE_PATH).resolve(strict=False)
    # the workspace itself (or .stratamem) must not be a link out of the project
    for link in (root / STRATAMEM_DIR, workspace):
        if link.is_symlink():
            raise invalid(
                "memory workspace must not be a symlink", path=str(link.relative_to(root))
            )
    if expected != root / MEMORY_WORKSPACE_PATH:
        raise invalid("memory workspace resolves outside the project root")
    if os.path.lexists(target) and target.resolve(strict=False).parent != expected:
        raise invalid(
            "memory file is a symlink that leaves the workspace",
            path=str(target.relative_to(root)),
        )
