"""The LanceDB hybrid (vector + native FTS) index of a project's layered files, in the runtime home.

Files stay the source of truth: the index is rebuilt from them, debounced, off the write path.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from stratamem.core.telemetry import get_logger
from stratamem.core.workspace.embedder import LazyEmbedder
from stratamem.core.workspace.layered import Chunk, layered_chunks, layered_fingerprint
from stratamem.core.workspace.layout import STRATAMEM_LAYOUT, WorkspaceLayout
from stratamem.core.workspace.models import (
    MAX_SNIPPET_CHARS,
    MemorySearchResult,
    clamp_search_limit,
)
from stratamem.core.workspace.paths import MEMORY_WORKSPACE_PATH, is_layered_name

TABLE = "chunks"


def _log() -> Any:
    return get_logger("workspace.index")  # resolved per call: honours logging configured later


_PK = {b"lance-schema:unenforced-primary-key": b"true"}


def index_dir(home: Path, root: Path, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> Path:
    """``<home>/workspace/<key>/`` where ``key`` is ``sha256(root)[:16]`` for Stratamem's layout
    (the recall store lives there too) and a hash of (layout, root) for a host's layout."""
    return home / "workspace" / layout.key(root)


def chunk_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False, metadata=_PK),
            pa.field("path", pa.string(), nullable=False),
            pa.field("heading", pa.string()),
            pa.field("start_line", pa.int64()),
            pa.field("end_line", pa.int64()),
            pa.field("text", pa.string()),
            pa.field("text_hash", pa.string()),
            pa.field("vector", pa.list_(pa.float32(), dim)),
        ],
        metadata={b"stratamem:embedding_dim": str(dim).encode()},
    )


def canonicalize_index_path(path: str, layout: WorkspaceLayout = STRATAMEM_LAYOUT) -> str | None:
    """Remap a stale indexed path (legacy location, absolute path, bare name) to the canonical one.

    Returns ``None`` when the path does not name a layered file at all.
    """
    name = re.split(r"[\\/]", path.strip())[-1] if path else ""
    if not is_layered_name(name):
        return None
    return layout.relpath(name)


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class WorkspaceIndex:
    """One project's index: ``refresh`` rebuilds it from the files, ``search`` queries it hybrid."""

    def __init__(
        self,
        home: Path,
        root: Path,
        embedder: LazyEmbedder,
        layout: WorkspaceLayout = STRATAMEM_LAYOUT,
    ) -> None:
        self.home = home
        self.root = root
        self.layout = layout
        self.dir = index_dir(home, root, layout)
        self._embedder = embedder
        self._lock = threading.Lock()
        self.refresh_count = 0

    def _connect(self) -> Any:
        import lancedb

        self.dir.mkdir(parents=True, exist_ok=True)
        return lancedb.connect(str(self.dir / "index"))

    def _open(self, db: Any) -> Any | None:
        if TABLE not in db.list_tables().tables:
            return None
        return db.open_table(TABLE)

    def refresh(self) -> int:
        """Rebuild the index from the layered files; unchanged chunks keep their vectors. Returns rows."""
        with self._lock, _file_lock(self.dir / "index.lock"):
            fingerprint = layered_fingerprint(self.root, self.layout)  # before reading: safe side
            chunks = layered_chunks(self.root, self.layout)
            embedder = self._embedder.get()
            dim = int(embedder.dimension)
            db = self._connect()
            cached: dict[str, list[float]] = {}
            table = self._open(db)
            if table is not None:
                try:
                    old = table.to_arrow().select(["text_hash", "vector"]).to_pylist()
                    cached = {
                        r["text_hash"]: r["vector"]
                        for r in old
                        if r["vector"] is not None and len(r["vector"]) == dim
                    }
                except Exception:
                    cached = {}
            missing = [c for c in chunks if _text_hash(c.text) not in cached]
            if missing:
                vectors = np.asarray(
                    embedder.embed_documents([_embed_text(c) for c in missing]), dtype=np.float32
                )
                for chunk, vec in zip(missing, vectors, strict=True):
                    cached[_text_hash(chunk.text)] = vec.tolist()
            rows = [
                {
                    "id": f"{c.path}:{c.start_line}:{i}",
                    "path": c.path,
                    "heading": c.heading,
                    "start_line": c.start_line,
                    "end_line": c.end_line,
                    "text": c.text,
                    "text_hash": _text_hash(c.text),
                    "vector": cached[_text_hash(c.text)],
                }
                for i, c in enumerate(chunks)
            ]
            schema = chunk_schema(dim)
            data = pa.Table.from_pylist(rows, schema=schema)
            table = db.create_table(TABLE, data=data, schema=schema, mode="overwrite")
            if rows:
                from lancedb.index import FTS

                table.create_index("text", config=FTS(), replace=True)
            (self.dir / "root.txt").write_text(str(self.root), encoding="utf-8")
            (self.dir / "fingerprint.txt").write_text(fingerprint, encoding="utf-8")
            self.refresh_count += 1
            _log().debug("workspace index refreshed", root=str(self.root), rows=len(rows))
            return len(rows)

    def exists(self) -> bool:
        return (self.dir / "index" / f"{TABLE}.lance").exists()

    def is_stale(self) -> bool:
        """True when the files changed since the last refresh (a host may edit them directly)."""
        try:
            built = (self.dir / "fingerprint.txt").read_text(encoding="utf-8")
        except OSError:
            return True
        return built != layered_fingerprint(self.root, self.layout)

    def search(self, query: str, limit: int | None) -> list[MemorySearchResult]:
        """Hybrid search (vector + FTS, RRF); raises when the index is missing or unusable."""
        k = clamp_search_limit(limit)
        db = self._connect()
        table = self._open(db)
        if table is None:
            raise LookupError("workspace index not built yet")
        from lancedb.rerankers import RRFReranker

        vec = np.asarray(self._embedder.get().embed_query(query), dtype=np.float32)
        rows = (
            table.search(query_type="hybrid")
            .vector(vec.tolist())
            .text(query)
            .limit(k * 2)
            .rerank(RRFReranker())
            .to_list()
        )
        results: list[MemorySearchResult] = []
        seen: set[tuple[str, int]] = set()
        for row in rows:
            path = canonicalize_index_path(str(row.get("path") or ""), self.layout)
            if path is None:
                continue
            key = (path, int(row.get("start_line") or 0))
            if key in seen:
                continue
            seen.add(key)
            results.append(
                MemorySearchResult(
                    path=path,
                    start_line=int(row.get("start_line") or 0),
                    end_line=int(row.get("end_line") or 0),
                    snippet=str(row.get("text") or "")[:MAX_SNIPPET_CHARS],
                    score=float(row.get("_relevance_score") or 0.0),
                    heading=str(row.get("heading") or ""),
                    source="index",
                )
            )
            if len(results) >= k:
                break
        return results


def _embed_text(chunk: Chunk) -> str:
    return f"{chunk.heading}\n{chunk.text}" if chunk.heading else chunk.text


class DebouncedRefresher:
    """Coalesces refresh requests per project: the last request wins after ``delay`` seconds.

    Runs on a daemon timer thread, never on the caller's (write) path.
    """

    def __init__(self, delay: float = 0.5) -> None:
        self.delay = delay
        self._lock = threading.Lock()
        self._timers: dict[str, threading.Timer] = {}
        self._running: dict[str, int] = {}
        self._idle = threading.Condition(self._lock)
        self.errors: dict[str, str] = {}

    def schedule(self, index: WorkspaceIndex) -> None:
        key = str(index.dir)
        with self._lock:
            old = self._timers.pop(key, None)
            if old is not None:
                old.cancel()
            timer = threading.Timer(self.delay, self._run, args=(key, index))
            timer.daemon = True
            self._timers[key] = timer
            timer.start()

    def _run(self, key: str, index: WorkspaceIndex) -> None:
        with self._lock:
            self._timers.pop(key, None)
            self._running[key] = self._running.get(key, 0) + 1
        try:
            index.refresh()
            self.errors.pop(key, None)
        except Exception as exc:
            self.errors[key] = f"{type(exc).__name__}: {exc}"
            _log().warning("workspace index refresh failed", root=str(index.root), error=str(exc))
        finally:
            with self._lock:
                self._running[key] -= 1
                self._idle.notify_all()

    def pending(self) -> bool:
        with self._lock:
            return bool(self._timers) or any(self._running.values())

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Block until no refresh is pending or running (for shutdown and tests)."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                timers = list(self._timers.values())
                if not timers and not any(self._running.values()):
                    return True
            for t in timers:
                t.join(max(0.0, deadline - time.monotonic()))
            with self._lock:
                if any(self._running.values()):
                    self._idle.wait(max(0.0, deadline - time.monotonic()))
            if time.monotonic() >= deadline:
                return not self.pending()

    def cancel_all(self) -> None:
        with self._lock:
            for t in self._timers.values():
                t.cancel()
            self._timers.clear()


def default_home() -> Path:
    """``$STRATAMEM_HOME`` else ``~/.stratamem`` (the core's home module refines this per host)."""
    try:
        from stratamem.core import home as home_mod

        resolver: Any = getattr(home_mod, "resolve_home", None)
        if callable(resolver):
            return Path(resolver())
    except Exception:
        pass
    env = os.environ.get("STRATAMEM_HOME")
    return Path(env).expanduser() if env else Path.home() / ".stratamem"


__all__ = [
    "MEMORY_WORKSPACE_PATH",
    "DebouncedRefresher",
    "WorkspaceIndex",
    "canonicalize_index_path",
    "default_home",
    "index_dir",
]
