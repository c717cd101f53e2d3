"""The first stage's codes and scales by slot, held outside the process's memory: what a scan reads.

The scan ranks every candidate slot by its code's dot product with the query times the row's scale
(``quantized.py``: with ``"i4"`` 192 B of 4-bit codes and a float32 inverse norm per 384-d row).
Held in a matrix, that was the largest part of the hot index still growing with the data (~0.2 KB
a trace, bench/results/soak-session17-hotidx.md), read whole by every scan below the graph's
threshold. So a row's codes and scale are one fixed-width record in an anonymous side file
(``slotfile.py``, as the rescoring records are), written when the row's vector is, and a scan reads
them a chunk at a time with ``pread`` into one scratch buffer per thread (``SCAN_BYTES``), runs the
same kernel on each chunk and multiplies by the same scales: the same float32 scores as the matrix
gave, row for row (integer dot products are exact; the scale's product is one rounding either way).
With ``"f32"`` rows the dot products are BLAS's, whose last bit may depend on a row's place in the
block it is given: scores equal to ~1e-7, and exactly tied rows may come in another order.

A masked scan reads only the runs of slots it needs (slots closer than ``GAP_BYTES`` read as one
run: records read for nothing cost less than a system call) and scores only the slots asked for. The buffer's bytes are the
process's, the records are in the kernel's page cache. Readers may run in other threads: the file
only grows, a slot never moves, and each thread has its own buffer.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numkong as nk
import numpy as np

from stratamem.core.hotindex.quantized import Layout
from stratamem.core.hotindex.slotfile import SlotFile, pread_into

#: bytes of records read per ``pread`` and scanned per kernel call (the scratch buffer's size)
SCAN_BYTES = 512 << 10
#: slots whose records are fewer than this many bytes apart read as one run: copying 32 KB from
#: the page cache costs about what one more ``pread`` and its Python costs (~3-4 us)
GAP_BYTES = 32 << 10

_scratch = threading.local()


def _buffer(nbytes: int) -> np.ndarray:
    """This thread's scratch buffer, at least ``nbytes`` long (one per thread, reused)."""
    buf: np.ndarray | None = getattr(_scratch, "buf", None)
    if buf is None or len(buf) < nbytes:
        buf = _scratch.buf = np.empty(nbytes, dtype=np.uint8)
    return buf


class CodeFile:
    """One vector column's first-stage codes (``layout.codes``, ``layout.code_width(dim)`` a row)
    and float32 scales, a record per slot in an anonymous file in ``directory``."""

    def __init__(self, layout: Layout, dim: int, directory: Path | str | None = None) -> None:
        self.layout = layout
        self.columns = layout.code_width(dim)
        self.code_bytes = self.columns * layout.codes.itemsize
        self.file = SlotFile(self.code_bytes + 4, directory)
        #: bytes scanned per chunk, and between two slots read as one run (tests force them small)
        self.scan_bytes = SCAN_BYTES
        self.gap_bytes = GAP_BYTES
        #: ``pread`` calls made by scans, for tests and the bench
        self.preads = 0

    # -- writes ------------------------------------------------------------------------------
    def write(self, first: int, codes: np.ndarray, scales: np.ndarray) -> None:
        """Codes (k, columns) and scales (k,) of slots ``first`` .. ``first + k - 1``."""
        k = len(codes)
        block = np.empty((k, self.file.width), dtype=np.uint8)
        block[:, : self.code_bytes] = np.ascontiguousarray(codes, self.layout.codes).view(np.uint8)
        block[:, self.code_bytes :] = np.asarray(scales, np.float32).reshape(k, 1).view(np.uint8)
        self.file.write(first, block)

    # -- reads -------------------------------------------------------------------------------
    def _split(self, records: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        codes = np.ascontiguousarray(records[:, : self.code_bytes]).view(self.layout.codes)
        scales = np.ascontiguousarray(records[:, self.code_bytes :]).view(np.float32).reshape(-1)
        return codes, scales

    def read(self, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(codes, scales) of ``slots`` (any order), one ``pread`` each: a few rows' worth."""
        return self._split(self.file.read(slots))

    def read_range(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """(codes, scales) of slots ``lo`` .. ``hi - 1`` in one sequential read."""
        return self._split(self.file.read_range(lo, hi))

    def scan(self, query: np.ndarray, valid: np.ndarray) -> np.ndarray:
        """``dots(query, codes[:n]) * scales[:n]`` for ``n = len(valid)``, as float32, each chunk
        scored into the result in place; a chunk with no slot in ``valid`` is not read (its
        scores are left undefined: the caller masks them)."""
        n = len(valid)
        out = np.empty(n, dtype=np.float32)
        width = self.file.width
        rows = max(1, self.scan_bytes // width)
        buf = _buffer(rows * width)
        fd = self.file.fd()
        for lo in range(0, n, rows):
            hi = min(n, lo + rows)
            if not valid[lo:hi].any():
                continue
            block = buf[: (hi - lo) * width]
            self._read(fd, block, lo)
            mat = block.reshape(hi - lo, width)
            part = out[lo:hi]
            self._dots(query, mat[:, : self.code_bytes], part[None, :])
            part *= mat[:, self.code_bytes :].view(np.float32)[:, 0]
        return out

    def _read(self, fd: int, block: np.ndarray, first: int) -> None:
        """Records from slot ``first`` into ``block`` (zeros past the file's end)."""
        view, at, got = block.data, first * self.file.width, 0
        while got < len(view):
            step = pread_into(fd, view[got:], at + got)
            self.preads += 1
            if step <= 0:  # past the file's end: never written
                block[got:] = 0
                return
            got += step

    def scores(self, query: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """``dots(query, codes[slots]) * scales[slots]`` (``quantized.dots``) for ascending
        distinct ``slots``, as float32: the records read a chunk at a time into the scratch
        buffer, runs of nearby slots in one ``pread``."""
        idx = np.asarray(slots, dtype=np.int64)
        out = np.empty(len(idx), dtype=np.float32)
        if not len(idx):
            return out
        width = self.file.width
        rows = max(1, self.scan_bytes // width)
        buf = _buffer(rows * width)[: rows * width]
        mat = buf.reshape(rows, width)
        fd = self.file.fd()
        cut = np.flatnonzero(np.diff(idx) > max(1, self.gap_bytes // width)) + 1
        starts = idx[np.r_[0, cut]].tolist()
        ends = (idx[np.r_[cut - 1, len(idx) - 1]] + 1).tolist()
        # pieces in the buffer: (first slot, its row in the buffer); flushed when the buffer is full
        piece_slot: list[int] = []
        piece_row: list[int] = []
        fill = 0
        done = 0  # slots of ``idx`` scored so far

        def flush() -> None:
            nonlocal fill, done
            if not fill:
                return
            last = piece_slot[-1] + (fill - piece_row[-1])  # one past the buffer's last slot
            upto = int(np.searchsorted(idx, last, side="left"))
            mine = idx[done:upto]
            at = np.searchsorted(np.asarray(piece_slot), mine, side="right") - 1
            pos = np.asarray(piece_row, dtype=np.int64)[at] + (mine - np.asarray(piece_slot)[at])
            if len(pos):  # the kernel runs on the slots asked for only, not a run's gaps
                rec = mat[pos] if len(pos) < fill else mat[:fill]
                raw = np.empty((1, len(rec)), dtype=np.float32)
                self._dots(query, rec[:, : self.code_bytes], raw)
                out[done:upto] = raw[0] * rec[:, self.code_bytes :].view(np.float32)[:, 0]
            done = upto
            fill = 0
            piece_slot.clear()
            piece_row.clear()

        for lo, hi in zip(starts, ends, strict=True):
            while lo < hi:
                if fill == rows:
                    flush()
                take = min(hi - lo, rows - fill)
                self._read(fd, buf[fill * width : (fill + take) * width], lo)
                piece_slot.append(lo)
                piece_row.append(fill)
                fill += take
                lo += take
        flush()
        return out

    def _dots(self, query: np.ndarray, block: np.ndarray, out: np.ndarray) -> None:
        """``quantized.dots`` over a (rows, code bytes) view of the buffer, into ``out`` (1, rows)."""
        name = self.layout.name
        codes = block.view(self.layout.codes)
        if name == "f32":
            out[0] = np.ascontiguousarray(codes) @ query
        elif name == "i4":
            nk.cdist(query[None, :], codes, metric="dot", dtype="int4", out=out)
        else:
            nk.cdist(query[None, :], codes, metric="dot", out=out)

    # -- size --------------------------------------------------------------------------------
    def nbytes(self) -> int:
        """Bytes resident per column: none (the records are in the file; a scan's buffer is its
        thread's, ``SCAN_BYTES``, whatever the rows)."""
        return 0

    def file_bytes(self) -> int:
        return self.file.file_bytes()


def scratch_bytes() -> int:
    """This thread's scratch buffer's size (0 before its first scan)."""
    buf = getattr(_scratch, "buf", None)
    return 0 if buf is None else int(buf.nbytes)
