"""The approximate index above the exact-scan threshold: usearch HNSW, int8-quantised cosine.

Keys are table slots (never reused until a rebuild); it is fed the table's int8 rows as they are
(cosine ignores their scale). The graph only proposes candidates; the caller rescores them
exactly with the float32 query against the stored unit vectors (``quantized.py``).
The search breadth grows with the graph (``expansion``): a fixed breadth loses recall as it grows;
a graph built over ``hot_ann_dense_from_rows`` vectors or more gets ``hot_ann_dense_connectivity``.
Batches are inserted with ``hot_ann_threads`` workers: with one, the same rows in the same order
make the same graph in every process; with more, the links depend on the threads' timing, and so
do the candidates it proposes (bench/results/determinism-session12.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from usearch.index import Index

from stratamem.core.config.settings import Section


class Ann:
    def __init__(self, dim: int, cfg: Mapping[str, Any]) -> None:
        cfg = Section("storage", cfg)
        self.dim = dim
        self.dtype = cfg.get_str("hot_ann_dtype")
        self.expansion_add = cfg.get_int("hot_ann_expansion_add")
        self.connectivity = cfg.get_int("hot_ann_connectivity")
        self.dense_connectivity = cfg.get_int("hot_ann_dense_connectivity")
        self.dense_from = cfg.get_int("hot_ann_dense_from_rows")
        self.threads = cfg.get_int("hot_ann_threads")
        self.base_expansion = cfg.get_int("hot_ann_expansion_search")
        self.ref_rows = max(1, cfg.get_int("hot_ann_expansion_ref_rows"))
        self._expansion = self.base_expansion
        self.index = self._graph(self.connectivity)

    def _graph(self, connectivity: int) -> Index:
        return Index(
            ndim=self.dim,
            metric="cos",
            dtype=self.dtype,
            connectivity=connectivity,
            expansion_add=self.expansion_add,
            expansion_search=self._expansion,
        )

    def expansion(self, n: int) -> int:
        """Search breadth for a graph of ``n`` vectors: ``hot_ann_expansion_search`` up to
        ``hot_ann_expansion_ref_rows``, then that much again per doubling past it."""
        if n <= self.ref_rows:
            return self.base_expansion
        return math.ceil(self.base_expansion * (1 + math.log2(n / self.ref_rows)))

    def __len__(self) -> int:
        return len(self.index)

    def build_over(self, rows: int) -> None:
        """Announce a build of ``rows`` vectors (added in chunks) into an empty graph."""
        if not len(self.index) and rows >= self.dense_from:
            # a graph built over this many vectors at once (a large table's load) gets more links:
            # at 1M the base connectivity capped recall@10 below 0.98 whatever the breadth
            self.index = self._graph(self.dense_connectivity)

    def add(self, slots: np.ndarray, vectors: np.ndarray) -> None:
        if not len(slots):
            return
        self.build_over(len(slots))
        self.index.add(slots.astype(np.uint64), vectors, threads=self.threads)

    def remove(self, slot: int) -> None:
        if slot in self.index:
            self.index.remove(slot)

    def search(self, qvec: np.ndarray, count: int) -> np.ndarray:
        """Candidate slots, nearest first."""
        ef = self.expansion(len(self.index))
        if ef != self._expansion:
            # (usearch declares the setter after another property's: mypy reads it as read-only)
            self.index.expansion_search = ef  # type: ignore[misc]
            self._expansion = ef
        found = self.index.search(qvec, count)
        return np.asarray(found.keys, dtype=np.int64)
