"""A table's ids: id -> slot as sorted 64-bit hashes, slot -> id read from the row side file.

A ``dict`` of id strings to slots and a list of the ids cost ~120 B a trace (the string, an int
object per slot, the hash table's entries), the ids being read only when a row is written,
deleted or ordered within its session. Here an id costs 12 bytes resident: its ``hash`` (per
process, like the index) and its slot, in two arrays sorted by hash; the ids added since the last
merge wait in small arrays kept sorted by hash (an insert moves at most a batch's entries; a
lookup is a bisection), their ids' bytes in one ``bytearray`` so a match among them is confirmed
without reading the row. A hash match is confirmed against the row's own id
(``RowFile``), so two ids that share a hash are still told apart. The batch waiting was a
``dict`` of the ids' strings: up to 4,096 strings alive for thousands of turns, ~20 B a trace
on average and long-lived small objects among the transient ones in CPython's arenas
(soak-session13-lexmem.md).
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left, bisect_right
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
        #: ids added since the last merge: their hashes (sorted), slots (-1: deleted) and where
        #: their UTF-8 bytes are in ``_new_bytes`` (offset << 32 | length)
        self._new_keys: array[int] = array("q")
        self._new_slots: array[int] = array("i")
        self._new_at: array[int] = array("q")
        self._new_bytes = bytearray()
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

    def _find(self, rid: str, h: int) -> int:
        """Position of ``rid`` in the sorted arrays (-1: not there)."""
        keys = self._keys
        at = int(np.searchsorted(keys, h))
        while at < len(keys) and int(keys[at]) == h:
            slot = int(self._slots[at])
            if slot >= 0 and self._ids[slot] == rid:
                return at
            at += 1
        return -1

    def _find_new(self, rid: str, h: int) -> int:
        """Position of ``rid`` among the ids not yet merged (-1: not there)."""
        keys = self._new_keys
        at = bisect_left(keys, h)
        raw: bytes | None = None
        while at < len(keys) and keys[at] == h:
            if self._new_slots[at] >= 0:
                if raw is None:
                    raw = rid.encode("utf-8", "surrogatepass")
                where = self._new_at[at]
                off = where >> 32
                if self._new_bytes[off : off + (where & 0xFFFFFFFF)] == raw:
                    return at
            at += 1
        return -1

    def get(self, rid: str, default: int | None = None) -> int | None:
        h = hash(rid)
        at = self._find_new(rid, h)
        if at >= 0:
            return self._new_slots[at]
        at = self._find(rid, h)
        return int(self._slots[at]) if at >= 0 else default

    def __setitem__(self, rid: str, slot: int) -> None:
        """Map a new id (not held) to ``slot`` (whose row is, or is about to be, ``rid``'s)."""
        h = hash(rid)
        raw = rid.encode("utf-8", "surrogatepass")
        at = bisect_right(self._new_keys, h)
        self._new_keys.insert(at, h)
        self._new_slots.insert(at, slot)
        self._new_at.insert(at, len(self._new_bytes) << 32 | len(raw))
        self._new_bytes += raw
        self._live += 1
        if len(self._new_keys) >= MERGE_EVERY:
            keys = np.frombuffer(self._new_keys, dtype=np.int64).copy()
            slots = np.frombuffer(self._new_slots, dtype=np.int32).copy()
            self._new_keys, self._new_slots = array("q"), array("i")
            self._new_at, self._new_bytes = array("q"), bytearray()
            self._merge_hashes(keys[slots >= 0], slots[slots >= 0])

    def pop(self, rid: str, default: int | None = None) -> int | None:
        h = hash(rid)
        at = self._find_new(rid, h)
        if at >= 0:
            got = self._new_slots[at]
            self._new_slots[at] = -1
        else:
            at = self._find(rid, h)
            if at < 0:
                return default
            got = int(self._slots[at])
            self._slots[at] = -1
        self._live -= 1
        return got

    def update(self, ids: Sequence[str], slots: Sequence[int]) -> None:
        """Map new ids (none held, none twice) to their slots: a bulk load's batch."""
        keys = np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))
        self._merge_hashes(keys, np.asarray(slots, dtype=np.int32))
        self._live += len(ids)

    def any_held(self, ids: Sequence[str]) -> bool:
        """Whether any of ``ids`` is held (one vectorised hash probe, matches confirmed)."""
        hashes = np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))
        new = np.frombuffer(self._new_keys, dtype=np.int64) if self._new_keys else self._keys[:0]
        hit = np.isin(hashes, self._keys) | np.isin(hashes, new)
        del new
        return any(self.get(ids[i]) is not None for i in np.flatnonzero(hit).tolist())

    def _merge_hashes(self, hashes: np.ndarray, slots: np.ndarray) -> None:
        live = self._slots >= 0
        keys = np.concatenate((self._keys[live], hashes))
        vals = np.concatenate((self._slots[live], slots))
        order = np.argsort(keys, kind="stable")
        self._keys, self._slots = keys[order], vals[order]

    def nbytes(self) -> int:
        """Bytes held: the arrays, and the ids waiting to be merged."""
        n = self._keys.nbytes + self._slots.nbytes
        new = (self._new_keys, self._new_slots, self._new_at, self._new_bytes)
        return n + sum(sys.getsizeof(a) for a in new)
