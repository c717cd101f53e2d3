"""The retrieval channels served from the in-memory hot index (no LanceDB round trip per query).

Same contract as ``channels``: each returns ``[(row, score)]`` best first, rows carrying their
vectors so candidates get cosines and MMR without a second read. Filters are the tier's own
(``TraceFilter`` for traces, a row predicate for the small learned tables) applied as a slot mask.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from stratamem.contract.dtos import Namespace
from stratamem.core.hotindex import HotTable, ScopedHotTable
from stratamem.core.hotindex.lexical import idf, query_tokens
from stratamem.core.retrieval.filters import TraceFilter
from stratamem.core.retrieval.text import doc_tokens, term_in
from stratamem.core.storage.ownership import Scope

Scored = list[tuple[dict[str, Any], float]]
Row = dict[str, Any]


#: per vector column, unit vectors a tier already made (slot -> vector: ``HotTable.vector``'s
#: ``keep``): its rows take them instead of reading the residuals again
Known = Mapping[str, Mapping[int, np.ndarray]]


def rows_of(
    t: HotTable,
    hits: Sequence[tuple[int, float]],
    memo: dict[int, Row] | None = None,
    known: Known | None = None,
) -> Scored:
    """Rows of the hit slots; ``memo`` shares one read-only row per slot across a tier's channels."""
    if memo is None:
        memo = {}
    need = [slot for slot, _ in hits if slot not in memo]
    if need:
        memo.update(zip(need, full_rows(t, need, known), strict=True))
    return [(memo[slot], score) for slot, score in hits]


def full_rows(t: HotTable, slots: Sequence[int], known: Known | None = None) -> list[Row]:
    """``t.full_row`` of each slot (distinct slots), the vector flags read once for all of them:
    a row's two vector lookups were half the cost of making it (~80 rows a query). A vector in
    ``known`` is taken as it is (the same bytes: ``HotTable.vector``), the others are read."""
    rows = t.rows
    idx = np.asarray(slots, dtype=np.int64)
    cols = []
    for c in t.vec_cols:
        has = t.has[c][idx]
        got = known.get(c) if known is not None else None
        if got:  # the vectors a channel already made; the rest read in one pass
            vecs = [got.get(s) if h else None for s, h in zip(slots, has.tolist(), strict=True)]
            miss = [i for i, v in enumerate(vecs) if v is None and has[i]]
            if miss:
                for i, v in zip(miss, t.unit_vectors(c, idx[miss]), strict=True):
                    vecs[i] = v
            cols.append((c, vecs))
            continue
        # the stored int8 rows as float32 unit vectors, one matrix (``HotTable.full_row``)
        mat = t.unit_vectors(c, idx[has])
        at = np.cumsum(has) - 1  # row i's place in ``mat`` when it has one
        cols.append(
            (c, [mat[a] if h else None for h, a in zip(has.tolist(), at.tolist(), strict=True)])
        )
    out: list[Row] = []
    for i, slot in enumerate(slots):
        row = rows[slot] or {}
        for c, vecs in cols:
            row[c] = vecs[i]
        row["_unit_vectors"] = True
        out.append(row)
    return out


def visible_df(t: ScopedHotTable) -> tuple[Callable[[str], int], int]:
    """How many of the rows the view's scope may read hold a token, and how many rows that is:
    a word common in one namespace's talk is not common in a home shared with others (the
    LanceDB path counts over a sample of the caller's rows, ``dense_query.read_sample``). The
    postings' lengths when the scope sees every row."""
    lex = t.lex
    cache = t.masks()
    mask = cache.get(_VISIBLE)
    if mask is None:
        mask = cache[_VISIBLE] = t.scope_mask(t.scope)
        mask.setflags(write=False)
    n = int(np.count_nonzero(mask))
    if n == lex.docs:
        return lex.df, n

    def df(tok: str) -> int:
        post = lex.postings(tok)
        if post is None:
            return 0
        slots = post[0]
        return int(np.count_nonzero(mask[slots[slots < len(mask)]]))

    return df, n


#: ``visible_df``'s key in a view's mask cache
_VISIBLE = ("visible_df",)


def trace_mask(
    t: HotTable, flt: TraceFilter, *, vector: bool = False, with_tags: bool = False
) -> np.ndarray:
    """``TraceFilter.where`` as a slot mask (the same predicate, vectorised). Read-only: one
    retrieval asks for the same mask from several channels, so it is computed once per table
    version."""
    key = (flt, vector, with_tags)
    cache = t.masks()
    got = cache.get(key)
    if got is None:
        got = _trace_mask(t, flt, vector=vector, with_tags=with_tags)
        got.setflags(write=False)
        if len(cache) > 32:
            cache.clear()
        cache[key] = got
    return got


def _trace_mask(t: HotTable, flt: TraceFilter, *, vector: bool, with_tags: bool) -> np.ndarray:
    n = t.n
    m = t.scope_mask(Scope.visible(flt.namespace or Namespace()))
    if not flt.include_low_value:
        m &= t.priority[:n] > 0
    if flt.session_id is not None:
        code = t.session_code.get(flt.session_id)
        if code is not None:
            in_s = t.session[:n] == code
            if flt.exclude_whole_session:
                m &= ~in_s
            else:
                drop = np.zeros(n, dtype=bool)
                if flt.exclude_from_ts is not None:
                    drop |= in_s & (t.ts[:n] >= flt.exclude_from_ts)
                if flt.exclude_user_texts:
                    texts = set(flt.exclude_user_texts)
                    for slot in np.flatnonzero(in_s & m):
                        row = t.rows[slot] or {}
                        if (row.get("user_text") or "") in texts:
                            drop[slot] = True
                m &= ~drop
    if vector and flt.min_ts is not None:
        m &= t.ts[:n] >= flt.min_ts
    if vector and with_tags and flt.tags:
        m &= t.tag_mask(flt.tags)
    return m


def owner_mask(t: HotTable, ns: Namespace | None, pred: Callable[[Row], bool]) -> np.ndarray:
    """Visible slots of a learned table that pass the tier's row predicate."""
    return t.where(t.scope_mask(Scope.visible(ns or Namespace())), pred)


def vector(
    t: HotTable,
    col: str,
    qvec: np.ndarray,
    mask: np.ndarray,
    limit: int,
    memo: dict[int, Row] | None = None,
) -> Scored:
    return rows_of(t, t.vector(col, qvec, mask, limit), memo)


def bm25(
    t: HotTable,
    terms: Sequence[str],
    mask: np.ndarray,
    limit: int,
    memo: dict[int, Row] | None = None,
) -> Scored:
    """BM25 over the stemmed query terms (OR, a repeated token counted each time), like the
    native FTS index it replaces."""
    return rows_of(t, bm25_hits(t, terms, mask, limit), memo)


def bm25_hits(
    t: HotTable,
    terms: Sequence[str],
    mask: np.ndarray,
    limit: int,
    extra: Mapping[str, float] | None = None,
) -> list[tuple[int, float]]:
    """``bm25`` as (slot, score) pairs, no row made; ``extra``: weighted tokens (query
    expansion, vocab/expand.py) scored inside the same pruned pass."""
    return t.lex.bm25(_tokens(tuple(terms), False), mask, limit, extra)


#: ``_tokens``' entries: a query makes one per term and one for its terms together, and a repeated
#: question finds its own; 4,096 (~0.4 KB each) kept filling for the soak's whole 10k turns
TOKENS_CACHED = 256


@lru_cache(maxsize=TOKENS_CACHED)
def _tokens(terms: tuple[str, ...], unique: bool) -> tuple[str, ...]:
    """``query_tokens`` of a query's terms (analysis is pure: repeated questions skip it)."""
    return tuple(query_tokens(terms, unique=unique))


def pattern_weights(
    t: HotTable | None, terms: Sequence[str], pending_texts: Sequence[str], max_terms: int
) -> tuple[list[str], list[float]]:
    """BM25 idf of each query term over the table's postings plus the pending rows."""
    terms = list(terms[:max_terms])
    if not terms:
        return [], []
    lows = [x.lower() for x in pending_texts]
    toks = [doc_tokens(x) for x in lows]
    n = (t.lex.docs if t is not None else 0) + len(pending_texts)
    weights = []
    for term in terms:
        df = sum(term_in(term, lows[i], toks[i]) for i in range(len(lows)))
        if t is not None:
            df += max((t.lex.df(tok) for tok in _tokens((term,), True)), default=0)
        weights.append(idf(max(n, 1), df))
    return terms, weights


def pattern(
    t: HotTable,
    terms: Sequence[str],
    weights: Sequence[float],
    mask: np.ndarray,
    limit: int,
    memo: dict[int, Row] | None = None,
) -> Scored:
    """Share of the query's idf weight a row matches, over the postings."""
    toks: list[str] = []
    ws: list[float] = []
    for term, w in zip(terms, weights, strict=True):
        got = _tokens((term,), True)
        toks.append(got[0] if got else "\x00")
        ws.append(w)
    return rows_of(t, t.lex.weighted(toks, ws, mask, limit), memo)


def substring(
    t: HotTable,
    needles: Sequence[str],
    mask: np.ndarray,
    limit: int,
    memo: dict[int, Row] | None = None,
) -> Scored:
    """Rows whose ``search_text`` contains a needle; score 1/(needle index + 1)."""
    out: list[tuple[int, float]] = []
    seen: set[int] = set()
    for i, needle in enumerate(needles):
        for slot in t.sub.find(t.text_chunks, needle, mask, limit):
            if slot not in seen:
                seen.add(slot)
                out.append((slot, 1.0 / (i + 1)))
    return rows_of(t, out[:limit], memo)


def session_neighbours(
    t: HotTable, mask: np.ndarray, seeds: Sequence[Mapping[str, Any]], window_ms: int
) -> list[Row]:
    """The stored rows right before and after each seed in its session (order: ts, then id) within
    ``window_ms``, among the slots passing ``mask``; ascending slots.

    ``expand.adjacency`` over these rows and the seeds gives every seed the same neighbours as over
    the seeds' whole session spans: the nearest row on each side is here, and nothing here lies
    between a seed and it. A bisection in the session's cached order, never a scan of the spans.
    """
    n = min(t.n, len(mask))
    picked: set[int] = set()
    for seed in seeds:
        sid = seed.get("session_id")
        if not sid:
            continue
        order = t.session_order(str(sid))
        if not order.slots:
            continue
        ts, slots = order.ts, order.slots
        at = int(seed.get("ts") or 0)
        i, same = order.place(at, str(seed.get("id")), t.ids.__getitem__)
        j = i - 1  # the nearest visible row below the seed's (ts, id)
        while j >= 0 and at - ts[j] <= window_ms:
            if slots[j] < n and mask[slots[j]]:
                picked.add(slots[j])
                break
            j -= 1
        j = i + 1 if same else i  # and above it
        while j < len(ts) and ts[j] - at <= window_ms:
            if slots[j] < n and mask[slots[j]]:
                picked.add(slots[j])
                break
            j += 1
    return full_rows(t, sorted(picked))
