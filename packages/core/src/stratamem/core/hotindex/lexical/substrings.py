"""The substring channel: a case-insensitive ``str.find`` over the table's texts."""

from __future__ import annotations

from collections.abc import Callable, Sequence

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
        texts: Callable[[], Sequence[str | None]],
        needle: str,
        mask: np.ndarray,
        limit: int,
    ) -> list[int]:
        """Slots (ascending) whose text contains ``needle`` (case-insensitive) and pass ``mask``."""
        if self._dirty:
            parts = [(t or "").lower() for t in texts()]
            lens = np.fromiter((len(p) + 1 for p in parts), dtype=np.int64, count=len(parts))
            self._starts = np.concatenate(([0], np.cumsum(lens)[:-1])) if len(parts) else lens
            self._blob = "\x00".join(parts)
            self._dirty = False
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
