"""Tokens with exactly one posting, held without a Python object per token.

Most of a large table's tokens have one posting (a soak trace brings a running number no other
trace has: 9,967 of 10,509 tokens at 10k traces). As a ``dict`` of token strings to packed ints
they cost 138 B a text of traced allocations in ``test_hot_lexical_postings.py`` (the string, its
dict entry, the int; in CPython's small-object arenas, which never shrink back), the largest
per-trace part of the postings besides the postings themselves (soak-session11.md). Here a token
is an entry of three arrays (its ``hash``, per process like the index; its packed posting; where
its UTF-8 bytes start in one ``bytearray``) found through an open-addressing table of entry
numbers: ~45 B a token with its bytes. A hash match is confirmed against the stored bytes, so two
tokens that share a hash are still told apart. A lookup is a probe or two of ``array`` items, as
fast as the ``dict`` it replaces within a fraction of a microsecond.

A removed token's entry is marked gone (its bytes stay) until the table is rebuilt, which drops
gone entries and grows the table: readers take the whole state as one tuple, swapped at once.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator

import numpy as np

#: the table is rebuilt (gone entries dropped, size doubled if needed) past this share of slots
#: used, to this share at most
_MAX_LOAD = 0.5
_TARGET_LOAD = 0.3
_MIN_SLOTS = 64
_GONE = -1  # an entry's posting once its token was taken out
#: the per-process string hash (a name of its own: tests make every token collide)
_hash = hash


class _State:
    """One consistent generation of the store (a rebuild makes a new one)."""

    __slots__ = ("blob", "keys", "mask", "offs", "table", "vals")

    def __init__(self, slots: int) -> None:
        self.table = array("i", bytes(4 * slots))  # entry number + 1 per slot; 0: empty
        self.mask = slots - 1
        self.keys = array("q")  # per entry: the token's hash
        self.vals = array("q")  # per entry: its packed posting, or ``_GONE``
        self.offs = array("Q")  # per entry: where its bytes start (they end at the next's)
        self.blob = bytearray()

    def find(self, tok: str) -> int:
        """``tok``'s entry number (-1: not held)."""
        h = _hash(tok)
        mask = self.mask
        i = h & mask
        e = self.table[i] - 1
        if e < 0:  # (a miss, most often: the table is at most half full)
            return -1
        table, keys, vals = self.table, self.keys, self.vals
        raw: bytes | None = None
        while e >= 0:
            if keys[e] == h and vals[e] != _GONE:
                if raw is None:
                    raw = tok.encode("utf-8", "surrogatepass")
                if self._bytes(e) == raw:
                    return e
            i = (i + 1) & mask
            e = table[i] - 1
        return -1

    def _bytes(self, e: int) -> bytearray:
        offs = self.offs
        end = offs[e + 1] if e + 1 < len(offs) else len(self.blob)
        return self.blob[offs[e] : end]

    def add(self, tok: str, packed: int) -> None:
        h = _hash(tok)
        table, mask = self.table, self.mask
        i = h & mask
        while table[i]:
            i = (i + 1) & mask
        self.keys.append(h)
        self.vals.append(packed)
        self.offs.append(len(self.blob))
        self.blob += tok.encode("utf-8", "surrogatepass")
        table[i] = len(self.keys)  # last: a reader finds the entry whole


class Singles:
    """token -> one packed posting (a non-negative int below 2**63)."""

    def __init__(self) -> None:
        self._state = _State(_MIN_SLOTS)
        self._live = 0

    def __len__(self) -> int:
        return self._live

    def __contains__(self, tok: object) -> bool:
        return isinstance(tok, str) and self._state.find(tok) >= 0

    def has(self, tok: str) -> bool:
        return self._state.find(tok) >= 0

    def get(self, tok: str) -> int | None:
        state = self._state
        e = state.find(tok)
        return state.vals[e] if e >= 0 else None

    def put(self, tok: str, packed: int) -> None:
        """Hold ``tok`` (not held) with its one posting."""
        state = self._state
        if len(state.keys) + 1 > _MAX_LOAD * (state.mask + 1):
            state = self._rebuild()
        state.add(tok, packed)
        self._live += 1

    def pop(self, tok: str) -> int | None:
        """Take ``tok`` out; its posting, or None if it was not held."""
        state = self._state
        e = state.find(tok)
        if e < 0:
            return None
        got = state.vals[e]
        state.vals[e] = _GONE
        self._live -= 1
        return got

    def __iter__(self) -> Iterator[str]:
        """Every token held."""
        state = self._state
        for e in range(len(state.keys)):
            if state.vals[e] != _GONE:
                yield state._bytes(e).decode("utf-8", "surrogatepass")

    def _rebuild(self) -> _State:
        """A new state of the live entries (bytes copied in entry order) in a table sized for
        them, swapped in whole."""
        old = self._state
        n = len(old.keys)
        vals = np.frombuffer(old.vals, dtype=np.int64) if n else np.zeros(0, np.int64)
        live = np.flatnonzero(vals != _GONE)
        slots = _MIN_SLOTS
        while slots * _TARGET_LOAD < len(live) + 1:
            slots *= 2
        new = _State(slots)
        if len(live):
            keys = np.frombuffer(old.keys, dtype=np.int64)[live]
            starts = np.frombuffer(old.offs, dtype=np.uint64).astype(np.int64)
            ends = np.append(starts[1:], len(old.blob))
            if len(live) == n:
                new.blob = bytearray(old.blob)
                offs = starts
            else:
                view = memoryview(old.blob)
                new.blob = bytearray(
                    b"".join(
                        view[a:b]
                        for a, b in zip(starts[live].tolist(), ends[live].tolist(), strict=True)
                    )
                )
                offs = np.concatenate(([0], np.cumsum((ends - starts)[live])[:-1]))
                view.release()
            new.keys.frombytes(keys.tobytes())
            new.vals.frombytes(vals[live].tobytes())
            new.offs.frombytes(offs.astype(np.uint64).tobytes())
            table = np.frombuffer(new.table, dtype=np.int32)
            _place(table, keys, slots - 1)
            del table
        self._state = new
        return new

    def nbytes(self) -> int:
        """Bytes held: the table, the entries' arrays and their bytes."""
        s = self._state
        return sum(sys.getsizeof(a) for a in (s.table, s.keys, s.vals, s.offs, s.blob))


def _place(table: np.ndarray, keys: np.ndarray, mask: int) -> None:
    """Put entries ``0 .. len(keys) - 1`` in the empty ``table`` by linear probing, as ``add``
    does one at a time: each round, every entry not yet placed takes its current slot if that is
    empty (the first of several wanting it), the others move one slot on."""
    pos = keys & mask
    todo = np.arange(len(keys))
    while len(todo):
        p = pos[todo]
        free = table[p] == 0
        _slots, first = np.unique(p[free], return_index=True)
        won = todo[free][first]
        table[pos[won]] = won + 1
        placed = np.zeros(len(keys), dtype=bool)
        placed[won] = True
        todo = todo[~placed[todo]]
        pos[todo] = (pos[todo] + 1) & mask
