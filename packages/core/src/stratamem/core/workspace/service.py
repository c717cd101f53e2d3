"""``WorkspaceMemory``: the one Python API the gRPC service, CLI and tools call.

Every call validates the project root (and, when configured, that it is an allowed root) first.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace import instructions as instr
from stratamem.core.workspace.embedder import EmbedderFactory, LazyEmbedder
from stratamem.core.workspace.errors import MemoryBackendError, invalid
from stratamem.core.workspace.index import default_home, index_dir
from stratamem.core.workspace.lancedb_backend import LanceDbMemoryBackend
from stratamem.core.workspace.layered import (
    LayeredFileInfo,
    ensure_memory_files,
    list_memory_files,
    read_memory_file,
    write_memory_file,
)
from stratamem.core.workspace.layout import STRATAMEM_LAYOUT, WorkspaceLayout, get_layout
from stratamem.core.workspace.models import (
    MemoryBackend,
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
    project_key,
    validate_project_root,
)
from stratamem.core.workspace.recall.models import (
    RecallAppendResult,
    RecallRecord,
    RecallReplaceResult,
    RecallSearchResult,
    RecallVectorSearchProvider,
)
from stratamem.core.workspace.recall.section import append_recalled_context
from stratamem.core.workspace.recall.store import RecallStore
from stratamem.core.workspace.recall.vector import EmbeddingRecallVectorProvider
from stratamem.core.workspace.registry import resolve_memory_backend
from stratamem.core.workspace.settings import bootstrap_memory, load_settings, update_settings


class WorkspaceMemory:
    """Project-scoped workspace memory over the resolved backend, plus the recall store.

    ``layout`` says where every root served by this instance keeps its layered files
    (``stratamem`` by default; ``openclaw`` serves an OpenClaw workspace in place).
    """

    def __init__(
        self,
        home: Path | None = None,
        *,
        embedder_factory: EmbedderFactory | None = None,
        allowed_roots: Iterable[str | os.PathLike[str]] | None = None,
        debounce_seconds: float = 0.5,
        layout: str | WorkspaceLayout | None = None,
    ) -> None:
        self.home = Path(home) if home is not None else default_home()
        self.layout = get_layout(layout)
        self._embedder = LazyEmbedder(embedder_factory)
        self.lancedb = LanceDbMemoryBackend(
            self.home,
            embedder=self._embedder,
            debounce_seconds=debounce_seconds,
            layout=self.layout,
        )
        self._bound: dict[str, MemoryBackend] = {}
        self.allowed_roots = (
            None if allowed_roots is None else {Path(os.fspath(r)).resolve() for r in allowed_roots}
        )
        self._recall: dict[Path, RecallStore] = {}
        self._lock = threading.Lock()
        self._vector_provider: EmbeddingRecallVectorProvider | None = None

    # -- roots, settings, backend ------------------------------------------------------------

    def root(self, root: str | os.PathLike[str]) -> Path:
        path = validate_project_root(root)
        if self.allowed_roots is not None and path not in self.allowed_roots:
            raise StratamemError(
                ErrorCode.PERMISSION_DENIED,
                "project root is not configured for this service",
                {"root": str(path)},
            )
        return path

    def settings(self, root: str | os.PathLike[str]) -> dict[str, Any]:
        return load_settings(self.root(root))

    def update_settings(
        self, root: str | os.PathLike[str], patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        return update_settings(self.root(root), patch, self.layout)

    def backend(self, root: str | os.PathLike[str]) -> MemoryBackend:
        """The backend ``memory_backend_type`` resolves to; the built-in ``lancedb`` uses this home.

        Under a non-default layout a backend must offer ``with_layout`` (the built-ins do);
        one that cannot follow the layout is ``unsupported`` rather than writing elsewhere.
        """
        backend = resolve_memory_backend(load_settings(self.root(root)))
        if isinstance(backend, LanceDbMemoryBackend):
            return self.lancedb
        if self.layout == STRATAMEM_LAYOUT or getattr(backend, "layout", None) == self.layout:
            return backend
        with self._lock:
            bound = self._bound.get(backend.type)
            if bound is None:
                rebind = getattr(backend, "with_layout", None)
                if rebind is None:
                    raise MemoryBackendError(
                        "UNSUPPORTED",
                        backend.type,
                        "the memory backend cannot serve this workspace layout",
                        {"layout": self.layout.name},
                    )
                bound = rebind(self.layout)
                self._bound[backend.type] = bound
            return bound

    def start(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        """Service start-up: bootstrap enabled roots and refresh their indexes in the background."""
        for r in roots:
            path = self.root(r)
            bootstrap_memory(path, layout=self.layout)
            if self.backend(path) is self.lancedb:
                self.lancedb.warm(path)

    def close(self, wait: bool = True, timeout: float = 60.0) -> None:
        """Let pending index refreshes finish (or drop them with ``wait=False``)."""
        if wait:
            self.lancedb.refresher.wait_idle(timeout)
        self.lancedb.close()

    # -- backend operations --------------------------------------------------------------------

    def bootstrap(self, root: str | os.PathLike[str]) -> list[str]:
        return ensure_memory_files(self.root(root), self.layout)

    def read(self, root: str | os.PathLike[str]) -> MemoryReadResult:
        path = self.root(root)
        return self.backend(path).read(path)

    def write(self, root: str | os.PathLike[str], content: str) -> MemoryWriteResult:
        path = self.root(root)
        return self.backend(path).write(path, content)

    def exists(self, root: str | os.PathLike[str]) -> bool:
        path = self.root(root)
        backend: Any = self.backend(path)
        fn = getattr(backend, "exists", None)
        if fn is None:
            return bool(backend.read(path).exists)
        return bool(fn(path))

    def get(
        self,
        root: str | os.PathLike[str],
        path: str = MEMORY_LONG_TERM_FILENAME,
        start_line: int | None = None,
        line_count: int | None = None,
    ) -> MemoryGetResult:
        rpath = self.root(root)
        backend: Any = self.backend(rpath)
        fn = getattr(backend, "get", None)
        if fn is None:
            raise MemoryBackendError("UNSUPPORTED", backend.type, "backend has no get()")
        result: MemoryGetResult = fn(rpath, MemoryGetOptions(path, start_line, line_count))
        return result

    def search(
        self, root: str | os.PathLike[str], query: str, limit: int | None = None
    ) -> list[MemorySearchResult]:
        if not isinstance(query, str):
            raise invalid("search query must be a string")
        path = self.root(root)
        backend: Any = self.backend(path)
        fn = getattr(backend, "search", None)
        if fn is None:
            return []
        results: list[MemorySearchResult] = fn(path, MemorySearchOptions(query, limit or 10))
        return results

    # -- layered files -------------------------------------------------------------------------

    def list_files(self, root: str | os.PathLike[str]) -> list[LayeredFileInfo]:
        return list_memory_files(self.root(root), self.layout)

    def read_file(self, root: str | os.PathLike[str], path: str) -> str:
        rpath = self.root(root)
        name = layered_name(path, self.layout)
        content = read_memory_file(rpath, name, layout=self.layout)
        if content is None:
            raise MemoryBackendError(
                "NOT_FOUND",
                "file",
                "memory file does not exist",
                {"path": self.layout.relpath(name)},
            )
        return content

    def write_file(
        self, root: str | os.PathLike[str], path: str, content: str
    ) -> MemoryWriteResult:
        rpath = self.root(root)
        name = layered_name(path, self.layout)
        backend = self.backend(rpath)
        if not backend.capabilities.writable:
            raise MemoryBackendError("READ_ONLY", backend.type, "the memory backend rejects writes")
        if name == MEMORY_LONG_TERM_FILENAME:
            return backend.write(rpath, content)
        written = write_memory_file(rpath, name, content, backend.type, self.layout)
        if backend is self.lancedb:
            self.lancedb.schedule_refresh(rpath)
        return MemoryWriteResult(True, self.layout.relpath(name), written, backend.type)

    # -- recall ----------------------------------------------------------------------------------

    def recall_store(self, root: str | os.PathLike[str]) -> RecallStore:
        path = self.root(root)
        with self._lock:
            store = self._recall.get(path)
            if store is None:
                store = RecallStore(index_dir(self.home, path), project_key(path))
                self._recall[path] = store
            return store

    def append_recall(
        self,
        root: str | os.PathLike[str],
        kind: str,
        content: str,
        *,
        tags: Sequence[str] | None = None,
        source: Mapping[str, Any] | None = None,
        kg_node_ids: Sequence[str] | None = None,
    ) -> RecallAppendResult:
        return self.recall_store(root).append(
            kind, content, tags=tags, source=source, kg_node_ids=kg_node_ids
        )

    def remove_recall(self, root: str | os.PathLike[str], kind: str, match: str) -> RecallRecord:
        """Delete the ``kind`` record whose id, or exact normalised text, is ``match``."""
        return self.recall_store(root).remove(kind, match)

    def replace_recall(
        self,
        root: str | os.PathLike[str],
        kind: str,
        match: str,
        content: str,
        *,
        tags: Sequence[str] | None = None,
        source: Mapping[str, Any] | None = None,
        kg_node_ids: Sequence[str] | None = None,
    ) -> RecallReplaceResult:
        """New content for the matched record; never leaves an exact-normalised duplicate."""
        return self.recall_store(root).replace(
            kind, match, content, tags=tags, source=source, kg_node_ids=kg_node_ids
        )

    def default_vector_provider(self) -> EmbeddingRecallVectorProvider:
        """The shipped provider on the default embedder (opt-in per call)."""
        with self._lock:
            if self._vector_provider is None:
                self._vector_provider = EmbeddingRecallVectorProvider(self._embedder)
            return self._vector_provider

    def search_recall(
        self,
        root: str | os.PathLike[str],
        query: str = "",
        *,
        kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        limit: Any = None,
        vector_provider: RecallVectorSearchProvider | None = None,
    ) -> RecallSearchResult:
        return self.recall_store(root).search(
            query, kinds=kinds, tags=tags, limit=limit, vector_provider=vector_provider
        )

    # -- prompts -------------------------------------------------------------------------------

    def instruction_context(self, root: str | os.PathLike[str]) -> instr.MemoryInstructionContext:
        return instr.resolve_memory_instruction_context(self.settings(root), self.layout)

    def build_instructions(self, root: str | os.PathLike[str], role: str) -> str:
        """Memory instructions for ``planning``, ``execution`` or ``review`` prompts."""
        ctx = self.instruction_context(root)
        builders = {
            "planning": instr.build_planning_memory_instructions,
            "execution": instr.build_execution_memory_instructions,
            "review": instr.build_reviewer_memory_instructions,
        }
        if role not in builders:
            raise invalid("role must be planning, execution or review", role=str(role))
        return builders[role](ctx)

    def recalled_context(
        self, root: str | os.PathLike[str], prompt: str, query: str, limit: int | None = None
    ) -> str:
        """``prompt`` + the ≤ 800-byte ``### Recalled Context`` section for ``query``."""
        hits = self.search_recall(root, query, limit=limit).hits
        return append_recalled_context(prompt, [h.record for h in hits])
