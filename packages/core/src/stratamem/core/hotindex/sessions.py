"""A session's rows in (ts, id) order, made without reading the rows' ids.

Neighbour expansion places each seed among its session's turns by (ts, id) (``hot_channels.
session_neighbours``). Since the rows moved to the side file (``rowfile.py``) an id is a
``pread`` and a decode of its whole row, and ordering a session by (ts, id) read every row of
the seeds' sessions: ~300 row reads a query at 100k traces (40-turn sessions, the cache of
orders mostly missing), +2-3 ms per retrieval (bench/results/hotpath-session10.md). Turns of a
session rarely share a timestamp, so the order is the timestamps' (held in memory); ids are read
only to order rows with equal timestamps and, per seed, the rows sharing its timestamp.

And the sessions' codes (``SessionCodes``): a session id maps to a small int (the table's
``session`` column) without a Python object per session.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from stratamem.core.hotindex.lexical.singles import Singles

#: slot -> the row's id (``SlotIds``: read from the side file)
IdOf = Callable[[int], str | None]


@dataclass(frozen=True, slots=True)
class SessionOrder:
    """A session's live rows ordered by (ts, id): their timestamps and slots in that order, as
    ``array('q')`` (indexed and bisected like lists; a list held an int object per timestamp
    and slot, ~70 B a row for as long as the order stayed cached)."""

    ts: array[int]
    slots: array[int]

    def place(self, ts: int, rid: str, id_of: IdOf) -> tuple[int, bool]:
        """Where the key (``ts``, ``rid``) goes in the order (``bisect_left`` over the (ts, id)
        keys) and whether the row there has that key; reads the ids of the rows at ``ts`` only."""
        lo = bisect_left(self.ts, ts)
        hi = bisect_right(self.ts, ts, lo)
        if lo == hi:
            return lo, False
        ids = [str(id_of(s)) for s in self.slots[lo:hi]]
        at = bisect_left(ids, rid)
        return lo + at, at < len(ids) and ids[at] == rid


def order_of(slots: np.ndarray, ts: np.ndarray, id_of: IdOf) -> SessionOrder:
    """The (ts, id) order of ``slots`` (distinct, ascending) whose timestamps are ``ts[slots]``:
    ``sorted((ts, str(id)) …)``'s order, ids read only within runs of equal timestamps."""
    if not len(slots):
        return SessionOrder(array("q"), array("q"))
    t = ts[slots]
    by_ts = np.argsort(t, kind="stable")
    t_sorted = t[by_ts]
    out = slots[by_ts].tolist()
    tied = np.flatnonzero(t_sorted[1:] == t_sorted[:-1])
    if len(tied):  # runs of equal timestamps: ordered by id
        starts = tied[np.concatenate(([True], tied[1:] != tied[:-1] + 1))]
        for a in starts.tolist():
            b = a + 1
            while b < len(out) and t_sorted[b] == t_sorted[a]:
                b += 1
            out[a:b] = sorted(out[a:b], key=lambda s: str(id_of(s)))
    return SessionOrder(array("q", t_sorted.astype(np.int64).tobytes()), array("q", out))


class SessionCodes:
    """session id -> its code (1, 2, … in order of first sight; a code is never reused).

    Held in ``lexical/singles.py``'s store (hash, value and the id's bytes in arrays): as a
    ``dict`` each session cost its id's string, an int and an entry, ~130 B of small objects
    alive as long as the table (1,250 sessions at 10k soak traces: ~10 B a trace).
    """

    def __init__(self) -> None:
        self._codes = Singles()

    def __len__(self) -> int:
        return len(self._codes)

    def __iter__(self) -> Iterator[str]:
        return iter(self._codes)

    def get(self, sid: str, default: int | None = None) -> int | None:
        got = self._codes.get(sid)
        return default if got is None else got

    def code(self, sid: str) -> int:
        """``sid``'s code, given the next one if it has none yet."""
        got = self._codes.get(sid)
        if got is None:
            got = len(self._codes) + 1
            self._codes.put(sid, got)
        return got

    def items(self) -> Iterator[tuple[str, int]]:
        for sid in self._codes:
            yield sid, self.code(sid)

    def nbytes(self) -> int:
        return self._codes.nbytes()
