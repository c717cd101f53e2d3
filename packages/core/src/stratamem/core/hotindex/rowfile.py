"""A table's rows by slot, held outside the process's memory: only each slot's location is resident.

Ranking reads compact columns for every candidate (owner, session, ts, priority, vectors,
postings); the row itself (texts, ids, JSON columns) is read only for the few rows a query
returns. Held as Python objects those rows cost ~0.8 KB a trace, the largest part of the hot
index (bench/results/soak-session8.md), so they live in a per-process side file beside the home's
data: appended when a row enters the index, read with ``os.pread`` for the candidates, rebuilt
with the index at start (LanceDB is the store of record), rewritten when its dead bytes outgrow
its live ones. The file has no name (``O_TMPFILE``, or unlinked as soon as it is made), so a crash
leaves nothing behind, and recently read rows are in the kernel's page cache, not in the process.

A row is stored as its column names' shape (held once per distinct shape) and its values, by
``marshal`` (``pickle`` for values marshal does not take): every read is a fresh dict with the
exact values and types written. Readers may run in other threads: a slot's location is one
64-bit word, and a rewrite swaps the file and the locations together (``_state``), so a reader
sees a row either before or after a write, never half of one.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import pickle
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, SupportsIndex

import numpy as np

Row = dict[str, Any]

#: a location is ``offset << LEN_BITS | length``; a length of ``LONG`` means the payload is
#: preceded by its 8-byte length (rows of 16 MiB and more); 0 means no row
LEN_BITS = 24
LONG = (1 << LEN_BITS) - 1
_HEADER = 8
#: the file is rewritten once dead bytes exceed the live ones and this many bytes
COMPACT_MIN_BYTES = 4 << 20
#: bytes read per ``pread`` when a whole column is read (the substring channel's texts)
SCAN_CHUNK = 4 << 20
#: slots per list when a whole column is read (``column_chunks``)
CHUNK_ROWS = 512
_MARSHAL, _PICKLE = b"m", b"p"


def _open_anonymous(directory: Path | str | None) -> int:
    """A read-write file with no name in ``directory`` (the system's temp dir for None)."""
    where = str(directory) if directory is not None else tempfile.gettempdir()
    flag = getattr(os, "O_TMPFILE", 0)
    if flag:
        try:
            return os.open(where, flag | os.O_RDWR | os.O_CLOEXEC, 0o600)
        except OSError:  # a file system without O_TMPFILE
            pass
    fd, path = tempfile.mkstemp(prefix=".hot-rows-", dir=where)
    os.unlink(path)
    return fd


class Spill:
    """One side file's descriptor, closed when the last reader lets go of it."""

    __slots__ = ("fd",)

    def __init__(self, directory: Path | str | None) -> None:
        self.fd = _open_anonymous(directory)

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


#: the types ``marshal`` writes back as themselves (it would write any buffer, a numpy scalar
#: among them, as ``bytes``; a subclass as its base): anything else goes through ``pickle``
_SCALARS = frozenset({str, int, float, bool, type(None), bytes})
_CONTAINERS = frozenset({list, tuple})


def _plain(v: Any) -> bool:
    t = type(v)
    if t in _SCALARS:
        return True
    if t in _CONTAINERS:
        return all(type(x) in _SCALARS or _plain(x) for x in v)
    if t is dict:
        return all(_plain(k) and _plain(x) for k, x in v.items())
    return False


def _encode(shape: int, values: tuple[Any, ...]) -> bytes:
    if all(type(v) in _SCALARS or _plain(v) for v in values):
        return _MARSHAL + marshal.dumps((shape, values))
    return _PICKLE + pickle.dumps((shape, values), protocol=pickle.HIGHEST_PROTOCOL)


def _decode(data: bytes) -> tuple[int, tuple[Any, ...]]:
    view = memoryview(data)
    got: tuple[int, tuple[Any, ...]] = (
        marshal.loads(view[1:]) if data[:1] == _MARSHAL else pickle.loads(view[1:])
    )
    return got


class RowFile:
    """Rows by slot (None: a deleted slot) in an anonymous side file in ``directory``."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = directory
        #: (the file, made on the first write; each slot's location): swapped together by a rewrite
        self._state: tuple[Spill | None, np.ndarray] = (None, np.zeros(64, np.uint64))
        self._n = 0
        self._end = 0  # bytes written to the current file
        self._live = 0  # bytes of the rows the slots hold
        self._shapes: list[tuple[str, ...]] = []
        self._shape_of: dict[tuple[str, ...], int] = {}
        self._lock = threading.Lock()  # writers

    # -- reads -------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._n

    def _slot(self, slot: SupportsIndex) -> int:
        i = slot.__index__()
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"slot {int(slot)} of {self._n}")
        return i

    def __getitem__(self, slot: SupportsIndex) -> Row | None:
        """A fresh dict of the row (None for a deleted slot); changing it changes nothing here."""
        spill, loc = self._state
        i = self._slot(slot)
        got = self._read(spill, int(loc[i])) if i < len(loc) else None  # (being appended)
        if got is None:
            return None
        shape, values = got
        return dict(zip(self._shapes[shape], values, strict=True))

    @staticmethod
    def _read(spill: Spill | None, loc: int) -> tuple[int, tuple[Any, ...]] | None:
        if not loc or spill is None:
            return None
        off, size = loc >> LEN_BITS, loc & LONG
        if size == LONG:
            size = int.from_bytes(os.pread(spill.fd, _HEADER, off), "little")
            off += _HEADER
        return _decode(os.pread(spill.fd, size, off))

    def __iter__(self) -> Iterator[Row | None]:
        for i in range(self._n):
            yield self[i]

    def column(self, name: str) -> list[Any]:
        """Every slot's value of ``name`` (None for deleted slots and rows without it)."""
        out: list[Any] = []
        for chunk in self.column_chunks(name):
            out += chunk
        return out

    def column_chunks(self, name: str, size: int = 0) -> Iterator[list[Any]]:
        """Every slot's value of ``name`` in slot order, ``size`` slots a list (``CHUNK_ROWS`` for
        0), the file read in large sequential stretches. No Python object per row outlives its
        chunk: a whole column at once (its values and the rows decoded for them) needed new
        CPython arenas as the table grew, which other allocations then pinned
        (soak-session13-lexmem.md)."""
        size = size or CHUNK_ROWS
        spill, loc = self._state
        n = self._n
        at = {i: s.index(name) for i, s in enumerate(self._shapes) if name in s}
        buf, buf_at = b"", 0
        for first in range(0, n, size):
            locs = loc[first : min(n, first + size)].tolist()
            out: list[Any] = [None] * len(locs)
            for i, where in enumerate(locs):
                if not where or spill is None:
                    continue
                off, length = where >> LEN_BITS, where & LONG
                if length == LONG:
                    got = self._read(spill, where)
                elif buf_at <= off and off + length <= buf_at + len(buf):
                    got = _decode(buf[off - buf_at : off - buf_at + length])
                elif buf_at + len(buf) <= off < buf_at + len(buf) + SCAN_CHUNK or not buf:
                    # the next stretch of the file (rows are appended in slot order)
                    buf, buf_at = os.pread(spill.fd, max(SCAN_CHUNK, length), off), off
                    got = _decode(buf[:length])
                else:  # a row rewritten out of order: read alone, the stretch kept
                    got = _decode(os.pread(spill.fd, length, off))
                if got is not None and got[0] in at:
                    out[i] = got[1][at[got[0]]]
                del got
            yield out

    # -- writes ------------------------------------------------------------------------------
    def __setitem__(self, slot: SupportsIndex, row: Mapping[str, Any] | None) -> None:
        payload = None if row is None else _encode(self._shape(tuple(row)), tuple(row.values()))
        with self._lock:
            self._write([self._slot(slot)], [payload])

    def append(self, row: Mapping[str, Any] | None) -> None:
        payload = None if row is None else _encode(self._shape(tuple(row)), tuple(row.values()))
        with self._lock:
            slot = self._n
            self._reserve(slot + 1)
            self._n += 1
            self._write([slot], [payload])

    def extend_from_columns(self, cols: Sequence[str], columns: Sequence[list[Any]]) -> None:
        """Append rows given column by column (a bulk load): one write for all of them."""
        shape = self._shape(tuple(cols))
        payloads: list[bytes | None] = [_encode(shape, v) for v in zip(*columns, strict=True)]
        with self._lock:
            first = self._n
            self._reserve(first + len(payloads))
            self._n += len(payloads)
            self._write(list(range(first, first + len(payloads))), payloads)

    def _shape(self, cols: tuple[str, ...]) -> int:
        got = self._shape_of.get(cols)
        if got is None:
            with self._lock:
                got = self._shape_of.get(cols)
                if got is None:
                    self._shapes.append(cols)  # before any row refers to it
                    got = self._shape_of[cols] = len(self._shapes) - 1
        return got

    def _reserve(self, need: int) -> None:
        spill, loc = self._state
        if need > len(loc):
            grown = np.zeros(max(need, 2 * len(loc)), np.uint64)
            grown[: len(loc)] = loc
            self._state = (spill, grown)

    def _write(self, slots: list[int], payloads: list[bytes | None]) -> None:
        """Append the payloads and point the slots at them (under the writer lock)."""
        spill, loc = self._state
        if spill is None:
            spill = Spill(self.directory)
            self._state = (spill, loc)
        parts: list[bytes] = []
        locs: list[int] = []
        at = self._end
        for p in payloads:
            if p is None:
                locs.append(0)
                continue
            size = len(p)
            if size >= LONG:
                parts.append(size.to_bytes(_HEADER, "little"))
                locs.append(at << LEN_BITS | LONG)
                at += _HEADER
            else:
                locs.append(at << LEN_BITS | size)
            parts.append(p)
            at += size
        if parts:
            data = b"".join(parts)
            done = 0
            while done < len(data):  # pwrite may write less than asked
                done += os.pwrite(spill.fd, memoryview(data)[done:], self._end + done)
        self._end = at
        for slot, new in zip(slots, locs, strict=True):
            self._live += self._size(spill, new) - self._size(spill, int(loc[slot]))
            loc[slot] = new
        if self._end - self._live > max(self._live, COMPACT_MIN_BYTES):
            self._rewrite()

    @staticmethod
    def _size(spill: Spill, loc: int) -> int:
        """Bytes of the file a location holds (a long row: its header and payload)."""
        if not loc:
            return 0
        size = loc & LONG
        if size != LONG:
            return size
        return _HEADER + int.from_bytes(os.pread(spill.fd, _HEADER, loc >> LEN_BITS), "little")

    def _rewrite(self) -> None:
        """Copy the live rows to a fresh file and swap it in (readers of the old one finish on it)."""
        spill, loc = self._state
        assert spill is not None
        fresh, new_loc = Spill(self.directory), np.zeros(len(loc), np.uint64)
        end = live = 0
        held = np.flatnonzero(loc[: self._n])
        for slot in (int(s) for s in held):  # (an int at a time: no list of every slot)
            old = int(loc[slot])
            off, size = old >> LEN_BITS, self._size(spill, old)
            data = os.pread(spill.fd, size, off)
            done = 0
            while done < size:
                done += os.pwrite(fresh.fd, memoryview(data)[done:], end + done)
            new_loc[slot] = end << LEN_BITS | (old & LONG)
            live += size
            end += size
        self._state = (fresh, new_loc)
        self._end, self._live = end, live

    # -- size --------------------------------------------------------------------------------
    def nbytes(self, sample: int = 0) -> int:
        """Bytes resident in the process: the slots' locations and the shapes (the rows are in
        the file: ``file_bytes``). ``sample`` is accepted for the in-memory store's signature."""
        del sample
        return int(self._state[1].nbytes) + sum(len(s) * 8 + 56 for s in self._shapes)

    def file_bytes(self) -> int:
        """Bytes of the side file (live rows and rewritten ones not yet compacted away)."""
        return self._end
