"""Tokens with exactly one posting, held in a per-process side file: no bytes per token resident.

Most of a large table's tokens have one posting (a soak trace brings a running number no other
trace has: 9,967 of 10,509 tokens at 10k traces). ``singles.py`` held them in compact arrays,
~45 B a token with the open-addressing table's room, a tenth of the hot index per soak trace
(soak-session17-hotidx.md). A token with one posting is read only when a query holds it, so the
same open-addressing table lives here in an anonymous side file (``rowfile.Spill``): a bucket
is ``_BUCKET`` bytes (the token's ``hash``, its packed posting plus one, where its UTF-8 bytes
start and their length), the bytes after the buckets' region in a blob of their own. A lookup
reads a bucket or two with ``os.pread`` (a miss: mostly one, the table is at most half full) and
a hit's bytes to confirm it; ``put`` and ``pop`` write a bucket. A removed token's bucket is
marked gone until the table is rebuilt (gone entries dropped, room doubled if needed), which
writes a fresh file and swaps it in whole. Readers and writers run on one thread (the engine's
event loop), as the in-memory postings' readers do.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from stratamem.core.hotindex.lexical import singles
from stratamem.core.hotindex.lexical.postfile import _pread, _pwrite
from stratamem.core.hotindex.rowfile import Spill

#: the table is rebuilt (gone entries dropped, room doubled if needed) past this share of buckets
#: used, to this share at most
_MAX_LOAD = 0.5
_TARGET_LOAD = 0.3
_MIN_SLOTS = 64
#: ``put_many`` of this many tokens or more rewrites the file instead of probing for each
_MANY = 256
#: a bucket: hash (int64), packed posting + 1 (int64; 0: empty, -1: gone), the bytes' offset in
#: the blob (uint64) and length (uint32), little-endian
_FMT = struct.Struct("<qqQI")
_BUCKET = _FMT.size
_DTYPE = np.dtype([("h", "<i8"), ("v", "<i8"), ("o", "<u8"), ("n", "<u4")])
_EMPTY, _GONE = 0, -1
#: the per-process string hash (a name of its own: tests make every token collide)
_hash = hash


def _encode(tok: str) -> bytes:
    return tok.encode("utf-8", "surrogatepass")


class SingleFile:
    """token -> one packed posting (a non-negative int below 2**63 - 1), in a side file."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = directory
        self._spill: Spill | None = None
        self._slots = _MIN_SLOTS
        self._used = 0  # buckets taken, gone ones included
        self._live = 0
        self._blob_end = 0  # bytes of tokens written after the buckets' region

    def __len__(self) -> int:
        return self._live

    def _fd(self) -> int:
        if self._spill is None:
            self._spill = Spill(self.directory)
        return self._spill.fd

    def _blob_at(self) -> int:
        return self._slots * _BUCKET

    def _find(self, tok: str) -> tuple[int, int, int]:
        """``tok``'s bucket and value (-1, 0: not held) and the first free bucket on its way."""
        if self._spill is None or not self._live:
            return -1, 0, -1
        fd, mask, h = self._spill.fd, self._slots - 1, _hash(tok)
        i = h & mask
        raw: bytes | None = None
        while True:
            bh, v, off, n = _FMT.unpack(_pread_bucket(fd, i))
            if v == _EMPTY:
                return -1, 0, i
            if bh == h and v != _GONE:
                if raw is None:
                    raw = _encode(tok)
                if n == len(raw) and _pread(fd, n, self._blob_at() + off) == raw:
                    return i, v - 1, -1
            i = (i + 1) & mask

    def __contains__(self, tok: object) -> bool:
        return isinstance(tok, str) and self._find(tok)[0] >= 0

    def has(self, tok: str) -> bool:
        return self._find(tok)[0] >= 0

    def get(self, tok: str) -> int | None:
        at, val, _free = self._find(tok)
        return val if at >= 0 else None

    def put(self, tok: str, packed: int) -> None:
        """Hold ``tok`` (not held) with its one posting."""
        if self._used + 1 > _MAX_LOAD * self._slots:
            self._rebuild()
        fd, mask, h = self._fd(), self._slots - 1, _hash(tok)
        i = h & mask
        while _FMT.unpack(_pread_bucket(fd, i))[1] != _EMPTY:
            i = (i + 1) & mask
        raw = _encode(tok)
        _pwrite(fd, raw, self._blob_at() + self._blob_end)
        _pwrite(fd, _FMT.pack(h, packed + 1, self._blob_end, len(raw)), i * _BUCKET)
        self._blob_end += len(raw)
        self._used += 1
        self._live += 1

    def pop(self, tok: str) -> int | None:
        """Take ``tok`` out; its posting, or None if it was not held."""
        at, val, _free = self._find(tok)
        if at < 0:
            return None
        _pwrite(self._fd(), struct.pack("<q", _GONE), at * _BUCKET + 8)
        self._live -= 1
        return val

    def _table(self) -> np.ndarray:
        """Every bucket, read at once."""
        if self._spill is None:
            return np.zeros(0, dtype=_DTYPE)
        data = _pread_padded(self._spill.fd, self._slots * _BUCKET, 0)
        return np.frombuffer(data, dtype=_DTYPE)

    def _blob(self) -> bytes:
        if self._spill is None or not self._blob_end:
            return b""
        return _pread(self._spill.fd, self._blob_end, self._blob_at())

    def __iter__(self) -> Iterator[str]:
        """Every token held (in no set order)."""
        table, blob = self._table(), self._blob()
        for b in table[table["v"] > 0].tolist():
            yield blob[b[2] : b[2] + b[3]].decode("utf-8", "surrogatepass")

    def put_many(self, toks: list[str], packed: list[int]) -> None:
        """Hold each of ``toks`` (none held, no two equal) with its posting: a bulk load's new
        tokens. If the table must grow for them anyway, they are placed with the live entries in
        one fresh file (sized with room to spare) instead of a probe each; if they fit, one
        ``put`` each (a rewrite per batch would make a load's cost grow with the square of its
        tokens)."""
        if len(toks) < _MANY or self._used + len(toks) <= _MAX_LOAD * self._slots:
            for tok, val in zip(toks, packed, strict=True):
                self.put(tok, val)
            return
        raws = [_encode(t) for t in toks]
        add = np.zeros(len(toks), dtype=_DTYPE)
        add["h"] = np.fromiter(map(_hash, toks), dtype=np.int64, count=len(toks))
        add["v"] = np.asarray(packed, dtype=np.int64) + 1
        add["n"] = np.fromiter(map(len, raws), dtype=np.uint32, count=len(raws))
        self._rebuild(add, b"".join(raws))

    def _rebuild(self, add: np.ndarray | None = None, add_bytes: bytes = b"") -> None:
        """A fresh file of the live entries (bytes copied), then ``add``'s (their bytes joined in
        ``add_bytes``), in a table sized for them."""
        table, blob = self._table(), self._blob()
        live = table[table["v"] > 0]
        pieces = [
            blob[o : o + n] for o, n in zip(live["o"].tolist(), live["n"].tolist(), strict=True)
        ]
        if add is not None:
            live = np.concatenate((live, add))
            pieces.append(add_bytes)
        slots = _MIN_SLOTS
        while slots * _TARGET_LOAD < len(live) + 1:
            slots *= 2
        new = np.zeros(slots, dtype=_DTYPE)
        if len(live):
            offs = np.concatenate(([0], np.cumsum(live["n"].astype(np.int64))[:-1]))
            keys = live["h"].astype(np.int64)
            pos = _place(keys, slots - 1)
            new["h"][pos] = keys
            new["v"][pos] = live["v"]
            new["o"][pos] = offs.astype(np.uint64)
            new["n"][pos] = live["n"]
        fresh = Spill(self.directory)
        _pwrite(fresh.fd, new.tobytes(), 0)
        joined = b"".join(pieces)
        _pwrite(fresh.fd, joined, slots * _BUCKET)
        self._spill, self._slots = fresh, slots
        self._used = self._live = len(live)
        self._blob_end = len(joined)

    def nbytes(self) -> int:
        """Bytes resident in the process: none per token (they are in the file: ``file_bytes``)."""
        return 0

    def file_bytes(self) -> int:
        return self._slots * _BUCKET + self._blob_end if self._spill is not None else 0


def _pread_bucket(fd: int, i: int) -> bytes:
    """Bucket ``i`` (all zeros, empty, if the file does not reach it yet)."""
    return _pread_padded(fd, _BUCKET, i * _BUCKET)


def _pread_padded(fd: int, size: int, at: int) -> bytes:
    data = os.pread(fd, size, at)
    while len(data) < size:
        more = os.pread(fd, size - len(data), at + len(data))
        if not more:
            return data.ljust(size, b"\0")
        data += more
    return data


def _place(keys: np.ndarray, mask: int) -> np.ndarray:
    """Each entry's bucket by linear probing in insertion order, as ``put`` one at a time would
    (``singles._place``'s rounds)."""
    table = np.zeros(mask + 1, dtype=np.int64)
    singles._place(table, keys, mask)
    return np.flatnonzero(table)[np.argsort(table[table > 0])]
