"""Each tier's channels in one synchronous pass over the hot index (plus the pending journal rows).

The LanceDB-backed path in ``engine`` runs a dozen queries per tier; here a tier is a handful of
numpy operations on the same slots, so it runs inline on the event loop (no executor hop, no
gather). Floors, pools and merging with pending rows are the engine's, unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stratamem.core.hotindex import HotTable
from stratamem.core.retrieval import channels as ch
from stratamem.core.retrieval import hot_channels as hc
from stratamem.core.retrieval.candidates import Pool
from stratamem.core.retrieval.filters import TraceFilter
from stratamem.core.retrieval.query import CompiledQuery
from stratamem.core.retrieval.text import CJK_RUN

Row = dict[str, Any]
FTS_TERMS = 12


def _has_cjk(terms: Sequence[str]) -> bool:
    return any(CJK_RUN.match(t) for t in terms)


def table_pool(
    pool: Pool,
    t: HotTable,
    cq: CompiledQuery,
    qvec: np.ndarray | None,
    mask: np.ndarray,
    *,
    vec_floor: float,
    vec_limit: int,
    kw_limit: int,
) -> None:
    """Skills, experiences, world models: vector, BM25, (CJK) pattern and identifier channels."""
    v: ch.Scored = []
    if qvec is not None:
        v = [(r, s) for r, s in hc.vector(t, "vec", qvec, mask, vec_limit) if s >= vec_floor]
    f = ch.merge_scored(hc.bm25(t, cq.terms[:FTS_TERMS], mask, kw_limit), [], normalise=True)
    p: ch.Scored = []
    if _has_cjk(cq.terms):
        terms, weights = hc.pattern_weights(t, cq.terms, [], ch.MAX_PATTERN_TERMS)
        p = [(r, s) for r, s in hc.pattern(t, terms, weights, mask, kw_limit) if s >= 0.25]
    e = hc.substring(t, cq.identifiers, mask, kw_limit) if cq.identifiers else []
    pool.add_channel("vec", v)
    pool.add_channel("fts", ch.floor_relative(f, 0.0, 0.2))
    pool.add_channel("pattern", p)
    pool.add_channel("exact_identifier", e)


def expansion_tokens(cq: CompiledQuery) -> dict[str, float] | None:
    """The query expansion's added tokens and weights (None: no expansion)."""
    return {tok: w for _word, tok, w in cq.expansion} or None


def _floored(
    hits: Sequence[tuple[int, float]], absolute: float, ratio: float, limit: int
) -> list[tuple[int, float]]:
    """``floor_relative(merge_scored(rows of hits, []), …)[:limit]`` on slots: the same order
    (a stable sort by score of distinct slots) and the same cut, before any row is made."""
    ranked = sorted(hits, key=lambda h: -h[1])
    return ch.floor_relative(ranked, absolute, ratio)[:limit]  # type: ignore[arg-type,return-value]


@dataclass
class TraceChannels:
    vec_summary: ch.Scored
    vec_action: ch.Scored
    fts: ch.Scored
    pattern: ch.Scored
    structural: ch.Scored
    exact_identifier: ch.Scored
    #: slot -> the row made for it (the candidates' own row objects: their slots without an id
    #: lookup, retrieval/coverage.py)
    rows: Mapping[int, Row] | None = None


def trace_channels(
    t: HotTable | None,
    cq: CompiledQuery,
    qvec: np.ndarray | None,
    flt: TraceFilter,
    pending: Sequence[Row],
    *,
    min_sim: float,
    vec_pool: int,
    kw_pool: int,
    lexical_floor: float,
    k: int,
    personal: bool,
    use_action: bool,
    tag_mode: str,
    text_of: Callable[[Mapping[str, Any]], str],
) -> TraceChannels:
    """Tier 2's six channels over the hot traces table and the pending rows."""
    lex_pending = [r for r in pending if flt.accepts(r)]
    memo: dict[int, Row] = {}  # one row per slot across the channels
    known: dict[str, dict[int, np.ndarray]] = {}  # the vectors the vector channels made
    base = hc.trace_mask(t, flt) if t is not None else None
    masks: dict[bool, np.ndarray] = {}

    def vmask(with_tags: bool) -> np.ndarray | None:
        if t is None:
            return None
        if with_tags not in masks:
            masks[with_tags] = hc.trace_mask(t, flt, vector=True, with_tags=with_tags)
        return masks[with_tags]

    def vec(column: str, with_tags: bool, ratio: float) -> ch.Scored:
        if qvec is None:
            return []
        m = vmask(with_tags)
        hits = (
            t.vector(column, qvec, m, vec_pool, known.setdefault(column, {}))
            if t is not None and m is not None
            else []
        )
        rows = [r for r in pending if flt.accepts(r, vector=True, with_tags=with_tags)]
        from_pending = ch.pending_vector(rows, column, qvec)
        if not from_pending and t is not None:  # the floor on slots: only the kept rows are made
            return hc.rows_of(t, _floored(hits, min_sim, ratio, vec_pool), memo, known)
        got = hc.rows_of(t, hits, memo, known) if t is not None else []
        merged = ch.merge_scored(got, from_pending)
        return ch.floor_relative(merged, min_sim, ratio)[:vec_pool]

    tagged = bool(flt.tags)
    rs, ra = (0.55, 0.65) if personal else (0.45, 0.45)
    s_hits = vec("vec_summary", tagged, rs)
    a_hits = vec("vec_action", tagged, ra) if use_action else []
    if tagged and tag_mode == "auto" and not s_hits and not a_hits:
        s_hits = vec("vec_summary", False, rs)

    lex = (
        hc.bm25_hits(t, cq.terms[:FTS_TERMS], base, kw_pool, expansion_tokens(cq))
        if t is not None and base is not None
        else []
    )
    lex_pend = ch.pending_bm25(lex_pending, cq.terms)
    if not lex_pend and t is not None:  # normalised and floored on slots, as merge_scored would
        top = max((sc for _s, sc in lex), default=0.0)
        normed = [(slot, sc / top if top > 0 else 0.0) for slot, sc in lex]
        f_hits = hc.rows_of(t, _floored(normed, 0.0, lexical_floor, kw_pool), memo, known)
    else:
        got = hc.rows_of(t, lex, memo, known) if t is not None else []
        f_hits = ch.floor_relative(
            ch.merge_scored(got, lex_pend, normalise=True), 0.0, lexical_floor
        )[:kw_pool]

    p_hits: ch.Scored = []
    on_table = t is not None and base is not None and _has_cjk(cq.terms)
    if cq.terms and (on_table or lex_pending):
        texts = [text_of(r) for r in lex_pending]
        terms, weights = hc.pattern_weights(
            t if on_table else None, cq.terms, texts, ch.MAX_PATTERN_TERMS
        )
        table_hits = (
            hc.pattern(t, terms, weights, base, kw_pool, memo)
            if on_table and t is not None and base is not None
            else []
        )
        merged = ch.merge_scored(
            table_hits, ch.pending_pattern(lex_pending, terms, weights, text_of)
        )
        p_hits = [(r, sc) for r, sc in merged if sc >= 0.25][:kw_pool]

    def substring(needles: Sequence[str], limit: int) -> ch.Scored:
        if not needles:
            return []
        got = (
            hc.substring(t, needles, base, limit, memo)
            if t is not None and base is not None
            else []
        )
        return ch.merge_scored(got, ch.pending_substring(lex_pending, needles))[:limit]

    return TraceChannels(
        vec_summary=s_hits,
        vec_action=a_hits,
        fts=f_hits,
        pattern=p_hits,
        structural=substring(cq.error_fragments, max(k, 10)),
        exact_identifier=substring(cq.identifiers, kw_pool),
        rows=memo,
    )
