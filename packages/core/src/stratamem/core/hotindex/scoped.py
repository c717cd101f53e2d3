"""A hot table seen through an ownership :class:`Scope`: the only hot table the query path gets.

The hot index mirrors every namespace's rows, and retrieval reads it by slot masks, so the raw
``HotTable`` would let a mask that forgot the scope read another namespace's rows. A
``ScopedHotTable`` is a *view* of one ``HotTable`` — it shares the table's state (the same
``__dict__``: writes through the store show at once, nothing is copied) — that

* narrows every ``scope_mask`` to its own scope (a mask can narrow a read, never widen it),
* keeps its derived-mask cache (``masks()``) apart from other scopes' views, and
* refuses a slot outside its scope wherever a row leaves the index (``full_row``, ``rows[slot]``)
  with ``permission_denied`` — a bug in a mask fails closed instead of leaking.

Whole-column reads (``rows.column_chunks(name)``) are not filtered by scope: the substring
channel applies its mask to the texts they yield. Raw tables are for named maintenance jobs
(``HotIndex.maintenance_table``), like ``LanceStore.maintenance_table``.
"""

from __future__ import annotations

from typing import Any, SupportsIndex

import numpy as np

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.hotindex.rowfile import Row, RowFile
from stratamem.core.hotindex.table import HotTable
from stratamem.core.storage.ownership import Scope

#: distinct scopes whose derived masks one table version keeps (each a few bytes per slot)
MAX_SCOPES_CACHED = 64


class _ScopedRows(RowFile):
    """The table's rows (shared state, as the view shares the table's), refusing foreign slots."""

    __slots__ = ("_view",)  # its own, not in the shared ``__dict__``

    def __init__(self, rows: RowFile, view: ScopedHotTable) -> None:  # a view: no RowFile init
        self.__dict__ = rows.__dict__
        self._view = view

    def __getitem__(self, slot: SupportsIndex) -> Row | None:
        self._view.check(int(slot))
        return super().__getitem__(slot)


class ScopedHotTable(HotTable):
    #: the view's own state lives in slots, never in the ``__dict__`` it shares with the table
    __slots__ = ("_codes", "_nkeys", "_rows_view", "_table", "scope")

    def __init__(self, table: HotTable, scope: Scope) -> None:  # a view: no HotTable init
        self.__dict__ = table.__dict__
        self._table = table
        self.scope = scope
        self._nkeys = -1
        self._codes: frozenset[int] | None = frozenset()
        self._rows_view: _ScopedRows | None = None

    @property
    def rows(self) -> RowFile:
        raw = self.__dict__["rows"]
        view = self._rows_view
        if view is None or view.__dict__ is not raw.__dict__:
            view = self._rows_view = _ScopedRows(raw, self)
        return view

    @rows.setter
    def rows(self, value: RowFile) -> None:
        raise AttributeError("a scoped view does not write (the store writes through HotIndex)")

    def _allowed(self) -> frozenset[int] | None:
        """Owner codes this scope may read; None when it may read every owner so far."""
        keys = len(self._owner_keys)
        if self._nkeys != keys:
            codes = self.scope_codes(self.scope)
            self._codes = None if len(codes) == keys else frozenset(int(c) for c in codes)
            self._nkeys = keys
        return self._codes

    def check(self, slot: int) -> None:
        allowed = self._codes if self._nkeys == len(self._owner_keys) else self._allowed()
        if allowed is not None and self.owner.item(slot) not in allowed:
            self._refuse(slot)

    def _refuse(self, slot: int) -> None:
        raise StratamemError(
            ErrorCode.PERMISSION_DENIED,
            f"hot index slot {slot} of {self.name!r} is outside the reader's scope",
            {"table": self.name},
        )

    def scope_mask(self, scope: Scope) -> np.ndarray:
        mine = HotTable.scope_mask(self, self.scope)
        if scope == self.scope:
            return mine
        out: np.ndarray = mine & HotTable.scope_mask(self, scope)
        return out

    def masks(self) -> dict[Any, np.ndarray]:
        shared: dict[Any, Any] = HotTable.masks(self)
        key = ("scope", self.scope)
        mine: dict[Any, np.ndarray] | None = shared.get(key)
        if mine is None:
            if len(shared) >= MAX_SCOPES_CACHED:
                shared.clear()
            mine = shared[key] = {}
        return mine

    def full_row(self, slot: int) -> Row:
        # ``check`` inlined: this runs once per candidate row of every query
        allowed = self._codes if self._nkeys == len(self._owner_keys) else self._allowed()
        if allowed is not None and self.owner.item(slot) not in allowed:
            self._refuse(slot)
        return _full_row(self._table, slot)  # the raw rows: read once, already checked


_full_row = HotTable.full_row
