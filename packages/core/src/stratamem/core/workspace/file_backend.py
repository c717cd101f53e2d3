"""The ``file`` backend: the canonical ``MEMORY.md`` read and written directly, atomically."""

from __future__ import annotations

from pathlib import Path

from stratamem.core.workspace.errors import MemoryBackendError, invalid
from stratamem.core.workspace.layered import (
    read_memory_file,
    search_layered_files,
    write_memory_file,
)
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
from stratamem.core.workspace.paths import (
    MEMORY_LONG_TERM_FILENAME,
    layered_name,
    resolve_layered_file,
)


class FileMemoryBackend:
    """Direct canonical file access with atomic writes; ``get``/``search`` cover every layered file."""

    type = "file"
    name = "File"
    capabilities = MemoryBackendCapabilities(
        readable=True,
        writable=True,
        supports_atomic_write=True,
        has_conflict_resolution=False,
        persistent=True,
    )

    def __init__(self, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> None:
        self.layout = layout

    def with_layout(self, layout: WorkspaceLayout) -> FileMemoryBackend:
        """The same backend over another layout (OpenClaw's workspace, say)."""
        return FileMemoryBackend(layout)

    def read(self, root: Path) -> MemoryReadResult:
        content = read_memory_file(root, MEMORY_LONG_TERM_FILENAME, self.type, self.layout)
        return MemoryReadResult(
            content=content or "",
            exists=content is not None,
            path=self.layout.relpath(MEMORY_LONG_TERM_FILENAME),
            backend=self.type,
        )

    def write(self, root: Path, content: str) -> MemoryWriteResult:
        written = write_memory_file(
            root, MEMORY_LONG_TERM_FILENAME, content, self.type, self.layout
        )
        return MemoryWriteResult(
            True, self.layout.relpath(MEMORY_LONG_TERM_FILENAME), written, self.type
        )

    def exists(self, root: Path) -> bool:
        return resolve_layered_file(root, MEMORY_LONG_TERM_FILENAME, self.layout).is_file()

    def get(self, root: Path, options: MemoryGetOptions) -> MemoryGetResult:
        return get_lines(root, options, self.type, self.layout)

    def search(self, root: Path, options: MemorySearchOptions) -> list[MemorySearchResult]:
        return search_layered_files(root, options.query, options.limit, self.layout)


def get_lines(
    root: Path,
    options: MemoryGetOptions,
    backend: str,
    layout: WorkspaceLayout = STRATAMEM_LAYOUT,
) -> MemoryGetResult:
    """A line window of one layered file (1-based ``start_line``); a missing file is ``NOT_FOUND``."""
    name = layered_name(options.path, layout)
    start = 1 if options.start_line is None else options.start_line
    if isinstance(start, bool) or not isinstance(start, int) or start < 1:
        raise invalid("start_line must be a positive integer", start_line=options.start_line)
    count = options.line_count
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise invalid("line_count must be a positive integer", line_count=count)
    content = read_memory_file(root, name, backend, layout)
    if content is None:
        raise MemoryBackendError(
            "NOT_FOUND", backend, "memory file does not exist", {"path": layout.relpath(name)}
        )
    lines = content.splitlines()
    end = len(lines) if count is None else min(len(lines), start + count - 1)
    window = lines[start - 1 : end] if start <= len(lines) else []
    return MemoryGetResult(
        path=layout.relpath(name),
        content="\n".join(window),
        start_line=start,
        end_line=max(start - 1, end) if window else start - 1,
        total_lines=len(lines),
    )
