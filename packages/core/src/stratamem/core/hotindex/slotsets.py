"""Sets of slots by key (a session's turns, a tag's rows) held as sorted ``array('i')``.

Four bytes a slot, where a ``set`` of ints cost ~60 (its hash table and an int object for every
slot above 256): ~190 B a trace for the sessions and tags at 10k soak traces (soak-session8.md).
Slots mostly arrive in ascending order (an append); a rewritten slot is inserted in place.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Hashable
from typing import TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)


def add(index: dict[K, array[int]], key: K, slot: int) -> None:
    got = index.get(key)
    if got is None:
        index[key] = array("i", (slot,))
    elif not got or got[-1] < slot:
        got.append(slot)
    else:
        at = bisect_left(got, slot)
        if at == len(got) or got[at] != slot:
            got.insert(at, slot)


def discard(index: dict[K, array[int]], key: K, slot: int) -> None:
    """Take ``slot`` out of ``key``'s set (a key left empty is dropped)."""
    got = index.get(key)
    if got is None:
        return
    at = bisect_left(got, slot)
    if at < len(got) and got[at] == slot:
        del got[at]
        if not got:
            del index[key]


def slots(got: array[int] | None) -> np.ndarray:
    """The set as an int64 array, ascending (a copy: the held array may grow meanwhile)."""
    if not got:
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(got, dtype=np.int32).astype(np.int64)
