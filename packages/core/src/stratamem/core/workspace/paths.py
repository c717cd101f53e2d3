"""Canonical workspace paths and the validation every layered-file request passes through.

Only ``MEMORY.md``, ``DREAMS.md`` and ``YYYY-MM-DD.md`` are served, where the root's layout puts them
(``<root>/.stratamem/memory/`` by default).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from pathlib import Path, PurePosixPath

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace.errors import invalid
from stratamem.core.workspace.layout import (
    DREAMS_FILENAME,
    LONG_TERM_FILENAME,
    STRATAMEM_LAYOUT,
    WorkspaceLayout,
)

STRATAMEM_DIR = ".stratamem"
MEMORY_WORKSPACE_PATH = ".stratamem/memory"
MEMORY_LONG_TERM_FILENAME = LONG_TERM_FILENAME
MEMORY_DREAMS_FILENAME = DREAMS_FILENAME
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


def is_daily_name(name: str) -> bool:
    """True for ``YYYY-MM-DD.md`` naming a real calendar date."""
    m = _DAILY.match(name)
    if not m:
        return False
    try:
        dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return False
    return True


def is_layered_name(name: str) -> bool:
    """True for ``MEMORY.md``, ``DREAMS.md`` and a real calendar date ``YYYY-MM-DD.md``."""
    return name in (MEMORY_LONG_TERM_FILENAME, MEMORY_DREAMS_FILENAME) or is_daily_name(name)


def canonical_relpath(name: str, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> str:
    """Root-relative canonical path of a layered file name in ``layout``."""
    return layout.relpath(name)


def layered_name(path: str, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> str:
    """Validate a requested layered path and return its file name.

    Accepts ``NAME`` or the layout's canonical path of ``NAME`` (``.stratamem/memory/NAME``, or for
    OpenClaw ``MEMORY.md`` / ``memory/YYYY-MM-DD.md``); rejects absolute paths, ``..``,
    backslashes, other directories, other names and impossible dates.
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
    directory = "/".join(parts[:-1])
    if directory and directory not in layout.dirs():
        raise invalid("memory file path must name a layered file in the workspace", path=path)
    name = parts[-1]
    if not is_layered_name(name):
        raise invalid(
            "only MEMORY.md, DREAMS.md and YYYY-MM-DD.md (a real date) are memory files",
            path=path,
        )
    if directory and layout.dir_of(name) != directory:
        raise invalid(
            "memory file path must name a layered file in the workspace",
            path=path,
            expected=layout.relpath(name),
        )
    return name


def resolve_layered_file(root: Path, path: str, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> Path:
    """Absolute path of a validated layered file; symlinks that leave the workspace are rejected.

    When the canonical file is absent and a host alias exists (OpenClaw's ``memory.md``), the
    alias is the file, so we never shadow what the host reads.
    """
    name = layered_name(path, layout)
    target = root / layout.relpath(name)
    if not os.path.lexists(target):
        for alias in layout.aliases_of(name):
            candidate = target.with_name(alias)
            if os.path.lexists(candidate):
                target = candidate
                break
    ensure_inside_workspace(root, target)
    return target


def ensure_inside_workspace(root: Path, target: Path) -> None:
    """No directory between the root and ``target`` is a symlink, and ``target`` (if present)
    resolves beside itself, so nothing reached through a layered path leaves the root."""
    try:
        segments = target.parent.relative_to(root).parts
    except ValueError:
        raise invalid("memory file is outside the project root") from None
    for i in range(1, len(segments) + 1):
        link = root.joinpath(*segments[:i])
        if link.is_symlink():
            raise invalid("memory workspace must not be a symlink", path="/".join(segments[:i]))
    parent = target.parent
    expected = parent.resolve(strict=False)
    if expected != parent:
        raise invalid("memory workspace resolves outside the project root")
    if os.path.lexists(target) and target.resolve(strict=False).parent != expected:
        raise invalid(
            "memory file is a symlink that leaves the workspace",
            path=str(target.relative_to(root)),
        )
