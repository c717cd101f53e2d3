"""A LanceDB table seen through an ownership :class:`Scope`: the only table the query path gets.

Retrieval builds its own LanceDB queries (vector, BM25, pattern, substring channels), so handing it
the raw ``AsyncTable`` would let any ``where`` string decide what it reads. A ``ScopedTable`` builds
the same queries, but every one of them runs with the scope's filter AND-ed to whatever ``where``
the caller set (or alone when it set none): a filter string can narrow a read, never widen it.
LanceDB's planner folds a repeated conjunct, so callers that also filter by the scope pay nothing.
Raw tables are for named maintenance jobs only (``LanceStore.maintenance_table``).
"""

from __future__ import annotations

from typing import Any

from stratamem.core.storage.ownership import Scope

#: query-builder methods that run the query (the scope's filter is applied just before)
_RUNS = frozenset(
    {"to_list", "to_arrow", "to_batches", "to_pandas", "explain_plan", "analyze_plan"}
)


class ScopedQuery:
    """Wraps a LanceDB query builder; ``where`` is AND-ed with the scope when the query runs."""

    __slots__ = ("_inner", "_scope", "_where")

    def __init__(self, inner: Any, scope: Scope) -> None:
        self._inner = inner
        self._scope = scope
        self._where: str | None = None

    def where(self, predicate: str) -> ScopedQuery:
        self._where = predicate
        return self

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr
        if name in _RUNS:

            def run(*args: Any, **kwargs: Any) -> Any:
                inner = self._inner.where(self._scope.where_and(self._where))
                return getattr(inner, name)(*args, **kwargs)

            return run

        def chain(*args: Any, **kwargs: Any) -> Any:
            out = attr(*args, **kwargs)
            if out is None or not hasattr(out, "to_arrow"):
                return out  # not a builder (e.g. a plain value)
            self._inner = out  # builders return themselves or a more specific builder
            return self

        return chain


class ScopedTable:
    """The read side of one LanceDB table restricted to ``scope``."""

    __slots__ = ("_table", "name", "scope")

    def __init__(self, name: str, table: Any, scope: Scope) -> None:
        self.name = name
        self.scope = scope
        self._table = table

    def query(self) -> ScopedQuery:
        return ScopedQuery(self._table.query(), self.scope)

    async def count_rows(self, where: str | None = None) -> int:
        flt = self.scope.where_and(where)
        return int(await self._table.count_rows(None if flt == "true" else flt))

    async def version(self) -> int:
        """The table's current version (LanceDB commits one per write, delete or optimize): no
        rows, so no scope; what a read cached for it is keyed by (retrieval/dense_query.py)."""
        return int(await self._table.version())

    async def list_indices(self) -> Any:
        """Index metadata (names and columns, no rows)."""
        return await self._table.list_indices()
