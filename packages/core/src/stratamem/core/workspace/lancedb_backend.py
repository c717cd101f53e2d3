"""The ``lancedb`` backend (default): file reads/writes plus a hybrid index searched first.

When the index is missing, stale-failing or the embedder is unavailable, search falls back to the
local layered search, so a search never fails because of the index.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from stratamem.core.telemetry import get_logger
from stratamem.core.workspace.embedder import EmbedderFactory, LazyEmbedder
from stratamem.core.workspace.file_backend import FileMemoryBackend
from stratamem.core.workspace.index import DebouncedRefresher, WorkspaceIndex, default_home
from stratamem.core.workspace.layered import search_layered_files
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


def _log() -> Any:
    return get_logger("workspace.lancedb")  # resolved per call: honours logging configured later


class LanceDbMemoryBackend:
    """Delegates read/write to ``file``; keeps ``<home>/workspace/<key>/index`` fresh in the background.

    A search over an index older than the files answers from the files and schedules a refresh.
    """

    type = "lancedb"
    name = "LanceDB hybrid index"
    capabilities = MemoryBackendCapabilities(
        readable=True,
        writable=True,
        supports_atomic_write=True,
        has_conflict_resolution=False,
        persistent=True,
    )

    def __init__(
        self,
        home: Path | None = None,
        *,
        embedder_factory: EmbedderFactory | None = None,
        embedder: LazyEmbedder | None = None,
        debounce_seconds: float = 0.5,
        layout: WorkspaceLayout = STRATAMEM_LAYOUT,
    ) -> None:
        self._home = home
        self.layout = layout
        self._file = FileMemoryBackend(layout)
        self._embedder = embedder or LazyEmbedder(embedder_factory)
        self.refresher = DebouncedRefresher(debounce_seconds)
        self._indexes: dict[Path, WorkspaceIndex] = {}
        self._lock = threading.Lock()
        self._warmed: set[Path] = set()

    def with_layout(self, layout: WorkspaceLayout) -> LanceDbMemoryBackend:
        """A backend over ``layout`` sharing this one's home and embedder (its own index keys)."""
        return LanceDbMemoryBackend(
            self._home,
            embedder=self._embedder,
            debounce_seconds=self.refresher.delay,
            layout=layout,
        )

    @property
    def home(self) -> Path:
        return self._home if self._home is not None else default_home()

    def index_for(self, root: Path) -> WorkspaceIndex:
        with self._lock:
            index = self._indexes.get(root)
            if index is None:
                index = WorkspaceIndex(self.home, root, self._embedder, self.layout)
                self._indexes[root] = index
            return index

    def warm(self, root: Path) -> None:
        """Start-up refresh of a project's index (in the background)."""
        index = self.index_for(root)
        with self._lock:
            if root in self._warmed:
                return
            self._warmed.add(root)
        self.refresher.schedule(index)

    def read(self, root: Path) -> MemoryReadResult:
        result = self._file.read(root)
        return MemoryReadResult(result.content, result.exists, result.path, self.type)

    def write(self, root: Path, content: str) -> MemoryWriteResult:
        result = self._file.write(root, content)
        self.schedule_refresh(root)
        return MemoryWriteResult(result.success, result.path, result.bytes_written, self.type)

    def schedule_refresh(self, root: Path) -> None:
        with self._lock:
            self._warmed.add(root)
        self.refresher.schedule(self.index_for(root))

    def exists(self, root: Path) -> bool:
        return self._file.exists(root)

    def get(self, root: Path, options: MemoryGetOptions) -> MemoryGetResult:
        return self._file.get(root, options)

    def search(self, root: Path, options: MemorySearchOptions) -> list[MemorySearchResult]:
        index = self.index_for(root)
        usable = True
        if not index.exists():
            self.warm(root)  # first search before any refresh: build it for next time
        elif index.is_stale():  # edited behind our back (the host writes its own files)
            self.schedule_refresh(root)
            usable = False
        if usable and options.query.strip():
            try:
                return index.search(options.query, options.limit)
            except Exception as exc:
                _log().info("index search unavailable, using local layered search", error=str(exc))
        return search_layered_files(root, options.query, options.limit, self.layout)

    def close(self) -> None:
        """Cancel pending refreshes (not a contract method: process shutdown only)."""
        self.refresher.cancel_all()
