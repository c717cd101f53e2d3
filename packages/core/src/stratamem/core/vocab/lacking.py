"""Vectors of query words the home's vocabulary lacks, kept between queries.

A query word the store lacks is embedded with the query (its nearest stored words are the
expansion's candidates, vocab/expand.py). One model call of the query and its lacking words cost
about twice the query alone (the words are padded to the query's length; turn_start at 10k
traces, load 5: +15 ms on the queries that had one, bench/results/hotpath-session10.md), and the
same few words come back ("remind", "end", "time": 60 % of the bench's questions held one). A
word's vector depends on the word alone, so a kept one is what the model would return again:
with every lacking word kept, the query is embedded alone, as a query without one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping

import numpy as np

#: words kept (float32 rows: 1.5 KB each at 384 dimensions, 0.4 MB in all)
MAX_WORDS = 256


class LackingVectors:
    """A bounded LRU of word -> float32 vector (read and written on the event loop)."""

    def __init__(self, max_words: int = MAX_WORDS) -> None:
        self.max_words = max(0, int(max_words))
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        #: words looked up and found, and words embedded (for tests and the bench)
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def known(self, words: Iterable[str]) -> dict[str, np.ndarray]:
        """The kept vectors of ``words`` (each marked as recently used)."""
        out: dict[str, np.ndarray] = {}
        for w in words:
            got = self._items.get(w)
            if got is None:
                self.misses += 1
                continue
            self._items.move_to_end(w)
            self.hits += 1
            out[w] = got
        return out

    def keep(self, vectors: Mapping[str, np.ndarray]) -> None:
        for w, vec in vectors.items():
            row = np.array(vec, dtype=np.float32, copy=True)
            row.setflags(write=False)
            self._items[w] = row
            self._items.move_to_end(w)
        while len(self._items) > self.max_words:
            self._items.popitem(last=False)
