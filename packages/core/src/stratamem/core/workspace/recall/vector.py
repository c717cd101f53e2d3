"""A recall vector provider on the default embedder: ranks the candidates it is handed by cosine.

It never fetches, writes or filters; candidate vectors are cached in memory by content hash.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from stratamem.core.workspace.embedder import Embedder, LazyEmbedder
from stratamem.core.workspace.recall.models import RecallRecord, RecallVectorHit


class EmbeddingRecallVectorProvider:
    """``search(query, candidates, limit)`` → cosine-ranked hits over exactly those candidates."""

    def __init__(
        self, embedder: Embedder | LazyEmbedder | None = None, cache_size: int = 4096
    ) -> None:
        self._embedder = (
            embedder if isinstance(embedder, LazyEmbedder) else LazyEmbedder(embedder=embedder)
        )
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def _vectors(self, records: Sequence[RecallRecord]) -> np.ndarray:
        embedder = self._embedder.get()
        with self._lock:
            missing = [r for r in records if r.content_hash not in self._cache]
        if missing:
            texts = list(dict.fromkeys(r.content for r in missing))
            vecs = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
            by_text = dict(zip(texts, vecs, strict=True))
            with self._lock:
                for r in missing:
                    self._cache[r.content_hash] = by_text[r.content]
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        with self._lock:
            return np.stack([self._cache[r.content_hash] for r in records])

    def search(
        self, query: str, candidates: Sequence[RecallRecord], limit: int
    ) -> list[RecallVectorHit]:
        if not candidates:
            return []
        q = np.asarray(self._embedder.get().embed_query(query), dtype=np.float32).reshape(-1)
        mat = self._vectors(candidates)
        norms = np.linalg.norm(mat, axis=1) * (np.linalg.norm(q) or 1.0)
        scores = (mat @ q) / np.where(norms == 0, 1.0, norms)
        order = np.argsort(-scores, kind="stable")[: max(1, limit)]
        return [RecallVectorHit(candidates[i].id, float(scores[i])) for i in order]
