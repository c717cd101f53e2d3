"""A table's ids: id -> slot as sorted 64-bit hashes, slot -> id read from the row side file.

A ``dict`` of id strings to slots and a list of the ids cost ~120 B a trace (the string, an int
object per slot, the hash table's entries), the ids being read only when a row is written,
deleted or ordered within its session. Here an id costs 12 bytes resident: its ``hash`` (per
process, like the index) and its slot, in two arrays sorted by hash; the ids added since the last
merge wait in a small ``dict``. A hash match is confirmed against the row's own id
(``RowFile``), so two ids that share a hash are still told apart.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from stratamem.core.hotindex.rowfile import RowFile

#: ids added one by one are merged into the sorted arrays in batches of this many
MERGE_EVERY = 4096


class SlotIds:
    """slot -> id (None for a deleted slot), read from the rows."""

    def __init__(self, rows: RowFile) -> None:
        self._rows = rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, slot: int) -> str | None:
        row = self._rows[slot]
        return None if row is None else str(row["id"])

    def __iter__(self) -> Iterator[str | None]:
        for i in range(len(self._rows)):
            yield self[i]


class IdIndex:
    """id -> slot of the live rows."""

    def __init__(self, rows: RowFile) -> None:
        self._ids = SlotIds(rows)
        self._keys = np.zeros(0, dtype=np.int64)
        self._slots = np.zeros(0, dtype=np.int32)  # -1: the id was deleted
        self._recent: dict[str, int] = {}
        self._live = 0

    def __len__(self) -> int:
        return self._live

    def __contains__(self, rid: object) -> bool:
        return isinstance(rid, str) and self.get(rid) is not None

    def __getitem__(self, rid: str) -> int:
        got = self.get(rid)
        if got is None:
            raise KeyError(rid)
        return got

    def _find(self, rid: str) -> int:
        """Position of ``rid`` in the sorted arrays (-1: not there)."""
        h = hash(rid)
        keys = self._keys
        at = int(np.searchsorted(keys, h))
        while at < len(keys) and int(keys[at]) == h:
            slot = int(self._slots[at])
            if slot >= 0 and self._ids[slot] == rid:
                return at
            at += 1
        return -1

    def get(self, rid: str, default: int | None = None) -> int | None:
        got = self._recent.get(rid)
        if got is not None:
            return got
        at = self._find(rid)
        return int(self._slots[at]) if at >= 0 else default

    def __setitem__(self, rid: str, slot: int) -> None:
        """Map a new id (not held) to ``slot``."""
        self._recent[rid] = slot
        self._live += 1
        if len(self._recent) >= MERGE_EVERY:
            self._merge(list(self._recent), list(self._recent.values()))
            self._recent = {}

    def pop(self, rid: str, default: int | None = None) -> int | None:
        got = self._recent.pop(rid, None)
        if got is None:
            at = self._find(rid)
            if at < 0:
                return default
            got = int(self._slots[at])
            self._slots[at] = -1
        self._live -= 1
        return got

    def update(self, ids: Sequence[str], slots: Sequence[int]) -> None:
        """Map new ids (none held, none twice) to their slots: a bulk load's batch."""
        self._merge(ids, slots)
        self._live += len(ids)

    def any_held(self, ids: Sequence[str]) -> bool:
        """Whether any of ``ids`` is held (one vectorised hash probe, matches confirmed)."""
        if any(i in self._recent for i in ids):
            return True
        hashes = np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))
        hit = np.isin(hashes, self._keys)
        return any(self._find(ids[i]) >= 0 for i in np.flatnonzero(hit).tolist())

    def _merge(self, ids: Sequence[str], slots: Sequence[int]) -> None:
        live = self._slots >= 0
        keys = np.concatenate(
            (self._keys[live], np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids)))
        )
        vals = np.concatenate((self._slots[live], np.asarray(slots, dtype=np.int32)))
        order = np.argsort(keys, kind="stable")
        self._keys, self._slots = keys[order], vals[order]

    def nbytes(self) -> int:
        """Bytes held: the arrays, and the ids waiting to be merged."""
        import sys

        n = self._keys.nbytes + self._slots.nbytes + sys.getsizeof(self._recent)
        return n + sum(sys.getsizeof(k) + 32 for k in self._recent)
