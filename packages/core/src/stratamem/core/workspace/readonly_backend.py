"""The ``readonly`` backend: reads degrade to empty without throwing, writes raise ``READ_ONLY``."""

from __future__ import annotations

from pathlib import Path

from stratamem.core.workspace.errors import MemoryBackendError
from stratamem.core.workspace.layered import read_memory_file
from stratamem.core.workspace.models import (
    MemoryBackendCapabilities,
    MemoryGetOptions,
    MemoryGetResult,
    MemoryReadResult,
    MemorySearchOptions,
    MemorySearchResult,
    MemoryWriteResult,
)
from stratamem.core.workspace.paths import (
    MEMORY_LONG_TERM_FILENAME,
    MEMORY_LONG_TERM_PATH,
    canonical_relpath,
    layered_name,
)


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

    def read(self, root: Path) -> MemoryReadResult:
        try:
            content = read_memory_file(root, MEMORY_LONG_TERM_FILENAME, self.type)
        except Exception:
            content = None
        return MemoryReadResult(
            content or "", content is not None, MEMORY_LONG_TERM_PATH, self.type
        )

    def write(self, root: Path, content: str) -> MemoryWriteResult:
        raise MemoryBackendError(
            "READ_ONLY", self.type, "the readonly memory backend rejects writes"
        )

    def exists(self, root: Path) -> bool:
        try:
            return read_memory_file(root, MEMORY_LONG_TERM_FILENAME, self.type) is not None
        except Exception:
            return False

    def get(self, root: Path, options: MemoryGetOptions) -> MemoryGetResult:
        name = layered_name(options.path)  # bad input is still a typed error
        try:
            content = read_memory_file(root, name, self.type) or ""
        except Exception:
            content = ""
        lines = content.splitlines()
        return MemoryGetResult(canonical_relpath(name), content, 1, len(lines), len(lines))

    def search(self, root: Path, options: MemorySearchOptions) -> list[MemorySearchResult]:
        return []
