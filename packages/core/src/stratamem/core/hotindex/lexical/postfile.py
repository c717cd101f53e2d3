"""Long postings, bar each token's newest few, in a per-process side file read per query token.

A token's postings are read only when a query holds the token, yet held in arrays they grew the
process by 5 B a posting (slot and term frequency) plus the arrays' slack: ~75 B a soak trace, a
sixth of the hot index (soak-session17-hotidx.md). So once a token has ``SPILL`` postings in
memory they are appended to its record in an anonymous side file (``rowfile.Spill``), and a
query reads the record with two ``os.pread`` calls (slots, then term frequencies) from the
kernel's page cache. The newest postings of each token stay in ``Postings``' arrays until there
are ``SPILL`` of them again, so a write costs one ``pwrite`` pair per ``SPILL`` postings of a
token, not one per posting.

A record is ``cap`` int32 slots then ``cap`` uint8 term frequencies (a token with a count above
255 is never here: ``Postings`` keeps it in memory as float32). Appending past ``cap`` writes the
record anew at the file's end with twice the room; the file is rewritten once its dead bytes
outgrow the live ones (``COMPACT_MIN_BYTES``). Resident per token: its entry in a dict and four
numbers in arrays. Readers and writers run on one thread (the engine's event loop), as the
arrays' readers do.
"""

from __future__ import annotations

import os
import sys
from array import array
from pathlib import Path

import numpy as np

from stratamem.core.hotindex.rowfile import Spill

#: postings a token holds in memory before they go to its record in one write (and the fewest a
#: token has before it gets a record: a rarer token stays in memory whole)
SPILL = 16
#: the file is rewritten once dead bytes exceed the live ones and this many bytes
COMPACT_MIN_BYTES = 1 << 20


def _pwrite(fd: int, data: bytes | memoryview, at: int) -> None:
    done = 0
    while done < len(data):  # pwrite may write less than asked
        done += os.pwrite(fd, data[done:], at + done)


def _pread(fd: int, size: int, at: int) -> bytes:
    data = os.pread(fd, size, at)
    while len(data) < size:  # pread may read less than asked
        more = os.pread(fd, size - len(data), at + len(data))
        if not more:
            raise OSError(f"postings file ends at {at + len(data)}, {size - len(data)} B short")
        data += more
    return data


class PostFile:
    """token -> its oldest postings (slots ascending, uint8 term frequencies) in a side file."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = directory
        self._spill: Spill | None = None
        self._end = 0  # bytes written to the file
        self._live = 0  # bytes of the records held (their room included)
        self._tid: dict[str, int] = {}
        self._off = array("q")  # per record: where it starts
        self._n = array("i")  # postings in it
        self._cap = array("i")  # room for postings
        self._last = array("i")  # its last slot (a write appends above it)
        self._free: list[int] = []  # record numbers to reuse

    def _fd(self) -> int:
        if self._spill is None:
            self._spill = Spill(self.directory)
        return self._spill.fd

    # -- reads -------------------------------------------------------------------------------
    def __contains__(self, tok: object) -> bool:
        return tok in self._tid

    def __len__(self) -> int:
        return len(self._tid)

    def count(self, tok: str) -> int:
        """Postings ``tok`` has in the file (0: none)."""
        t = self._tid.get(tok)
        return 0 if t is None else self._n[t]

    def last(self, tok: str) -> int:
        """``tok``'s last slot in the file (it has a record)."""
        return self._last[self._tid[tok]]

    def read(self, tok: str) -> tuple[np.ndarray, np.ndarray] | None:
        """``tok``'s slots (int32) and term frequencies (uint8) in the file, fresh arrays."""
        t = self._tid.get(tok)
        if t is None or self._spill is None:
            return None
        off, n, cap = self._off[t], self._n[t], self._cap[t]
        fd = self._spill.fd
        slots = np.frombuffer(_pread(fd, 4 * n, off), dtype=np.int32)
        tfs = np.frombuffer(_pread(fd, n, off + 4 * cap), dtype=np.uint8)
        return slots, tfs

    # -- writes ------------------------------------------------------------------------------
    def append(self, tok: str, slots: array[int], tfs: array[int]) -> None:
        """Add postings above ``tok``'s last in the file (``tfs``: ``array('B')``)."""
        k = len(slots)
        if not k:
            return
        t = self._tid.get(tok)
        if t is None:
            self._write(tok, np.frombuffer(slots, np.int32), np.frombuffer(tfs, np.uint8))
            return
        n, cap = self._n[t], self._cap[t]
        if n + k > cap:
            old = self.read(tok)
            assert old is not None
            self._write(
                tok,
                np.concatenate((old[0], np.frombuffer(slots, np.int32))),
                np.concatenate((old[1], np.frombuffer(tfs, np.uint8))),
            )
            return
        fd, off = self._fd(), self._off[t]
        _pwrite(fd, memoryview(slots).cast("B"), off + 4 * n)
        _pwrite(fd, memoryview(tfs).cast("B"), off + 4 * cap + n)
        self._n[t] = n + k
        self._last[t] = slots[-1]

    def replace(self, tok: str, slots: np.ndarray, tfs: np.ndarray) -> None:
        """``tok``'s postings in the file become ``slots``/``tfs`` (ascending; none: dropped)."""
        if not len(slots):
            self.drop(tok)
            return
        self._write(tok, np.asarray(slots, np.int32), np.asarray(tfs, np.uint8))

    def take(self, tok: str) -> tuple[np.ndarray, np.ndarray] | None:
        """``tok``'s postings in the file, dropped from it."""
        got = self.read(tok)
        self.drop(tok)
        return got

    def drop(self, tok: str) -> None:
        t = self._tid.pop(tok, None)
        if t is None:
            return
        self._live -= 5 * self._cap[t]
        self._n[t] = self._cap[t] = 0
        self._free.append(t)
        self._maybe_compact()

    def _write(self, tok: str, slots: np.ndarray, tfs: np.ndarray) -> None:
        """``tok``'s record written whole: in place if it fits, else at the file's end."""
        n = len(slots)
        t = self._tid.get(tok)
        if t is not None and n <= self._cap[t]:
            off, cap = self._off[t], self._cap[t]
        else:
            if t is None:
                t = self._free.pop() if self._free else self._new()
            else:
                self._live -= 5 * self._cap[t]
            cap = max(SPILL, 2 * n)
            off = self._end
            self._end += 5 * cap
            self._live += 5 * cap
            self._tid[tok] = t
        fd = self._fd()
        _pwrite(fd, np.ascontiguousarray(slots, dtype=np.int32).tobytes(), off)
        _pwrite(fd, np.ascontiguousarray(tfs, dtype=np.uint8).tobytes(), off + 4 * cap)
        self._off[t], self._n[t], self._cap[t] = off, n, cap
        self._last[t] = int(slots[-1])
        self._maybe_compact()

    def _new(self) -> int:
        for a in (self._off, self._n, self._cap, self._last):
            a.append(0)
        return len(self._off) - 1

    def _maybe_compact(self) -> None:
        """Rewrite the file with the live records only, once dead bytes outgrow live ones."""
        dead = self._end - self._live
        if dead <= max(self._live, COMPACT_MIN_BYTES) or self._spill is None:
            return
        old_fd, fresh = self._spill.fd, Spill(self.directory)
        end = 0
        for t in self._tid.values():
            off, n, cap = self._off[t], self._n[t], self._cap[t]
            _pwrite(fresh.fd, _pread(old_fd, 4 * n, off), end)
            _pwrite(fresh.fd, _pread(old_fd, n, off + 4 * cap), end + 4 * cap)
            self._off[t] = end
            end += 5 * cap
        self._spill, self._end = fresh, end

    # -- size --------------------------------------------------------------------------------
    def nbytes(self) -> int:
        """Bytes resident in the process: the dict and the records' numbers (the postings are
        in the file: ``file_bytes``)."""
        arrays = (self._off, self._n, self._cap, self._last)
        return sys.getsizeof(self._tid) + sum(sys.getsizeof(a) for a in arrays)

    def file_bytes(self) -> int:
        return self._end
