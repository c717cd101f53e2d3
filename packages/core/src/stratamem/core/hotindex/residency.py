"""Which namespaces the hot index holds in memory under its budget (``storage.hot_index_max_mb``).

A namespace sees only shared rows (legacy owner, ``public``/``local``/``hub``) and the rows it owns
(``ownership.is_shared``), so the mirror is partitioned by owner: the shared rows always, plus the
private rows of the held owners. A query whose namespace is held is served from memory with exactly
the rows it may see; any other query takes the LanceDB path (the same results) while the store
reloads that namespace, dropping the owners used least recently until the estimate fits the budget.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from stratamem.core.storage.ownership import (
    Scope,
    is_shared,
    owner_key,
    owners_where,
    row_kind,
    row_profile,
    shared_where,
)

Owner = tuple[str, str]

#: bytes per row assumed while memory holds none to measure (a trace: ~2.3 KB of vectors, rows
#: and postings at 10k-100k (3.0-3.3 KB with float32 vectors, soak-session4.md), + ~0.85-1.0 KB
#: of HNSW graph above its threshold; hot-int8.md)
DEFAULT_ROW_BYTES = 4000
#: rows written between two budget checks (an estimate costs a sample of rows and the postings)
CHECK_EVERY_ROWS = 16


def owner_of(row: Mapping[str, Any]) -> Owner | None:
    """The partition a row belongs to: its owner, or None for a shared row (always held)."""
    if is_shared(row):
        return None
    return row_kind(row), row_profile(row)


class Residency:
    """The held owners (``None``: every row in memory) and the order owners were last used in."""

    def __init__(self, max_mb: int) -> None:
        self.max_bytes = max(0, max_mb) * 1_000_000
        self.held: frozenset[Owner] | None = None
        self._lru: OrderedDict[Owner, None] = OrderedDict()

    @property
    def bounded(self) -> bool:
        return self.max_bytes > 0

    def holds(self, row: Mapping[str, Any]) -> bool:
        if self.held is None:
            return True
        owner = owner_of(row)
        return owner is None or owner in self.held

    def serves(self, scope: Scope) -> bool:
        """Whether memory holds every row ``scope`` may read (marks its owner as just used)."""
        if scope.namespace is not None:
            key = owner_key(scope.namespace)
            self._lru[key] = None
            self._lru.move_to_end(key)
            if len(self._lru) > 4096:  # owners never seen again: forget the oldest
                self._lru.popitem(last=False)
        if self.held is None:
            return True
        if scope.namespace is None:
            return False
        return owner_key(scope.namespace) in self.held

    def wanted(self) -> list[Owner]:
        """Owners by last use, most recent first (then held owners not used since the load)."""
        seen = list(reversed(self._lru))
        return seen + sorted((self.held or frozenset()) - set(seen))

    def choose(self, sizes: Mapping[Owner | None, float]) -> frozenset[Owner]:
        """The owners to hold: most recently used first, each while it still fits beside the
        shared rows (an owner too large alone for the budget is never held: LanceDB serves it)."""
        left = self.max_bytes - sizes.get(None, 0.0)
        held = []
        for owner in self.wanted():
            size = sizes.get(owner, 0.0)
            if size <= left:
                held.append(owner)
                left -= size
        return frozenset(held)

    @staticmethod
    def where(held: frozenset[Owner] | None) -> str | None:
        """The LanceDB filter of the rows memory holds for ``held`` (None: every row)."""
        if held is None:
            return None
        return f"({shared_where()} OR {owners_where(held)})"
