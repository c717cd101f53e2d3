"""The first stage's codes and scales by slot, held outside the process's memory: what a scan reads.

The scan ranks every candidate slot by its code's dot product with the query times the row's scale
(``quantized.py``: with ``"i4"`` 192 B of 4-bit codes and a float32 inverse norm per 384-d row).
Held in a matrix, that was the largest part of the hot index still growing with the data (~0.2 KB
a trace, bench/results/soak-session17-hotidx.md), read whole by every scan below the graph's
threshold. So a row's codes and scale are one fixed-width record in an anonymous side file
(``slotfile.py``, as the rescoring records are), written when the row's vector is, and a scan maps
the file read-only for its duration and runs the same kernel on the records where they lie (a
dense scan, a chunk at a time) or on just the masked slots' records gathered into one scratch
buffer per thread (``SCAN_BYTES``), and multiplies by the same scales: the same float32 scores as
the matrix gave, row for row (integer dot products are exact; the scale's product is one rounding
either way). With ``"f32"`` rows the dot products are BLAS's, whose last bit may depend on a
row's place in the block it is given: scores equal to ~1e-7, and exactly tied rows may come in
another order.

Why a mapping (session 19, bench/results/hot-gather-session19.md): session 18 read the records
with ``pread``, and a mask too selective for the graph (a small namespace scattered in a large
one) copied the whole span of its slots: 3 % of 40k rows 7.8 MB a query. Through a mapping a
scan touches only the pages of the slots it reads. Those pages are mapped into the process while
the scan runs, and RSS counts them: the scan releases them (``MADV_DONTNEED``) every
``RELEASE_BYTES`` of records it moves through and unmaps the file when it ends, so between scans
the codes hold no resident bytes, as before; the pages stay in the kernel's page cache. A page
fault maps a file's folio several times faster when it is large, so the file grows by zeros in
large aligned blocks (``EXTENT_BYTES``) before records are written into it. Readers may run in
other threads: the file only grows, a slot never moves, each scan maps the records written when it
starts, and each thread has its own buffer.
"""

from __future__ import annotations

import mmap
import threading
from pathlib import Path

import numkong as nk
import numpy as np

from stratamem.core.hotindex.quantized import Layout
from stratamem.core.hotindex.slotfile import SlotFile, pread_into
from stratamem.core.telemetry import get_logger

#: bytes of records scored per kernel call (a dense scan's chunk; the scratch buffer's size)
SCAN_BYTES = 512 << 10
#: a scan releases the pages it has read from the mapping once it has moved this many bytes of
#: records past them (and all at its end): with the block it is in, what a scan holds mapped
RELEASE_BYTES = 4 << 20
#: a masked scan whose slots are in fewer runs of consecutive slots than this reads each run with
#: one ``preadv`` (one owner's rows: a system call a run costs less than mapping the file, ~10 us,
#: and a fault per block); more runs (a scattered mask) are gathered from the mapping
RUNS_READ = 32
#: the file is extended by zeros in aligned blocks of up to this many bytes (``SlotFile.extent``):
#: ext4 caches a block written at once in folios of its size (kernel 6.18), and a scattered
#: gather maps 2 MB folios 5-10x faster than one page folios (records written one at a time);
#: 4 and 8 MB blocks measured slower again (bench/results/hot-gather-session19.md)
EXTENT_BYTES = 2 << 20
_DONTNEED = getattr(mmap, "MADV_DONTNEED", None)
_log = get_logger("hotindex")

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
        self.file = SlotFile(self.code_bytes + 4, directory, EXTENT_BYTES)
        #: bytes of records scored per kernel call (a dense scan's chunk; a masked scan's gathered
        #: records: the scratch buffer's size), and between releases of a scan's pages (tests
        #: force them small)
        self.scan_bytes = SCAN_BYTES
        self.release_bytes = RELEASE_BYTES
        #: chunks a scan scored (kernel calls) and ``preadv`` calls of runs, for tests and the bench
        self.chunks = 0
        self.reads = 0
        #: scans whose mapping the system refused (they read the records instead)
        self.map_failures = 0

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
        """``dots(query, codes[:n]) * scales[:n]`` for ``n = len(valid)``, as float32: the kernel
        run on each chunk of the mapped records where they lie (no copy); a chunk with no slot in
        ``valid`` is not touched (its scores are left undefined: the caller masks them), a slot
        never written scores 0."""
        n = len(valid)
        out = np.empty(n, dtype=np.float32)
        rows = max(1, self.scan_bytes // self.file.width)
        mapped = self._map()
        if mapped is None:
            return self._scan_read(query, valid, out, rows)
        with mapped:
            for lo in range(0, n, rows):
                hi = min(n, lo + rows)
                if not valid[lo:hi].any():
                    continue
                self.chunks += 1
                end = max(lo, min(hi, mapped.rows))
                part = out[lo:hi]
                part[end - lo :] = 0
                if end > lo:
                    mat = mapped.records[lo:end]
                    self._dots(query, mat[:, : self.code_bytes], part[None, : end - lo])
                    part[: end - lo] *= mat[:, self.code_bytes :].view(np.float32)[:, 0]
                    del mat
                    mapped.touched(lo, end)
        return out

    def _scan_read(
        self, query: np.ndarray, valid: np.ndarray, out: np.ndarray, rows: int
    ) -> np.ndarray:
        """``scan`` without a mapping: each chunk with a valid slot read into the scratch buffer."""
        width, fd = self.file.width, self.file.fd()
        mat = _buffer(rows * width)[: rows * width].reshape(rows, width)
        for lo in range(0, len(valid), rows):
            hi = min(len(valid), lo + rows)
            if not valid[lo:hi].any():
                continue
            self.chunks += 1
            block = mat[: hi - lo]
            self._read(fd, block, lo)  # zeros past the file's end: a slot never written scores 0
            self._dots(query, block[:, : self.code_bytes], out[None, lo:hi])
            out[lo:hi] *= block[:, self.code_bytes :].view(np.float32)[:, 0]
        return out

    def _map(self) -> _Mapped | None:
        """The records mapped for one scan; None when the system refuses the mapping (the address
        space limit or the count of mappings reached): the scan then reads what it needs, slower
        but the same scores, rather than failing the recall."""
        try:
            return _Mapped(self.file, self.release_bytes)
        except OSError as exc:
            if not self.map_failures:
                _log.warning("hot_codes_unmapped", error=str(exc), fallback="pread")
            self.map_failures += 1
            return None

    def scores(self, query: np.ndarray, slots: np.ndarray) -> np.ndarray:
        """``dots(query, codes[slots]) * scales[slots]`` (``quantized.dots``) for ascending
        distinct ``slots``, as float32: the records of just those slots in the scratch buffer, a
        buffer-ful at a time, the kernel run on each. Slots in a few runs of consecutive slots
        (``RUNS_READ`` or fewer: one owner's rows written together) are read with one ``preadv``
        a run; others are gathered from the mapping (a read a slot would cost more)."""
        idx = np.asarray(slots, dtype=np.int64)
        out = np.zeros(len(idx), dtype=np.float32)  # a slot never written scores 0
        if not len(idx):
            return out
        width = self.file.width
        rows = max(1, self.scan_bytes // width)
        mat = _buffer(rows * width)[: rows * width].reshape(rows, width)
        fill = done = 0  # rows in the buffer; slots of ``idx`` scored before them

        def flush() -> None:
            nonlocal fill, done
            raw = np.empty((1, fill), dtype=np.float32)
            self._dots(query, mat[:fill, : self.code_bytes], raw)
            out[done : done + fill] = raw[0] * mat[:fill, self.code_bytes :].view(np.float32)[:, 0]
            done += fill
            fill = 0
            self.chunks += 1

        starts = np.flatnonzero(np.diff(idx) != 1) + 1
        mapped = None if len(starts) < RUNS_READ else self._map()
        if mapped is None:  # few runs, or no mapping to be had: a ``preadv`` a run
            fd = self.file.fd()
            for a, b in zip(
                np.r_[0, starts].tolist(), np.r_[starts, len(idx)].tolist(), strict=True
            ):
                while a < b:
                    if fill == rows:
                        flush()
                    take = min(b - a, rows - fill)
                    self._read(fd, mat[fill : fill + take], int(idx[a]))
                    fill += take
                    a += take
            if fill:
                flush()
            return out
        with mapped:
            have = int(np.searchsorted(idx, mapped.rows))  # slots written
            for at in range(0, have, rows):
                part = idx[at : min(have, at + rows)]
                fill = len(part)
                np.take(mapped.records, part, axis=0, out=mat[:fill], mode="clip")
                mapped.touched(int(part[0]), int(part[-1]) + 1)
                flush()
        return out

    def _read(self, fd: int, block: np.ndarray, first: int) -> None:
        """Records from slot ``first`` into ``block`` (zeros past the file's end)."""
        view, at, got = block.reshape(-1).data, first * self.file.width, 0
        while got < len(view):
            step = pread_into(fd, view[got:], at + got)
            self.reads += 1
            if step <= 0:  # past the file's end: never written
                view[got:] = bytes(len(view) - got)
                return
            got += step

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


class _Mapped:
    """The records written so far mapped read-only for one scan (``records``: a (rows, width)
    uint8 view; rows written later are not in it). A page the scan reads is mapped into the
    process, and RSS counts it, until released: the ``EXTENT_BYTES`` blocks the scan has moved
    past once they add up to ``release_bytes`` (``touched``; a fault maps a whole large folio, so
    the block the scan is in stays mapped), and all of them when the scan ends (the file is
    unmapped). The pages stay in the kernel's page cache: the next scan maps them again."""

    def __init__(self, file: SlotFile, release_bytes: int) -> None:
        self.width = file.width
        self.rows = file.file_bytes() // self.width
        self._release_bytes = release_bytes
        self._map = (
            mmap.mmap(file.fd(), self.rows * self.width, mmap.MAP_SHARED, mmap.PROT_READ)
            if self.rows
            else None
        )
        self.records = (
            np.frombuffer(self._map, dtype=np.uint8).reshape(self.rows, self.width)
            if self._map is not None
            else np.zeros((0, self.width), dtype=np.uint8)
        )
        self._from = -1  # the first block not released yet (-1: nothing read)

    def __enter__(self) -> _Mapped:
        return self

    def touched(self, lo: int, hi: int) -> None:
        """Slots ``lo`` .. ``hi - 1`` were read (ascending over a scan)."""
        if self._from < 0:
            self._from = lo * self.width // EXTENT_BYTES * EXTENT_BYTES
        cut = (hi * self.width - 1) // EXTENT_BYTES * EXTENT_BYTES  # the block being read
        if cut - self._from >= self._release_bytes:
            self._release(self._from, cut)
            self._from = cut

    def _release(self, start: int, end: int) -> None:
        if self._map is not None and _DONTNEED is not None:
            self._map.madvise(_DONTNEED, start, end - start)

    def __exit__(self, *exc: object) -> None:
        self.records = np.zeros((0, self.width), dtype=np.uint8)
        if self._map is None:
            return
        try:
            self._map.close()  # unmapped: its pages leave the process
        except BufferError:  # a view still held (an exception's frames): release, unmap later
            self._release(0, len(self._map))


def scratch_bytes() -> int:
    """This thread's scratch buffer's size (0 before its first scan)."""
    buf = getattr(_scratch, "buf", None)
    return 0 if buf is None else int(buf.nbytes)
