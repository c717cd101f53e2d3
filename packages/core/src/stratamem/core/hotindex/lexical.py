"""In-memory lexical index of one table: BM25 over stemmed tokens, idf weights, substring probes.

Analysis follows LanceDB's FTS defaults (simple tokenizer, lower case, ASCII folding, stop words
removed, English stemming) so the channel ranks like the native index it replaces, plus CJK bigrams as tokens (the
native tokenizer keeps a CJK run whole, so bigram queries never matched it). Postings are
``array`` buffers kept in ascending slot order, read as numpy views. BM25 top-k is exact and
pruned (MaxScore): terms whose upper bounds cannot lift a document into the top k are only looked
up for the few documents that can still make it, so a query walks the postings of its rare terms
and not the full postings of its common ones (``bm25_exhaustive`` is the reference it equals).
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import snowballstemmer

_TEXT: Any = None
#: weighted tokens added to a BM25 query (token -> multiplier of its idf)
Extra = Mapping[str, float] | None


def _text() -> Any:
    """The query-side analysis (``retrieval.text``), imported on first use: importing the
    ``retrieval`` package at module load would close an import cycle (retrieval → hotindex)."""
    global _TEXT
    if _TEXT is None:
        from stratamem.core.retrieval import text

        _TEXT = text
    return _TEXT


_WORD = re.compile(r"[^\W_]+")
_MAX_TOKEN = 40
_stemmer = snowballstemmer.stemmer("english")
K1, B = 1.2, 0.75


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def _fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    norm = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in norm if not unicodedata.combining(c))


#: LanceDB's English stop list (NLTK's, apostrophe pieces included), probed from its FTS index
_FTS_STOP_TEXT = """
    a about after again against ain all am an and are aren as at be been being below between
    both but by can couldn d did didn do doesn doing don down each few for from further had hadn
    has hasn have haven having he her here hers herself him himself his how i if in into is isn
    it its itself just ll m ma me mightn more most mustn my myself needn no nor not now o of off
    on or other our ours out over own re s same shan she should shouldn so some such t than that
    the their theirs them then there these they this those through to too under until up ve was
    wasn we were weren what when where which while who whom will with won wouldn y you your
    yours yourself
"""
FTS_STOP_WORDS = frozenset(_FTS_STOP_TEXT.split())


#: word -> its index token (None when dropped): analysis of a word is a pure function of it
_WORD_TOKEN: dict[str, str | None] = {}
_UNSEEN = "\x00"  # never a word


def _word_token(word: str) -> str | None:
    """The token a lower-cased, folded word indexes as (None: too long, a CJK run, a stop word)."""
    tok: str | None = None
    if len(word) <= _MAX_TOKEN and not _text().CJK_RUN.match(word):
        # the English stemmer leaves ASCII digits as they are (checked over 300k numbers), and
        # numbers are most of a large table's distinct words
        tok = word if word.isascii() and word.isdigit() else _stem(word)
        if tok in FTS_STOP_WORDS:
            tok = None
    if len(_WORD_TOKEN) >= 500_000:  # a long-lived service meets unbounded junk words
        _WORD_TOKEN.clear()
    _WORD_TOKEN[word] = tok
    return tok


def analyze(text: str) -> list[str]:
    """Index tokens of a document: stemmed words (CJK runs excluded) plus CJK bigrams.

    Like LanceDB's analyzer, a word is stemmed first and the *stem* is checked against the stop
    list ("having" -> "have" is dropped, "because" -> "becaus" is kept): documents get the same
    lengths, so BM25 ranks as the native index does (measured on LoCoMo: our wider query-side stop
    list on the document side shifted near-ties and cost 0.7 pt of R@5 against the LanceDB path).
    """
    low = _fold(text or "")
    out: list[str] = []
    for w in _WORD.findall(low):
        tok = _WORD_TOKEN.get(w, _UNSEEN)  # (one lookup: another thread may clear the cache)
        if tok is _UNSEEN:
            tok = _word_token(w)
        if tok is not None:
            out.append(tok)
    t = _text()
    if t.CJK_RUN.search(low):
        out.extend(t.cjk_bigrams(low))
    return out


#: ASCII bytes to their lower case, other word bytes (``_WORD`` on ASCII: letters, digits) kept,
#: the text separator \x01 kept, every other byte a space
_ASCII_WORDS = bytes(
    c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or 48 <= c <= 57 or c == 1 else 32
    for c in range(256)
)


def analyze_many(texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``analyze`` of every text as arrays: (token names, each token's id, the index of the text
    it came from), tokens of one text in order, texts in order.

    The ASCII texts are lower-cased and split in one pass over their joined bytes, their words
    dictionary-encoded by Arrow and each distinct word analysed once (a load's texts repeat their
    words: ~30 words a text, a few distinct ones each); other texts go through ``analyze``.
    """
    vocab: dict[str, int] = {}
    names: list[str] = []

    def tid(tok: str) -> int:
        got = vocab.get(tok)
        if got is None:
            got = vocab[tok] = len(names)
            names.append(tok)
        return got

    plain = [i for i, t in enumerate(texts) if t.isascii() and "\x01" not in t]
    tids: list[np.ndarray] = []
    where: list[np.ndarray] = []
    if plain:
        blob = "\x01".join([texts[i] for i in plain]).encode("ascii")
        words = blob.translate(_ASCII_WORDS).replace(b"\x01", b" \x01 ").split()
        enc = pc.dictionary_encode(pa.array(words, type=pa.binary()))
        code = np.empty(len(enc.dictionary), dtype=np.int64)
        for i, raw in enumerate(enc.dictionary.to_pylist()):
            if raw == b"\x01":
                code[i] = -2
                continue
            w = raw.decode("ascii")
            tok = _WORD_TOKEN.get(w, _UNSEEN)
            if tok is _UNSEEN:
                tok = _word_token(w)
            code[i] = -1 if tok is None else tid(tok)
        ids = code[np.asarray(enc.indices, dtype=np.int64)]
        text_no = np.cumsum(ids == -2)  # the k-th text of ``plain`` follows k separators
        keep = ids >= 0
        tids.append(ids[keep])
        where.append(np.asarray(plain, dtype=np.int64)[text_no[keep]])
    if len(plain) < len(texts):
        rest = sorted(set(range(len(texts))) - set(plain))
        for i in rest:
            toks = analyze(texts[i])
            tids.append(np.array([tid(t) for t in toks], dtype=np.int64))
            where.append(np.full(len(toks), i, dtype=np.int64))
    if not tids:
        return names, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return names, np.concatenate(tids), np.concatenate(where)


def query_tokens(terms: Iterable[str], *, unique: bool = True) -> list[str]:
    """Tokens of the query's content terms (stop words already removed), deduplicated unless
    ``unique`` is False: BM25 scores a token once per occurrence in the query, as LanceDB's FTS
    does ("dogs … dog" weighs "dog" twice)."""
    out: list[str] = []
    for term in terms:
        for tok in analyze(term) if not _text().CJK_RUN.fullmatch(term) else [term]:
            if not unique or tok not in out:
                out.append(tok)
    return out


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def _contrib(w: float, tfs: np.ndarray, dl: np.ndarray, avg: float) -> np.ndarray:
    """One term's BM25 contribution per posting, float32: the one expression both scorers use, so
    the pruned path's sums are bit-identical to the exhaustive ones (same operands, same order)."""
    out: np.ndarray = w * tfs * (K1 + 1) / (tfs + K1 * (1 - B + B * dl / avg))
    return out


#: below this many postings in all the query's terms together, score them all (nothing to prune)
PRUNE_MIN_POSTINGS = 16384
#: a term's cached upper bound is kept from this many postings on (shorter ones: computed per query)
_BOUND_MIN_DF = 1024
#: relative slack on bounds and thresholds: float32 sums in another order differ in the last bits
_SLACK = 1e-4


def _kth(vals: np.ndarray, k: int) -> float:
    """A floor under the k-th best of ``vals`` (0 with fewer than k values), less the slack."""
    if len(vals) < k:
        return 0.0
    return float(np.partition(vals, len(vals) - k)[len(vals) - k]) * (1 - _SLACK)


class Lexical:
    """Postings per token over the table's slots; a removed slot's postings are dropped eagerly."""

    def __init__(self) -> None:
        self._slots: dict[str, array[int]] = {}
        self._tfs: dict[str, array[float]] = {}
        self._len = array("f")
        self._total = 0.0
        self._docs = 0
        self._score = np.zeros(0, dtype=np.float32)
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
                sl = self._slots[tok] = array("i")
                self._tfs[tok] = array("f")
            if not sl or sl[-1] < slot:
                sl.append(slot)
                self._tfs[tok].append(float(tf))
            else:  # a rewritten slot: keep the postings ascending (lookups bisect them)
                at = bisect.bisect_left(sl, slot)
                sl.insert(at, slot)
                self._tfs[tok].insert(at, float(tf))
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
        for tid, a, b in zip(heads, starts, stops, strict=True):
            tok = names[tid]
            self._bound.pop(tok, None)  # recomputed from the postings on the next query
            sl = self._slots.get(tok)
            if sl is None:
                sl = self._slots[tok] = array("i")
                self._tfs[tok] = array("f")
            sl.frombytes(slots[a:b].tobytes())
            self._tfs[tok].frombytes(tfs[a:b].tobytes())

    def remove(self, slot: int, text: str) -> None:
        """Forget ``slot`` (``text`` is what it was indexed with)."""
        if slot >= len(self._len) or self._len[slot] == 0:
            return
        self._total -= self._len[slot]
        self._len[slot] = 0.0
        self._docs -= 1
        for tok in set(analyze(text)):
            sl = self._slots.get(tok)
            if sl is None:
                continue
            at = bisect.bisect_left(sl, slot)
            if at == len(sl) or sl[at] != slot:
                continue
            if len(sl) == 1:
                del self._slots[tok], self._tfs[tok]
                self._bound.pop(tok, None)
                continue
            del sl[at]
            del self._tfs[tok][at]

    # -- reads -------------------------------------------------------------------------------
    @property
    def docs(self) -> int:
        return self._docs

    def postings(self, tok: str) -> tuple[np.ndarray, np.ndarray] | None:
        sl = self._slots.get(tok)
        if sl is None or not len(sl):
            return None
        return np.frombuffer(sl, dtype=np.int32), np.frombuffer(self._tfs[tok], dtype=np.float32)

    def df(self, tok: str) -> int:
        sl = self._slots.get(tok)
        return len(sl) if sl is not None else 0

    def _buffer(self) -> np.ndarray:
        if len(self._score) < len(self._len):
            self._score = np.zeros(max(len(self._len), 2 * len(self._score)), dtype=np.float32)
        return self._score

    def bm25_exhaustive(
        self, tokens: Sequence[str], mask: np.ndarray, limit: int, extra: Extra = None
    ) -> list[tuple[int, float]]:
        """Okapi BM25 (OR over ``tokens``, then each ``extra`` token × its weight) of the slots
        passing ``mask``: every posting of every term scored (the reference ``bm25`` equals)."""
        if not tokens or self._docs == 0 or limit <= 0:
            return []
        avg = self._total / self._docs
        lens = np.frombuffer(self._len, dtype=np.float32)
        score = self._buffer()
        touched = []
        for tok, mult in [*((t, 1.0) for t in tokens), *(extra or {}).items()]:
            got = self.postings(tok)
            if got is None:
                continue
            slots, tfs = got
            score[slots] += _contrib(idf(self._docs, len(slots)) * mult, tfs, lens[slots], avg)
            touched.append(slots)
        return self._top(score, touched, mask, limit)

    def bm25(
        self, tokens: Sequence[str], mask: np.ndarray, limit: int, extra: Extra = None
    ) -> list[tuple[int, float]]:
        """Okapi BM25 (OR over ``tokens``) of the slots passing ``mask``, best first (ties: lower
        slot first): exactly ``bm25_exhaustive``'s list, found by MaxScore pruning. ``extra``:
        weighted tokens (query expansion, none of ``tokens``), pruned like the others.

        Terms are taken in decreasing upper bound (idf × the largest per-posting factor). Each
        taken ("essential") term's postings are scored into the buffer, and the k-th best partial
        score among the masked slots it touched is a floor under the final k-th score. Once the
        bounds of the terms not yet taken sum below that floor, no slot outside the taken postings
        can enter the top k, and a slot inside them only if its partial score plus those bounds
        reaches the floor: the few that do are scored exactly, every term looked up by bisection
        in query order (bit-identical sums to the exhaustive scorer's).
        """
        if not tokens or self._docs == 0 or limit <= 0:
            return []
        extra = {t: w for t, w in (extra or {}).items() if t not in tokens}
        uniq = list(dict.fromkeys([*tokens, *extra]))
        post = {tok: got for tok in uniq if (got := self.postings(tok)) is not None}
        if sum(len(g[0]) for g in post.values()) < max(PRUNE_MIN_POSTINGS, 8 * limit):
            return self.bm25_exhaustive(tokens, mask, limit, extra)
        n_docs = self._docs
        avg = self._total / n_docs
        lens = np.frombuffer(self._len, dtype=np.float32)
        weight = {tok: idf(n_docs, len(post[tok][0])) for tok in post}
        count: dict[str, float] = dict(Counter(t for t in tokens if t in post))
        count.update((t, w) for t, w in extra.items() if t in post)
        ub = {
            tok: count[tok] * weight[tok] * self._factor_bound(tok, post[tok], lens, avg)
            for tok in post
        }
        order = sorted(post, key=lambda t: (-ub[t], len(post[t][0]), t))
        rest = [0.0] * (len(order) + 1)  # rest[i]: bounds of order[i:] summed
        for i in range(len(order) - 1, -1, -1):
            rest[i] = rest[i + 1] + ub[order[i]] * (1 + _SLACK)
        score = self._buffer()
        touched: list[np.ndarray] = []
        floor = 0.0
        taken = 0
        reach = 0.0  # the taken terms' bounds summed: no partial score exceeds it
        try:
            for tok in order:  # essential terms: every posting scored into the buffer
                slots, tfs = post[tok]
                score[slots] += _contrib(count[tok] * weight[tok], tfs, lens[slots], avg)
                touched.append(slots)
                taken += 1
                reach += ub[tok] * (1 + _SLACK)
                if reach <= rest[taken] and taken < len(order):
                    continue  # no floor this low can stop the walk: skip computing it
                inside = slots[slots < len(mask)]
                floor = max(floor, _kth(score[inside[mask[inside]]], limit))
                if rest[taken] < floor:
                    break
            need = floor - rest[taken]  # a slot whose partial score is below this cannot make it
            keep = [s[score[s] >= need] for s in touched] if need > 0 else touched
            cand = keep[0]
            if len(keep) > 1:  # merge: sort, dedupe (np.unique is much slower on small arrays)
                cand = np.concatenate(keep)
                cand.sort()
                cand = cand[np.concatenate(([True], cand[1:] != cand[:-1]))]
            cand = cand[cand < len(mask)]
            cand = cand[mask[cand]]
            part = score[cand]
        finally:
            for s in touched:  # the buffer is reused by the next query
                score[s] = 0.0
        for tok in order[taken:]:  # the rest: scored for the candidates only, pruning as it goes
            slots, tfs = post[tok]
            w = count[tok] * weight[tok]
            if len(cand) * 4 > len(slots):  # nearly as many candidates as postings: scatter
                score[slots] = _contrib(w, tfs, lens[slots], avg)
                part += score[cand]
                score[slots] = 0.0
            else:
                pos = np.searchsorted(slots, cand)
                pos[pos == len(slots)] = 0
                hit = slots[pos] == cand
                sel = pos[hit]
                part[hit] += _contrib(w, tfs[sel], lens[slots[sel]], avg)
            taken += 1
            floor = max(floor, _kth(part, limit))
            alive = part + rest[taken] >= floor
            cand, part = cand[alive], part[alive]
        plain = [(t, 1.0) for t in tokens]
        acc = self._exact([*plain, *extra.items()], post, weight, cand, lens, avg)
        return self._rank(acc, cand, limit)

    def _factor_bound(
        self, tok: str, got: tuple[np.ndarray, np.ndarray], lens: np.ndarray, avg: float
    ) -> float:
        """An upper bound of tf·(K1+1)/(tf + K1·(1-B+B·dl/avg)) over ``tok``'s postings.

        Cached for long postings at a reference average length; the factor grows with ``avg`` by
        at most ``avg / reference`` (and shrinks when it falls), so a cached bound stays valid
        scaled by that ratio; past ×1.25 (or under ×0.8: loose) the cache starts over at the current
        average.
        """
        slots, tfs = got
        if len(slots) < _BOUND_MIN_DF:
            dl = lens[slots].astype(np.float64)
            return float(np.max(tfs * (K1 + 1) / (tfs + K1 * (1 - B + B * dl / avg))))
        if not 0.8 * self._bound_avg <= avg <= 1.25 * self._bound_avg:
            self._bound.clear()
            self._bound_avg = avg
        bound = self._bound.get(tok)
        if bound is None:
            dl = lens[slots].astype(np.float64)
            ref = self._bound_avg
            bound = float(np.max(tfs * (K1 + 1) / (tfs + K1 * (1 - B + B * dl / ref))))
            self._bound[tok] = bound
        return bound * max(1.0, avg / self._bound_avg)

    def _exact(
        self,
        tokens: Sequence[tuple[str, float]],
        post: dict[str, tuple[np.ndarray, np.ndarray]],
        weight: dict[str, float],
        cand: np.ndarray,
        lens: np.ndarray,
        avg: float,
    ) -> np.ndarray:
        """BM25 of the ascending slots ``cand``: each (query token, multiplier), in order, repeats
        included, looked up by bisection in its postings, summed as the exhaustive scorer sums."""
        acc = np.zeros(len(cand), dtype=np.float32)
        if not len(cand):
            return acc
        hits: dict[tuple[str, float], tuple[np.ndarray, np.ndarray]] = {}
        for tok, mult in tokens:
            got = post.get(tok)
            if got is None:
                continue
            where = hits.get((tok, mult))
            if where is None:
                slots, tfs = got
                pos = np.searchsorted(slots, cand)
                pos[pos == len(slots)] = 0
                hit = slots[pos] == cand
                sel = pos[hit]
                contrib = _contrib(weight[tok] * mult, tfs[sel], lens[slots[sel]], avg)
                where = hits[(tok, mult)] = (hit, contrib)
            acc[where[0]] += where[1]
        return acc

    @staticmethod
    def _rank(vals: np.ndarray, cand: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """The best ``limit`` (slot, score) pairs: score descending, then slot ascending."""
        live = vals > 0
        cand, vals = cand[live], vals[live]
        if len(cand) > limit:
            kth = np.partition(vals, len(vals) - limit)[len(vals) - limit]
            part = np.flatnonzero(vals >= kth)  # every tie of the k-th score, then by slot
            cand, vals = cand[part], vals[part]
        order = np.lexsort((cand, -vals))[:limit]
        return [(int(cand[i]), float(vals[i])) for i in order]

    def weighted(
        self, tokens: Sequence[str], weights: Sequence[float], mask: np.ndarray, limit: int
    ) -> list[tuple[int, float]]:
        """Share of the total ``weights`` whose token a slot holds (the pattern channel)."""
        total = float(sum(weights))
        if total <= 0 or limit <= 0:
            return []
        score = self._buffer()
        touched = []
        for tok, w in zip(tokens, weights, strict=True):
            got = self.postings(tok)
            if got is not None:
                score[got[0]] += w / total
                touched.append(got[0])
        return self._top(score, touched, mask, limit)

    @staticmethod
    def _top(
        score: np.ndarray, touched: list[np.ndarray], mask: np.ndarray, limit: int
    ) -> list[tuple[int, float]]:
        if not touched:
            return []
        if len(touched) == 1:
            cand = touched[0]
        elif 2 * sum(len(x) for x in touched) < len(score):  # merge the postings: sort, dedupe
            # (np.unique measured 10-100x slower here: 1.4 ms vs 13 us for 5,000 slots)
            cand = np.concatenate(touched)
            cand.sort()
            cand = cand[np.concatenate(([True], cand[1:] != cand[:-1]))]
        else:  # postings as long as the table: every touched slot scores > 0, one linear pass
            cand = np.flatnonzero(score)
        vals = score[cand].copy()
        score[cand] = 0.0  # the buffer is reused by the next query
        inside = cand < len(mask)
        cand, vals = cand[inside], vals[inside]
        keep = mask[cand]
        return Lexical._rank(vals[keep], cand[keep], limit)


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
