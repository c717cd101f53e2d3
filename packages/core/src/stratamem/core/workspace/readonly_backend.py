"""The ``readonly`` backend: reads degrade to empty without throwing, writes raise ``READ_ONLY``."""

from __future__ import annotations

from pathlib import Path

from stratamem.core.workspace.errors import MemoryBackendError
from stratamem.core.workspace.layered import read_memory_file
from stratamem.core.workspace.layout import STRATAMEM_LAYOUT, WorkspaceLayout
from stratamem.core.workspace.models import (
    MemoryBackendCapabilities,
    MemoryGetOptions,
    MemoryGetResult,
    MemoryReadResult,
    MemorySearchOptions,
    MemorySearchResult,
    MemoryWriteResult,
)
from stratamem.core.workspace.paths import MEMORY_LONG_TERM_FILENAME, layered_name


class ReadOnlyMemoryBackend:
    """Never writes; every read-side failure becomes an empty answer."""

    type = "readonly"
    name = "Read-only"
    capabilities = MemoryBackendCapabilities(
        readable=True,
        writable=False,
        supports_atomic_write=False,
        has_conflict_resolution=False,
        persistent=False,
    )

    def __init__(self, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> None:
        self.layout = layout

    def with_layout(self, layout: WorkspaceLayout) -> ReadOnlyMemoryBackend:
        return ReadOnlyMemoryBackend(layout)

    def read(self, root: Path) -> MemoryReadResult:
        try:
            content = read_memory_file(root, MEMORY_LONG_TERM_FILENAME, self.type, self.layout)
        except Exception:
            content = None
        return MemoryReadResult(
            content or "",
            content is not None,
            self.layout.relpath(MEMORY_LONG_TERM_FILENAME),
            self.type,
        )

    def write(self, root: Path, content: str) -> MemoryWriteResult:
        raise MemoryBackendError(
            "READ_ONLY", self.type, "the readonly memory backend rejects writes"
        )

    def exists(self, root: Path) -> bool:
        try:
            found = read_memory_file(root, MEMORY_LONG_TERM_FILENAME, self.type, self.layout)
            return found is not None
        except Exception:
            return False

    def get(self, root: Path, options: MemoryGetOptions) -> MemoryGetResult:
        name = layered_name(options.path, self.layout)  # bad input is still a typed error
        try:
            content = read_memory_file(root, name, self.type, self.layout) or ""
        except Exception:
            content = ""
        lines = content.splitlines()
        return MemoryGetResult(self.layout.relpath(name), content, 1, len(lines), len(lines))

    def search(self, root: Path, options: MemorySearchOptions) -> list[MemorySearchResult]:
        return []
