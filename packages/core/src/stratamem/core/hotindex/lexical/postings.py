"""Postings per token over a table's slots (ascending slot order, read as numpy views), the
documents' lengths, and the cache of long postings' BM25 factor bounds that writes keep valid.

Most of a large table's tokens have one posting (a soak trace brings one token no other trace has:
9,967 of 10,509 tokens at 10k traces). Such a token is held as one int packing its slot and term
frequency in a side file (``singlefile.py``: no bytes per token resident; ``singles.py``'s
arrays ~45 B a token with their room, a dict entry of its string and int ~180 B). Its second
posting moves it to the array form, and removals that bring it back to one posting pack it again.

Term frequencies are held as one byte a posting (``array('B')``: 144k of 10k soak traces'
postings, none above 3), a token widened to float32 (``array('f')``) only if one of its postings'
counts exceeds 255; readers get the bytes as a uint8 view and convert what they score (``bm25.
contrib``: exact, so the float32 sums are the same bits).

A token's postings beyond its newest few are in a side file (``postfile.py``): its arrays here
hold the newest (fewer than ``SPILL``), all above the file's, and a read joins the two. A token
widened to float32 is held here whole.
"""

from __future__ import annotations

import bisect
import sys
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from stratamem.core.hotindex.lexical import postfile
from stratamem.core.hotindex.lexical.analysis import analyze, analyze_many
from stratamem.core.hotindex.lexical.bm25 import K1, B
from stratamem.core.hotindex.lexical.postfile import PostFile
from stratamem.core.hotindex.lexical.singlefile import SingleFile

_SLOT_BITS = 31
_SLOT_MASK = (1 << _SLOT_BITS) - 1


def _pack(slot: int, tf: float) -> int:
    """One posting as one int: (tf - 1) above the slot's 31 bits (tf is a count, >= 1), so with
    the usual tf of 1 a slot below 2**30 packs into a one-digit int (28 bytes)."""
    return (int(tf) - 1) << _SLOT_BITS | slot


def _unpack(packed: int) -> tuple[int, float]:
    return packed & _SLOT_MASK, float((packed >> _SLOT_BITS) + 1)


#: the largest term frequency a token's one-byte array holds; a larger one widens it to float32
_TF_BYTE_MAX = 255


def _tf_array(tfs: Sequence[float] | np.ndarray = ()) -> array[Any]:
    """Term frequencies as bytes, or as float32 if one exceeds ``_TF_BYTE_MAX``."""
    vals = np.asarray(tfs, dtype=np.float32)
    if len(vals) and float(vals.max()) > _TF_BYTE_MAX:
        return array("f", vals.tobytes())
    return array("B", vals.astype(np.uint8).tobytes())


def _tf_view(tfs: array[Any]) -> np.ndarray:
    """A token's term frequencies as a numpy view (uint8, or float32 for a widened token)."""
    return np.frombuffer(tfs, dtype=np.uint8 if tfs.typecode == "B" else np.float32)


class Postings:
    """Postings per token over the table's slots; a removed slot's postings are dropped eagerly."""

    def __init__(self, directory: Path | str | None = None) -> None:
        #: token -> its postings' slots (ascending) and term frequencies: tokens with two or more
        #: (the newest of them, if ``_file`` holds the older: then fewer than ``SPILL``, maybe none)
        self._slots: dict[str, array[int]] = {}
        self._tfs: dict[str, array[Any]] = {}  # ``array('B')``, or ``'f'`` past a tf of 255
        #: token -> its one posting, packed (``_pack``): tokens with exactly one, in a side file
        #: (``singlefile.py``; ``singles.py`` held them in memory)
        self._one = SingleFile(directory)
        #: the older postings of tokens with many (``postfile.py``), in a side file
        self._file = PostFile(directory)
        self._len = array("f")
        self._total = 0.0
        self._docs = 0
        #: token -> max over its postings of tf·(K1+1)/(tf + K1·(1-B+B·dl/avg)) at ``_bound_avg``
        #: (long postings only; an add raises it, a remove leaves it: still an upper bound)
        self._bound: dict[str, float] = {}
        self._bound_avg = 0.0

    # -- writes ------------------------------------------------------------------------------
    def add(self, slot: int, text: str) -> None:
        toks = analyze(text)
        while len(self._len) <= slot:
            self._len.append(0.0)
        self._len[slot] = float(max(1, len(toks)))
        self._total += self._len[slot]
        self._docs += 1
        dl = self._len[slot]
        for tok, tf in Counter(toks).items():
            sl = self._slots.get(tok)
            if sl is None:
                one = self._one.pop(tok)
                if one is None:
                    self._one.put(tok, _pack(slot, tf))
                    self._raise_bound(tok, tf, dl)
                    continue
                was, was_tf = _unpack(one)
                sl = self._slots[tok] = array("i", (was,))  # a second posting: the array form
                self._tfs[tok] = _tf_array((was_tf,))
            tfa = self._tfs[tok]
            if tf > _TF_BYTE_MAX and tfa.typecode == "B":
                sl, tfa = self._widen(tok)
            val = tf if tfa.typecode == "B" else float(tf)
            if tok in self._file and slot < self._file.last(tok):
                self._file_insert(tok, slot, int(tf))  # a rewritten slot among the file's
            elif not sl or sl[-1] < slot:
                sl.append(slot)
                tfa.append(val)
            else:  # a rewritten slot: keep the postings ascending (lookups bisect them)
                at = bisect.bisect_left(sl, slot)
                sl.insert(at, slot)
                tfa.insert(at, val)
            self._maybe_spill(tok, sl, tfa)
            self._raise_bound(tok, tf, dl)

    def _widen(self, tok: str) -> tuple[array[int], array[Any]]:
        """``tok``'s term frequencies as float32, its postings all in memory (a count over 255)."""
        sl, tfa = self._slots[tok], self._tfs[tok]
        got = self._file.take(tok)
        if got is not None:
            sl = self._slots[tok] = array("i", got[0].tobytes() + sl.tobytes())
            tfa = array("B", got[1].tobytes() + tfa.tobytes())
        tfa = self._tfs[tok] = array("f", map(float, tfa))
        return sl, tfa

    def _file_insert(self, tok: str, slot: int, tf: int) -> None:
        got = self._file.read(tok)
        assert got is not None
        at = int(np.searchsorted(got[0], slot))
        self._file.replace(tok, np.insert(got[0], at, slot), np.insert(got[1], at, tf))

    def _maybe_spill(self, tok: str, sl: array[int], tfa: array[Any]) -> None:
        """Move ``tok``'s postings in memory to the file once there are ``SPILL`` of them."""
        if len(sl) >= postfile.SPILL and tfa.typecode == "B":
            self._file.append(tok, sl, tfa)
            del sl[:], tfa[:]

    def _raise_bound(self, tok: str, tf: float, dl: float) -> None:
        """Keep ``tok``'s cached factor bound (if any) above its new posting's factor."""
        bound = self._bound.get(tok)
        if bound is not None:
            f = tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / self._bound_avg))
            if f > bound:
                self._bound[tok] = f

    def add_many(self, first: int, texts: Sequence[str]) -> None:
        """Index ``texts`` at slots ``first, first + 1, …`` (a bulk load: fresh slots, ascending).

        The same postings ``add`` would append one text at a time (per token: slots ascending,
        their term frequencies), built as arrays: token ids per text, one sort by (token, slot),
        one extend per token.
        """
        if not texts:
            return
        names, tid_arr, text_of = analyze_many(texts)
        lens = np.bincount(text_of, minlength=len(texts))
        end = first + len(texts)
        if len(self._len) < end:
            self._len.extend([0.0] * (end - len(self._len)))
        doc_len = np.maximum(lens, 1).astype(np.float32)
        self._len[first:end] = array("f", doc_len.tobytes())
        for v in doc_len.tolist():  # in slot order, as ``add`` sums them
            self._total += v
        self._docs += len(texts)
        if not len(tid_arr):
            return
        slot_arr = text_of + first
        key = tid_arr * (end + 1) + slot_arr  # (token, slot) pairs, counted: the tf
        uniq, tf = np.unique(key, return_counts=True)
        tids = uniq // (end + 1)
        slots = (uniq - tids * (end + 1)).astype(np.int32)
        tfs = tf.astype(np.float32)
        bounds = np.flatnonzero(np.diff(tids)) + 1
        starts = np.concatenate(([0], bounds)).tolist()
        stops = np.concatenate((bounds, [len(tids)])).tolist()
        heads = tids[starts].tolist()
        new_toks: list[str] = []  # tokens this batch brings with one posting
        new_one: list[int] = []
        for tid, a, b in zip(heads, starts, stops, strict=True):
            tok = names[tid]
            self._bound.pop(tok, None)  # recomputed from the postings on the next query
            sl = self._slots.get(tok)
            if sl is None:
                one = self._one.pop(tok)
                if one is None and b - a == 1:
                    new_toks.append(tok)
                    new_one.append(_pack(int(slots[a]), float(tfs[a])))
                    continue
                sl = self._slots[tok] = array("i")
                self._tfs[tok] = _tf_array()
                if one is not None:  # its slot is below the batch's: it comes first
                    was, was_tf = _unpack(one)
                    sl.append(was)
                    self._tfs[tok] = _tf_array((was_tf,))
            tfa = self._tfs[tok]
            if tfa.typecode == "B" and float(tfs[a:b].max()) > _TF_BYTE_MAX:
                sl, tfa = self._widen(tok)
            sl.frombytes(slots[a:b].tobytes())
            tfa.frombytes(
                tfs[a:b].astype(np.uint8 if tfa.typecode == "B" else np.float32).tobytes()
            )
            self._maybe_spill(tok, sl, tfa)
        self._one.put_many(new_toks, new_one)

    def remove(self, slot: int, text: str) -> None:
        """Forget ``slot`` (``text`` is what it was indexed with)."""
        self.remove_many([(slot, text)])

    def remove_many(self, items: Sequence[tuple[int, str]]) -> None:
        """Forget each ``(slot, text)`` (``text``: what the slot was indexed with). A token's
        record in the side file is rewritten once for the whole batch, not once per slot: a
        delete of many rows sharing common words would otherwise copy each record per row."""
        docs: list[tuple[int, set[str]]] = []
        for slot, text in items:
            if slot >= len(self._len) or self._len[slot] == 0:
                continue
            self._total -= self._len[slot]
            self._len[slot] = 0.0
            self._docs -= 1
            docs.append((slot, set(analyze(text))))
        filed = self._file_remove_many(docs)
        for slot, toks in docs:
            for tok in toks:
                self._forget(tok, slot, (tok, slot) in filed)

    def _file_remove_many(self, docs: Sequence[tuple[int, set[str]]]) -> set[tuple[str, int]]:
        """Take the slots out of their tokens' records in the file, one rewrite per token; the
        ``(token, slot)`` pairs that were there."""
        by_tok: dict[str, list[int]] = {}
        for slot, toks in docs:
            for tok in toks:  # the file holds a token's oldest postings: none above its last
                if tok in self._file and slot <= self._file.last(tok):
                    by_tok.setdefault(tok, []).append(slot)
        gone: set[tuple[str, int]] = set()
        for tok, slots in by_tok.items():
            got = self._file.read(tok)
            assert got is not None
            drop = np.isin(got[0], np.asarray(slots, dtype=np.int32))
            if not drop.any():
                continue
            gone.update((tok, int(s)) for s in got[0][drop].tolist())
            self._file.replace(tok, got[0][~drop], got[1][~drop])
        return gone

    def _forget(self, tok: str, slot: int, filed: bool) -> None:
        """Take ``slot`` out of ``tok``'s postings in memory (``filed``: it was in the file and
        is out of it already), then pack a token left with one posting (a cached bound stays
        valid) and drop one left with none (a batch can take a token's every posting)."""
        sl = self._slots.get(tok)
        if sl is None:
            one = self._one.get(tok)
            if one is not None and one & _SLOT_MASK == slot:
                self._one.pop(tok)
                self._bound.pop(tok, None)
            return
        at = bisect.bisect_left(sl, slot)
        if at < len(sl) and sl[at] == slot:
            del sl[at]
            del self._tfs[tok][at]
        elif not filed:
            return
        df = self.df(tok)
        if df == 1:
            got = self._file.take(tok)
            if got is not None:
                self._one.put(tok, _pack(int(got[0][0]), float(got[1][0])))
            else:
                self._one.put(tok, _pack(sl[0], self._tfs[tok][0]))
            del self._slots[tok], self._tfs[tok]
        elif df == 0:
            self._file.drop(tok)
            del self._slots[tok], self._tfs[tok]
            self._bound.pop(tok, None)

    # -- reads -------------------------------------------------------------------------------
    @property
    def docs(self) -> int:
        return self._docs

    def postings(self, tok: str) -> tuple[np.ndarray, np.ndarray] | None:
        """``tok``'s slots (int32, ascending) and term frequencies (uint8, float32 for a token
        with a count above 255: convert before arithmetic, as ``bm25.contrib`` does); None if it
        has none. Views of the held arrays (copies for a token with postings in the file)."""
        sl = self._slots.get(tok)
        if sl is not None:
            mem = np.frombuffer(sl, dtype=np.int32), _tf_view(self._tfs[tok])
            got = self._file.read(tok) if tok in self._file else None
            if got is None:
                return mem
            if not len(sl):
                return got
            return np.concatenate((got[0], mem[0])), np.concatenate((got[1], mem[1]))
        one = self._one.get(tok)
        if one is None:
            return None
        slot, tf = _unpack(one)
        return np.array([slot], dtype=np.int32), np.array([tf], dtype=np.float32)

    def df(self, tok: str) -> int:
        sl = self._slots.get(tok)
        if sl is not None:
            return len(sl) + self._file.count(tok)
        return 1 if self._one.has(tok) else 0

    def tokens(self) -> Iterator[str]:
        """Every token with a posting."""
        yield from self._slots
        yield from self._one

    def nbytes(self) -> int:
        """Bytes held (``sys.getsizeof`` of the containers, keys, arrays and packed postings)."""
        n = sys.getsizeof(self._slots) + sys.getsizeof(self._tfs)
        n += sum(sys.getsizeof(k) + sys.getsizeof(a) for k, a in self._slots.items())
        n += sum(sys.getsizeof(a) for a in self._tfs.values())
        n += self._one.nbytes() + self._file.nbytes()
        return n + sys.getsizeof(self._len)
