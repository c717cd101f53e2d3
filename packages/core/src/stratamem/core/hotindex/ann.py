"""The approximate index above the exact-scan threshold: usearch HNSW, int8-quantised cosine.

Keys are table slots (never reused until a rebuild). The graph only proposes candidates; the
caller rescores them exactly against the float32 matrix, so quantisation does not reach the scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from usearch.index import Index

from stratamem.core.config.settings import Section


class Ann:
    def __init__(self, dim: int, cfg: Mapping[str, Any]) -> None:
        cfg = Section("storage", cfg)
        self.index = Index(
            ndim=dim,
            metric="cos",
            dtype=cfg.get_str("hot_ann_dtype"),
            connectivity=cfg.get_int("hot_ann_connectivity"),
            expansion_add=cfg.get_int("hot_ann_expansion_add"),
            expansion_search=cfg.get_int("hot_ann_expansion_search"),
        )
        self.threads = cfg.get_int("hot_ann_threads")

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
