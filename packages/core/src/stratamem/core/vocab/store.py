"""The word store of one home: each vocabulary word's vector (int8), its *m* nearest words with
their cosines, and how many memories of each owner hold each word's token (vocab/counts.py).

Why cached lists: finding a query word's neighbours by one matrix product over the vocabulary is
37 ms at 100k memories (~40k words); a lookup in lists kept up to date at capture is ~0.1 ms
(bench/results/locomo.md, session 6). A new word costs one product over the vocabulary when it
is added (its list, and its place in the lists it enters), in the background writer.

On disk, in ``<home>/data/vocab/``: ``words.txt`` and ``vectors.i8`` / ``scales.f4`` are appended
as words arrive (the costly part, the embedding, is never lost); ``state.npz`` (lists, counts)
is rewritten now and then and at shutdown. A word appended after the last ``state.npz`` gets its
list again when the store is loaded. Counts are approximate by design (a deleted memory is not
subtracted; a crash loses the counts since the last save): they only decide which words are too
common or too rare to expand with.

Thread-safe: the writer adds words on an executor thread while queries read the lists.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numkong as nk
import numpy as np

from stratamem.core.storage.ownership import Scope
from stratamem.core.vocab.counts import Owner, OwnerCounts, ScopeCounts
from stratamem.core.vocab.words import token_of, tokens_of, words_of

#: rows of the vocabulary dequantised at once when new words are linked (bounded float32 scratch)
CHUNK = 8192
#: new words linked together (their scratch is group × CHUNK cosines)
LINK_GROUP = 256
_STATE = "state.npz"
#: the layout of ``state.npz`` (1: counts over the whole home, dropped at load: rebuilt per owner)
_FORMAT = 2


class WordStore:
    """Words, int8 vectors, neighbour lists and token counts; ``folder`` None keeps it in memory."""

    def __init__(self, folder: Path | None, dim: int, m: int = 8, model: str = "") -> None:
        self.folder = folder
        self.dim = dim
        self.m = m
        #: the embedding model the word vectors come from ("": not recorded)
        self.model = model
        self.lock = threading.RLock()
        self.words: list[str] = []
        #: each word's index token (its stem: stemming a cold word costs more than the lookup)
        self.tokens: list[str] = []
        self.index: dict[str, int] = {}
        self._q = np.zeros((0, dim), dtype=np.int8)
        self._scale = np.zeros(0, dtype=np.float32)
        self._nb = np.zeros((0, m), dtype=np.int32)
        self._nc = np.zeros((0, m), dtype=np.float16)
        #: per owner: memories observed and, per token, how many hold it (once per memory)
        self.counts = OwnerCounts()
        #: whether every stored memory has been observed (False: an old home, not yet built)
        self.complete = True
        self._dirty = False

    # -- size ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.words)

    @property
    def memories(self) -> int:
        """Memories observed, every owner's."""
        return self.counts.memories

    def nbytes(self) -> int:
        """The arrays' bytes (capacity included); the Python word and count entries come on top."""
        return int(self._q.nbytes + self._scale.nbytes + self._nb.nbytes + self._nc.nbytes)

    # -- reads ----------------------------------------------------------------------------------
    def visible(self, scope: Scope) -> ScopeCounts:
        """The token counts over the memories ``scope`` may read (the expansion's shares)."""
        with self.lock:
            return self.counts.visible(scope)

    def vector(self, word: str) -> np.ndarray | None:
        i = self.index.get(word)
        return None if i is None else self._deq(np.array([i]))[0]

    def vectors(self, ids: np.ndarray) -> np.ndarray:
        with self.lock:
            return self._deq(ids)

    def neighbours(self, word: str) -> tuple[list[str], np.ndarray, np.ndarray]:
        """``word``'s list: (words, their ids, cosines), nearest first; empty when unknown.
        ``tokens[id]`` is a neighbour's index token."""
        with self.lock:
            i = self.index.get(word)
            if i is None:
                return [], np.zeros(0, np.int32), np.zeros(0, np.float32)
            ids = self._nb[i]
            keep = ids >= 0
            ids, cos = ids[keep], self._nc[i][keep].astype(np.float32)
            return [self.words[j] for j in ids.tolist()], ids, cos

    def nearest(self, vec: np.ndarray, m: int) -> tuple[list[str], np.ndarray, np.ndarray]:
        """The ``m`` words nearest ``vec`` (a query word the home lacks), by one int8 pass over
        the vocabulary (~6 ms at 40k words), with the cosines its list would have had."""
        q, scale = _quantize(np.asarray(vec, dtype=np.float32)[None, :])
        with self.lock:
            n = len(self.words)
            if not n:
                return [], np.zeros(0, np.int32), np.zeros(0, np.float32)
            sims = _cos(q, scale, self._q[:n], self._scale[:n])[0]
            ids = np.argsort(-sims, kind="stable")[:m].astype(np.int32)
            return [self.words[j] for j in ids.tolist()], ids, sims[ids]

    # -- writes ---------------------------------------------------------------------------------
    def observe(self, memories: Sequence[tuple[Owner, str]]) -> list[str]:
        """Count new memories (each its owner and text) and return their words the store lacks,
        in order."""
        new: dict[str, None] = {}
        with self.lock:
            for owner, text in memories:
                words = words_of(text)
                self.counts.of(owner).add(tokens_of(words))
                for w in sorted(words):
                    if w not in self.index:
                        new[w] = None
            self._dirty = self._dirty or bool(memories)
        return list(new)

    def add(self, words: Sequence[str], vecs: np.ndarray) -> int:
        """Add ``words`` with their (unit) vectors: stored as int8, linked to their nearest words
        and entered in the lists they beat; appended to disk. Returns how many were new."""
        with self.lock:
            fresh = [(w, v) for w, v in zip(words, vecs, strict=True) if w not in self.index]
            fresh = list({w: v for w, v in fresh}.items())
            if not fresh:
                return 0
            q, scale = _quantize(np.stack([np.asarray(v, dtype=np.float32) for _, v in fresh]))
            start = len(self.words)
            self._grow(start + len(fresh))
            self._q[start : start + len(fresh)] = q
            self._scale[start : start + len(fresh)] = scale
            self._nb[start : start + len(fresh)] = -1
            self._nc[start : start + len(fresh)] = -np.inf
            for j, (w, _) in enumerate(fresh):
                self.index[w] = start + j
                self.words.append(w)
                self.tokens.append(token_of(w) or "")
            self._append(start, len(fresh))
            self._link(np.arange(start, start + len(fresh)))
            self._dirty = True
            return len(fresh)

    def _grow(self, need: int) -> None:
        cap = len(self._q)
        if need <= cap:
            return
        cap = max(need, 2 * cap, 256)

        def bigger(a: np.ndarray, fill: float) -> np.ndarray:
            out = np.full((cap, *a.shape[1:]), fill, dtype=a.dtype)
            out[: len(self.words)] = a[: len(self.words)]
            return out

        self._q = bigger(self._q, 0)
        self._scale = bigger(self._scale, 0)
        self._nb = bigger(self._nb, -1)
        self._nc = bigger(self._nc, -np.inf)

    def _deq(self, ids: np.ndarray) -> np.ndarray:
        out: np.ndarray = self._q[ids].astype(np.float32) * self._scale[ids, None]
        return out

    def _link(self, new: np.ndarray) -> None:
        """The lists of the words ``new`` (a run of ids), and their entry into the lists of the
        words before them: one product over the vocabulary per group of new words, in chunks."""
        for g in range(0, len(new), LINK_GROUP):
            self._link_group(new[g : g + LINK_GROUP])

    def _link_group(self, new: np.ndarray) -> None:
        n, m = int(new[-1]) + 1, self.m  # the words up to this group: later ones link to it
        wq, ws = np.ascontiguousarray(self._q[new]), self._scale[new]
        first = int(new[0])
        best_i = np.full((len(new), m), -1, dtype=np.int32)
        best_c = np.full((len(new), m), -np.inf, dtype=np.float32)
        for a in range(0, n, CHUNK):
            b = min(n, a + CHUNK)
            sims = _cos(self._q[a:b], self._scale[a:b], wq, ws)  # (chunk, new)
            for j, i in enumerate(new.tolist()):  # never one's own neighbour
                if a <= i < b:
                    sims[i - a, j] = -np.inf
            # the new words' lists: merge this chunk's best
            span = np.broadcast_to(np.arange(a, b, dtype=np.int32), (len(new), b - a))
            cand_i = np.concatenate((best_i, span), 1)
            cand_c = np.concatenate((best_c, sims.T), 1)
            best_i, best_c = _top(cand_i, cand_c, m)
            # the older words of the chunk: a new word enters a list it beats
            old = min(b, first) - a
            if old <= 0:
                continue
            s_old = sims[:old]
            beat = s_old.max(axis=1) > self._nc[a : a + old, m - 1].astype(np.float32)
            rows = np.flatnonzero(beat)
            if not len(rows):
                continue
            cur_i = self._nb[a + rows]
            cur_c = self._nc[a + rows].astype(np.float32)
            ins_i = np.broadcast_to(new.astype(np.int32), (len(rows), len(new)))
            top_i, top_c = _top(
                np.concatenate((cur_i, ins_i), 1), np.concatenate((cur_c, s_old[rows]), 1), m
            )
            self._nb[a + rows] = top_i
            self._nc[a + rows] = top_c.astype(np.float16)
        best_i[~np.isfinite(best_c)] = -1
        self._nb[new] = best_i
        self._nc[new] = best_c.astype(np.float16)

    # -- disk -----------------------------------------------------------------------------------
    def _append(self, start: int, count: int) -> None:
        if self.folder is None:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.folder / "words.txt", "a", encoding="utf-8") as f:
            part = zip(
                self.words[start : start + count], self.tokens[start : start + count], strict=True
            )
            f.write("".join(f"{w}\t{t}\n" for w, t in part))
        with open(self.folder / "vectors.i8", "ab") as f:
            f.write(self._q[start : start + count].tobytes())
        with open(self.folder / "scales.f4", "ab") as f:
            f.write(self._scale[start : start + count].tobytes())

    def save(self) -> None:
        """Write the lists and counts (atomically) when they changed."""
        if self.folder is None:
            return
        with self.lock:
            if not self._dirty and (self.folder / _STATE).exists():
                return
            n = len(self.words)
            owners = list(self.counts.owners.items())
            toks = [t for _, c in owners for t in c.df]
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = self.folder / (_STATE + ".tmp")
            with open(tmp, "wb") as f:
                np.savez(
                    f,
                    nb=self._nb[:n],
                    nc=self._nc[:n],
                    owners=np.array([o for o, _ in owners], dtype=np.str_).reshape(-1, 3),
                    owner_memories=np.array([c.memories for _, c in owners], dtype=np.int64),
                    owner_tokens=np.array([len(c.df) for _, c in owners], dtype=np.int64),
                    toks=np.array(toks, dtype=np.str_),
                    counts=np.array([v for _, c in owners for v in c.df.values()], dtype=np.int64),
                    meta=np.array(
                        [n, self.memories, int(self.complete), self.dim, self.m, _FORMAT]
                    ),
                    model=np.array([self.model], dtype=np.str_),
                )
            os.replace(tmp, self.folder / _STATE)
            self._dirty = False

    @classmethod
    def exists(cls, folder: Path) -> bool:
        return (folder / _STATE).exists()

    @classmethod
    def load(cls, folder: Path, dim: int, m: int = 8, model: str = "") -> WordStore:
        """The store in ``folder`` (empty and complete when there is none). Words appended after
        the last save get their lists now; a torn append is cut back to whole records. A store
        whose vectors come from another model or dimension (the home was re-embedded) is
        dropped and left incomplete: its words are embedded again by a build."""
        store = cls(folder, dim, m, model)
        if _other_model(folder, dim, model):
            for name in ("words.txt", "vectors.i8", "scales.f4", _STATE):
                (folder / name).unlink(missing_ok=True)
            store.complete = False
            store._dirty = True
            return store
        if not (folder / "words.txt").exists():
            return store
        lines = (folder / "words.txt").read_text(encoding="utf-8").splitlines()
        pairs = [line.partition("\t") for line in lines]
        q = _read(folder / "vectors.i8", np.int8)
        sc = _read(folder / "scales.f4", np.float32)
        n = min(len(lines), len(q) // dim, len(sc))
        if n < len(lines) or n * dim < len(q) or n < len(sc):  # torn: keep whole records only
            text = "".join(line + "\n" for line in lines[:n])
            (folder / "words.txt").write_text(text, encoding="utf-8")
            q[: n * dim].tofile(folder / "vectors.i8")
            sc[:n].tofile(folder / "scales.f4")
        store._grow(n)
        store._q[:n] = q[: n * dim].reshape(n, dim)
        store._scale[:n] = sc[:n]
        store.words = [w for w, _, _ in pairs[:n]]
        store.tokens = [t for _, _, t in pairs[:n]]
        store.index = {w: i for i, w in enumerate(store.words)}
        linked = 0
        state = folder / _STATE
        if state.exists():
            with np.load(state) as z:
                meta = z["meta"].tolist()
                if int(meta[4]) == m and int(meta[3]) == dim and int(meta[0]) <= n:
                    linked = int(meta[0])
                    store._nb[:linked] = z["nb"]
                    store._nc[:linked] = z["nc"]
                if len(meta) > 5 and int(meta[5]) == _FORMAT:
                    _load_counts(store.counts, z)
                    store.complete = bool(meta[2])
                else:  # home-wide counts: not split by owner, so counted again (a build)
                    store.complete = False
                    store._dirty = True
        if linked < n:
            if linked == 0:
                store._nb[:n] = -1
                store._nc[:n] = -np.inf
            store._link(np.arange(linked, n))
            store._dirty = True
        return store


def _other_model(folder: Path, dim: int, model: str) -> bool:
    """Whether the saved store's vectors come from another dimension or (both recorded) another
    model than the embedder's: word cosines with the query would then be noise, and vectors of
    another width would be cut into the wrong rows."""
    state = folder / _STATE
    if not state.exists():
        return False
    with np.load(state) as z:
        meta = z["meta"].tolist()
        saved = str(z["model"][0]) if "model" in z.files and len(z["model"]) else ""
    return int(meta[3]) != dim or bool(model and saved and saved != model)


def _load_counts(counts: OwnerCounts, z: Any) -> None:
    toks, vals = z["toks"].tolist(), z["counts"].tolist()
    at = 0
    for owner, mem, k in zip(
        z["owners"].tolist(), z["owner_memories"].tolist(), z["owner_tokens"].tolist(), strict=True
    ):
        c = counts.of((owner[0], owner[1], owner[2]))
        c.memories = int(mem)
        c.df = dict(zip(toks[at : at + k], vals[at : at + k], strict=True))
        at += k


def _quantize(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows as int8 codes and one scale each (the row ≈ codes × scale)."""
    scale = (np.maximum(np.abs(mat).max(axis=1), 1e-12) / 127.0).astype(np.float32)
    return np.clip(np.rint(mat / scale[:, None]), -127, 127).astype(np.int8), scale


def _cos(qa: np.ndarray, sa: np.ndarray, qb: np.ndarray, sb: np.ndarray) -> np.ndarray:
    """Cosines of int8 rows ``qa`` × ``qb`` (their dequantised dot products): exact int32 sums
    (numkong, as the hot index scans), so a list is the same whichever order words came in."""
    out = np.empty((len(qa), len(qb)), dtype=np.float32)
    if len(qa) and len(qb):
        nk.cdist(np.ascontiguousarray(qa), np.ascontiguousarray(qb), metric="dot", out=out)
    out *= sa[:, None]
    out *= sb[None, :]
    return out


def _read(path: Path, dtype: type) -> np.ndarray:
    return np.fromfile(path, dtype=dtype) if path.exists() else np.zeros(0, dtype=dtype)


def _top(ids: np.ndarray, cos: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the ``m`` highest cosines and their ids, highest first."""
    if cos.shape[1] > m:
        part = np.argpartition(-cos, m - 1, axis=1)[:, :m]
        ids = np.take_along_axis(ids, part, 1)
        cos = np.take_along_axis(cos, part, 1)
    order = np.argsort(-cos, axis=1, kind="stable")
    return np.take_along_axis(ids, order, 1).astype(np.int32), np.take_along_axis(cos, order, 1)


def texts_words(texts: Iterable[str]) -> set[str]:
    """Every vocabulary word of ``texts`` (a backfill's first pass)."""
    out: set[str] = set()
    for t in texts:
        out |= words_of(t)
    return out
