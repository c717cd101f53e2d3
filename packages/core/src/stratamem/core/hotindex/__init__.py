"""In-memory mirror of the LanceDB tables that serves recall (vectors, BM25, filters) without a
round trip per query; LanceDB stays the store of record and writes through to it."""

from stratamem.core.hotindex.index import HotIndex
from stratamem.core.hotindex.scoped import ScopedHotTable
from stratamem.core.hotindex.table import HotTable

__all__ = ["HotIndex", "HotTable", "ScopedHotTable"]
