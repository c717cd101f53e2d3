"""The approximate index above the exact-scan threshold: usearch HNSW, int8-quantised cosine.

Keys are table slots (never reused until a rebuild). The graph only proposes candidates; the
caller rescores them exactly against the float32 matrix, so quantisation does not reach the scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from usearch.index import Index


class Ann:
    def __init__(self, dim: int, cfg: Mapping[str, Any]) -> None:
        self.index = Index(
            ndim=dim,
            metric="cos",
            dtype=str(cfg.get("hot_ann_dtype", "i8")),
            connectivity=int(cfg.get("hot_ann_connectivity", 16)),
            expansion_add=int(cfg.get("hot_ann_expansion_add", 64)),
            expansion_search=int(cfg.get("hot_ann_expansion_search", 96)),
        )
        self.threads = int(cfg.get("hot_ann_threads", 2))

    def __len__(self) -> int:
        return len(self.index)

    def add(self, slots: np.ndarray, vectors: np.ndarray) -> None:
        if len(slots):
            self.index.add(slots.astype(np.uint64), vectors, threads=self.threads)

    def remove(self, slot: int) -> None:
        if slot in self.index:
            self.index.remove(slot)

    def search(self, qvec: np.ndarray, count: int) -> np.ndarray:
        """Candidate slots, nearest first."""
        found = self.index.search(qvec, count)
        return np.asarray(found.keys, dtype=np.int64)
