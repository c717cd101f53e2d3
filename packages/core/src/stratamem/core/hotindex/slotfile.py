"""Fixed-width records by slot, held outside the process's memory: what rescoring reads.

With ``storage.hot_vector_dtype = "i4"`` a record is a row's int8 codes, int4 residual and scale
(580 B at 384 dims; only 4-bit codes stay in memory), with ``"i8"`` the residual alone (192 B).
It is read only to rescore a query's best first-stage candidates (``Layout.rescore`` × limit) or
the ANN graph's proposals, for the rows a query returns and when the graph is built: the scan
never touches it. Held in an array it grew the process by its width per trace for data read a
few dozen rows at a time, so it lives in an anonymous side file beside the rows'
(``rowfile.py``): slot ``s`` at offset ``s × width``, written with ``os.pwrite``, read with one
``os.pread`` per candidate (or one per contiguous range, for the graph). A slot never moves, so
there is nothing to compact; a slot never written reads as zeros. Recently read records are in
the kernel's page cache, not in the process; the file is rebuilt with the index at start.

Readers may run in other threads: the file and its width never change once made, and a record
is read before or after a write to it (the in-memory codes beside it are not written
atomically either: a row's vector is rewritten in place only by an update of that row).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from stratamem.core.hotindex.rowfile import Spill


class SlotFile:
    """``width`` bytes per slot in an anonymous file in ``directory`` (made on the first write).

    ``extent``: when a write reaches past what the file holds, the file is first extended by
    zeros in aligned blocks, each as large as the file so far (4 KB at least, ``extent`` at
    most), one write each: the kernel then caches the file in large folios, which a scan through
    a mapping maps several times faster than the one-page folios of records written one at a
    time (``codefile.py``). The file is then at most twice its records, or ``extent`` more."""

    def __init__(self, width: int, directory: Path | str | None = None, extent: int = 0) -> None:
        self.width = width
        self.directory = directory
        self.extent = extent
        self._spill: Spill | None = None
        self._end = 0  # bytes up to the last record written
        self._extended = 0  # bytes of the file written as zeros ahead of the records
        self._lock = threading.Lock()
        #: records read by ``read`` (one ``pread`` each), for tests and the bench
        self.reads = 0

    def _file(self) -> Spill:
        spill = self._spill
        if spill is None:
            with self._lock:
                spill = self._spill
                if spill is None:
                    spill = self._spill = Spill(self.directory)
        return spill

    # -- writes ------------------------------------------------------------------------------
    def write(self, first: int, block: np.ndarray) -> None:
        """Records ``block`` (k, width) for slots ``first`` .. ``first + k - 1``."""
        if not self.width or not len(block):
            return
        data = np.ascontiguousarray(block, dtype=np.uint8).reshape(-1).data
        if len(data) != len(block) * self.width:
            raise ValueError(f"records of {self.width} bytes expected, got {block.shape}")
        fd, at = self._file().fd, first * self.width
        if self.extent and at + len(data) > self._extended:
            self._extend(fd, at + len(data))
        done = 0
        while done < len(data):  # pwrite may write less than asked
            done += os.pwrite(fd, data[done:], at + done)
        with self._lock:
            self._end = max(self._end, at + len(data))

    def _extend(self, fd: int, end: int) -> None:
        """Zeros after what the file holds, a block at a time, until it holds ``end`` bytes."""
        with self._lock:
            while self._extended < end:
                size = min(self.extent, max(4096, self._extended))
                done = 0
                while done < size:  # one system call a block: the block's length sets its folio's
                    done += _write_zeros(fd, size - done, self._extended + done)
                self._extended += size

    def fd(self) -> int:
        """The file's descriptor (made now if nothing was written yet: it reads as zeros)."""
        return self._file().fd

    # -- reads -------------------------------------------------------------------------------
    def read(self, slots: np.ndarray) -> np.ndarray:
        """The records of ``slots`` (any order, repeats allowed) as a (k, width) uint8 array."""
        idx = np.asarray(slots, dtype=np.int64).reshape(-1)
        w, spill = self.width, self._spill
        if spill is None or not w or not len(idx):
            return np.zeros((len(idx), w), dtype=np.uint8)
        fd = spill.fd
        self.reads += len(idx)
        parts = [os.pread(fd, w, s * w) for s in idx.tolist()]
        data = b"".join(parts)
        if len(data) != len(idx) * w:  # a slot past the file's end: never written
            data = b"".join(p.ljust(w, b"\0") for p in parts)
        return np.frombuffer(data, dtype=np.uint8).reshape(len(idx), w)

    def read_range(self, lo: int, hi: int) -> np.ndarray:
        """The records of slots ``lo`` .. ``hi - 1`` in one sequential read (the graph's build)."""
        w, spill = self.width, self._spill
        out = np.zeros((max(0, hi - lo), w), dtype=np.uint8)
        if spill is None or not out.size:
            return out
        view = out.reshape(-1).data  # the bytes of ``out`` itself: read in place
        done = 0
        while done < len(view):
            got = pread_into(spill.fd, view[done:], lo * w + done)
            if got <= 0:  # the file's end: the rest was never written
                break
            done += got
        return out

    # -- size --------------------------------------------------------------------------------
    def nbytes(self) -> int:
        """Bytes resident in the process: none (the records are in the file: ``file_bytes``)."""
        return 0

    def file_bytes(self) -> int:
        return self._end


_PREADV = getattr(os, "preadv", None)
_PWRITEV = getattr(os, "pwritev", None)
#: what ``_write_zeros`` writes from, repeated (no buffer of a block's size allocated per block)
_ZEROS = memoryview(bytes(64 << 10))


def _write_zeros(fd: int, nbytes: int, offset: int) -> int:
    """Write up to ``nbytes`` zeros at ``offset`` in one system call; bytes written."""
    if _PWRITEV is None:
        return os.pwrite(fd, _ZEROS[: min(nbytes, len(_ZEROS))], offset)
    whole, rest = divmod(nbytes, len(_ZEROS))
    parts = [_ZEROS] * min(whole, 1024) + ([_ZEROS[:rest]] if rest and whole < 1024 else [])
    written: int = _PWRITEV(fd, parts, offset)
    return written


def pread_into(fd: int, view: memoryview, offset: int) -> int:
    """Bytes read into ``view`` from ``offset`` (fewer at the file's end)."""
    if _PREADV is not None:
        got: int = _PREADV(fd, [view], offset)
        return got
    data = os.pread(fd, len(view), offset)
    view[: len(data)] = data
    return len(data)
