"""An in-memory LRU in front of any embedder, keyed on sha256(provider|model|role|text).

Only the misses are embedded, in one batch, so re-embedding known text costs nothing.
"""

from __future__ import annotations

import collections
import hashlib
import threading
from collections.abc import Sequence

import numpy as np

from stratamem.core.embedding.base import (
    Embedder,
    Vectors,
    check_text,
    check_texts,
    is_asymmetric,
)


def cache_key(provider: str, model: str, role: str, text: str) -> str:
    return hashlib.sha256(f"{provider}|{model}|{role}|{text}".encode()).hexdigest()


class CachedEmbedder:
    """Same protocol as the wrapped embedder; ``hits``/``misses`` count texts, not calls."""

    def __init__(self, inner: Embedder, max_items: int = 2048) -> None:
        self.inner = inner
        self.name = inner.name
        self.model = inner.model
        #: a query and a stored text embed differently (``base.is_asymmetric``)
        self.asymmetric = is_asymmetric(inner)
        self.max_items = max(1, int(max_items))
        self._items: collections.OrderedDict[str, Vectors] = collections.OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def __len__(self) -> int:
        return len(self._items)

    def memory_bytes(self) -> int:
        """What the cached vectors and their keys hold (bounded by ``max_items``)."""
        with self._lock:
            rows = list(self._items.values())
        per_key = 64 + 49 + 100  # a sha256 hex key, its str header, the dict/list node
        return sum(r.nbytes for r in rows) + len(rows) * per_key

    def _get(self, key: str) -> Vectors | None:
        with self._lock:
            row = self._items.get(key)
            if row is not None:
                self._items.move_to_end(key)
                self.hits += 1
            else:
                self.misses += 1
            return row

    def _put(self, key: str, row: Vectors) -> None:
        frozen = np.array(row, dtype=np.float32, copy=True)
        frozen.setflags(write=False)
        with self._lock:
            self._items[key] = frozen
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)

    def _embed(self, texts: list[str], role: str) -> Vectors:
        keys = [cache_key(self.name, self.model, role, t) for t in texts]
        rows: list[Vectors | None] = [self._get(k) for k in keys]
        missing: dict[str, list[int]] = {}
        for i, row in enumerate(rows):
            if row is None:
                missing.setdefault(texts[i], []).append(i)
        if missing:
            uniq = list(missing)
            fresh = (
                self.inner.embed_documents(uniq)
                if role == "document"
                else np.stack([self.inner.embed_query(t) for t in uniq])
            )
            for text, row in zip(uniq, fresh, strict=True):
                self._put(cache_key(self.name, self.model, role, text), row)
                for i in missing[text]:
                    rows[i] = row
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([r for r in rows if r is not None]).astype(np.float32, copy=False)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._embed(check_texts(texts), "document")

    def cached_query(self, text: str) -> Vectors | None:
        """The query's vector when it is cached, else None (no embedding, no miss counted): a
        caller on the event loop can skip the executor hop for a repeated query."""
        with self._lock:
            row = self._items.get(cache_key(self.name, self.model, "query", text))
            if row is None:
                return None
            self.hits += 1
            return np.array(row, dtype=np.float32, copy=True)

    def embed_query(self, text: str) -> Vectors:
        row: Vectors = self._embed([check_text(text)], "query")[0].copy()
        return row
