"""A table's rows by slot, held compactly: one tuple of values per row against a shared tuple of
column names, a ``dict`` made only when a row is read.

A row dict of a trace (25 keys) costs ~1.2 KB of hash table before its values; the tuple costs
8 bytes a value. Readers touch the few candidates of a query, so building their dicts on read is
cheaper than keeping every row's dict resident (the hot index held 221 MB of row dicts at 100k).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, SupportsIndex

Row = dict[str, Any]


class RowStore:
    def __init__(self) -> None:
        self._cols: list[tuple[str, ...] | None] = []
        self._vals: list[tuple[Any, ...] | None] = []
        #: each distinct column tuple once (every row of a batch shares its tuple)
        self._shapes: dict[tuple[str, ...], tuple[str, ...]] = {}

    def _shape(self, cols: tuple[str, ...]) -> tuple[str, ...]:
        return self._shapes.setdefault(cols, cols)

    def __len__(self) -> int:
        return len(self._vals)

    def __getitem__(self, slot: SupportsIndex) -> Row | None:
        """A fresh dict of the row (None for a deleted slot); changing it changes nothing here."""
        vals = self._vals[slot]
        if vals is None:
            return None
        return dict(zip(self._cols[slot] or (), vals, strict=True))

    def __setitem__(self, slot: SupportsIndex, row: Mapping[str, Any] | None) -> None:
        if row is None:
            self._cols[slot] = self._vals[slot] = None
            return
        self._cols[slot] = self._shape(tuple(row))
        self._vals[slot] = tuple(row.values())

    def __iter__(self) -> Iterator[Row | None]:
        for i in range(len(self._vals)):
            yield self[i]

    def append(self, row: Mapping[str, Any] | None) -> None:
        self._cols.append(None)
        self._vals.append(None)
        self[len(self._vals) - 1] = row

    def extend_columns(self, cols: Sequence[str], values: Sequence[tuple[Any, ...]]) -> None:
        """Append rows given as value tuples in the order of ``cols`` (a bulk load)."""
        shape = self._shape(tuple(cols))
        self._cols.extend([shape] * len(values))
        self._vals.extend(values)

    def column(self, name: str) -> list[Any]:
        """Every slot's value of ``name`` (None for deleted slots and rows without it)."""
        where: dict[tuple[str, ...], int] = {
            s: s.index(name) if name in s else -1 for s in self._shapes
        }
        out: list[Any] = []
        for cols, vals in zip(self._cols, self._vals, strict=True):
            if vals is None or cols is None:
                out.append(None)
                continue
            i = where[cols]
            out.append(vals[i] if i >= 0 else None)
        return out

    def values(self) -> Iterator[tuple[Any, ...]]:
        """The live rows' value tuples (for the footprint estimate)."""
        return (v for v in self._vals if v is not None)
