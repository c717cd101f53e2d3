"""The substring channel: a case-insensitive ``str.find`` over the table's texts.

The joined texts are rebuilt on the first probe after a write, from the texts a chunk at a time
(``RowFile.column_chunks``), each chunk joined and lower-cased as one string: a text per trace
alive at once (and its lower-cased copy) needed new CPython arenas as the table grew, kept by
the allocations made meanwhile (soak-session13-lexmem.md). ``str.lower`` of the joined chunk
equals the texts' own lower-cased and joined: the one context-dependent mapping (a final sigma)
looks across cased and case-ignorable characters only, and the separator is neither.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np


class Substrings:
    """Lower-cased texts joined into one string so a probe is a C-speed ``str.find`` loop."""

    def __init__(self) -> None:
        self._blob = ""
        self._starts = np.zeros(0, dtype=np.int64)
        self._dirty = True

    def invalidate(self) -> None:
        """Drop the joined texts (rebuilt on the next probe): a stale copy of every text held
        between two probes was ~200 B a trace of the soak's resident memory."""
        if not self._dirty:
            self._blob = ""
            self._starts = np.zeros(0, dtype=np.int64)
            self._dirty = True

    def find(
        self,
        texts: Callable[[], Iterable[Sequence[str | None]]],
        needle: str,
        mask: np.ndarray,
        limit: int,
    ) -> list[int]:
        """Slots (ascending) whose text contains ``needle`` (case-insensitive) and pass ``mask``;
        ``texts``: every slot's text in slot order, in chunks (None: no text)."""
        if self._dirty:
            self._rebuild(texts())
        low = needle.lower()
        out: list[int] = []
        pos = self._blob.find(low)
        while pos >= 0 and len(out) < limit:
            slot = int(np.searchsorted(self._starts, pos, side="right")) - 1
            if slot < len(mask) and mask[slot]:
                out.append(slot)
            nxt = int(self._starts[slot + 1]) if slot + 1 < len(self._starts) else len(self._blob)
            pos = self._blob.find(low, max(nxt, pos + 1))
        return out

    def _rebuild(self, chunks: Iterable[Sequence[str | None]]) -> None:
        pieces: list[str] = []
        lens: list[np.ndarray] = []
        for chunk in chunks:
            if not chunk:
                continue
            texts = [t or "" for t in chunk]
            joined = "\x00".join(texts)
            each = map(len if joined.isascii() else _lower_len, texts)
            lens.append(np.fromiter(each, dtype=np.int64, count=len(texts)))
            low = joined.lower()
            del joined
            pieces.append(low)
            del texts, low
        sizes = np.concatenate(lens) + 1 if lens else np.zeros(0, dtype=np.int64)
        self._starts = np.concatenate(([0], np.cumsum(sizes)[:-1])) if len(sizes) else sizes
        self._blob = "\x00".join(pieces)
        self._dirty = False


def _lower_len(text: str) -> int:
    """Length of ``text.lower()`` (an ASCII text's own; other lower-casings may lengthen one)."""
    return len(text) if text.isascii() else len(text.lower())
