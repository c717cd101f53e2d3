"""Coverage-aware final pick (explicit diversification, xQuAD / PM2-like): a candidate's pick gain
includes the query's aspects it covers that the already-picked memories do not.

A question asking for a set ("What European countries has Maria been to?") is answered by turns
that each hold one member: the query expansion (vocab/expand.py) adds "england" and "spain" to the
BM25 query, but when two turns about England outrank the one about Spain, MMR's vector redundancy
does not tell that the second England turn brings nothing new for the question. Here each of the
query's index tokens and each word the ``expand`` stage added is an *aspect*, weighted by its idf
among the memories the caller may see (an added word also by its expansion weight); in the final
pick a candidate gains κ × the weight of the aspects it holds that no picked memory holds yet, so
the Spain turn beats the second England turn. No per-session rule: two turns of one session that
cover different aspects both stay.

Which candidate holds which aspect comes from the hot index's postings (a bisection per aspect
over the pick's candidates' slots, no scan), else from the candidate's text analysed as the index
analyses it (the LanceDB path, pending rows): the same tokens either way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from stratamem.core.hotindex.lexical import analyze, query_tokens
from stratamem.core.retrieval import query_shape
from stratamem.core.retrieval.candidates import Candidate, search_text
from stratamem.core.retrieval.hot_tiers import FTS_TERMS

if TYPE_CHECKING:
    from stratamem.core.retrieval.engine import _Run

#: candidates, aspect tokens -> which candidate holds which token (bool, candidates × tokens)
Covers = Callable[[Sequence[Candidate], Sequence[str]], np.ndarray]


@dataclass(frozen=True, slots=True)
class Aspects:
    """The query's aspects: index tokens and their weights (summing to 1)."""

    tokens: tuple[str, ...] = ()
    weights: tuple[float, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.tokens)


def aspects_of(
    tokens: Iterable[str],
    added: Iterable[tuple[str, float]],
    df: Callable[[str], int] | None,
    docs: int,
    own_weight: float = 1.0,
) -> Aspects:
    """The query's own ``tokens`` (each × ``own_weight``) and the expansion's ``added`` (token,
    BM25 weight) pairs, weighted by idf over ``docs`` memories (``df``: how many hold a token;
    None: every aspect counts alike), normalised to sum 1. A token no memory holds (nothing to
    cover) and one of weight 0 are left out."""
    raw: dict[str, float] = {}
    for tok in tokens:
        raw.setdefault(tok, own_weight)
    for tok, w in added:
        if tok not in raw:
            raw[tok] = float(w)
    out: dict[str, float] = {}
    for tok, w in raw.items():
        if w <= 0:
            continue
        if df is not None and docs > 0:
            n = df(tok)
            if n <= 0:
                continue
            w *= math.log(1.0 + (docs - n + 0.5) / (n + 0.5))
        if w > 0:
            out[tok] = w
    total = sum(out.values())
    if total <= 0:
        return Aspects()
    return Aspects(tuple(out), tuple(w / total for w in out.values()))


def covers_by_text(cands: Sequence[Candidate], tokens: Sequence[str]) -> np.ndarray:
    """Each candidate's text (its ``search_text`` column, else its trace words) analysed as the
    lexical index analyses it."""
    out = np.zeros((len(cands), len(tokens)), dtype=bool)
    col = {tok: j for j, tok in enumerate(tokens)}
    for i, c in enumerate(cands):
        for tok in analyze(search_text(c.row) or c.search_text()):
            j = col.get(tok)
            if j is not None:
                out[i, j] = True
    return out


def covers_by_postings(
    table: object,
    rows: Mapping[int, Any] | None = None,
    fallback: Covers = covers_by_text,
) -> Covers:
    """Coverage from a hot table's postings for the traces it holds (their slots looked up in
    each aspect's postings), ``fallback`` for the other candidates. ``rows``: slot -> the row
    object a channel made for it (``TraceChannels.rows``), which is the candidate's own row: its
    slot without the id index's lookup (that reads the row from disk to confirm a hash)."""

    def covers(cands: Sequence[Candidate], tokens: Sequence[str]) -> np.ndarray:
        slot_of = getattr(table, "slot_of", None)
        lex = getattr(table, "lex", None)
        if slot_of is None or lex is None:
            return fallback(cands, tokens)
        made = {id(r): s for s, r in rows.items()} if rows else {}
        at: list[int] = []
        slots: list[int] = []
        other: list[int] = []
        for i, c in enumerate(cands):
            s = None
            if c.ref_kind == "trace":
                s = made.get(id(c.row))
                if s is None:
                    s = slot_of.get(c.ref_id)
            if s is None:
                other.append(i)
            else:
                at.append(i)
                slots.append(int(s))
        out = np.zeros((len(cands), len(tokens)), dtype=bool)
        if slots:
            idx = np.asarray(at, dtype=np.int64)
            mine = np.asarray(slots, dtype=np.int32)
            for j, tok in enumerate(tokens):
                got = lex.postings(tok)
                if got is None:
                    continue
                post = got[0]
                pos = np.searchsorted(post, mine)
                pos[pos == len(post)] = 0
                out[idx, j] = post[pos] == mine
        if other:
            out[other] = fallback([cands[i] for i in other], tokens)
        return out

    return covers


class Coverage:
    """The pick's coverage state: the aspects' weights still open (× κ; an aspect a chosen memory
    holds keeps ``decay`` of its weight: 0 is xQuAD's "covered", above 0 PM2-like), and each
    candidate's gain from the open ones it holds."""

    def __init__(
        self,
        cands: Sequence[Candidate],
        aspects: Aspects,
        held: np.ndarray,
        kappa: float,
        covers: Covers,
        decay: float = 0.0,
    ) -> None:
        self.cands = cands
        self.tokens = aspects.tokens
        self.held = held.astype(np.float64)
        self.rows = len(held)  # candidates past these hold no gain (``for_pick``'s ``top``)
        self.open = np.asarray(aspects.weights, dtype=np.float64) * kappa
        self.covers = covers
        self.decay = decay

    def gains(self) -> np.ndarray:
        """Every candidate's gain now (one matrix-vector product; 0 past the first rows)."""
        out = np.zeros(len(self.cands), dtype=np.float64)
        out[: self.rows] = self.held @ self.open
        return out

    def gain(self, i: int) -> float:
        return float(self.held[i] @ self.open) if i < self.rows else 0.0

    def chose(self, i: int) -> None:
        # one picked from past the gain's reach: what it holds still counts as covered
        row = self.held[i] if i < self.rows else self.covers([self.cands[i]], self.tokens)[0]
        self.open[row > 0] *= self.decay


def for_pick(
    cands: Sequence[Candidate],
    aspects: Aspects | None,
    kappa: float,
    top: int,
    covers: Covers | None,
    decay: float = 0.0,
) -> Coverage | None:
    """The coverage state over ``cands`` (in the pick's order, best relevance first): only the
    first ``top`` of them get a coverage gain (the pick's reach: a memory far down the pool is
    not lifted into the list by one rare word). None when off or without aspects."""
    if kappa <= 0 or not aspects or not cands or top <= 0:
        return None
    fn = covers or covers_by_text
    return Coverage(cands, aspects, fn(cands[:top], aspects.tokens), kappa, fn, decay)


def pick_settings(run: _Run, set_query: bool) -> dict[str, Any]:
    """``RankParams``' coverage fields for a retrieval: the query's BM25 tokens and the words its
    ``expand`` stage added, weighted by idf over the caller's memories (the word store's counts,
    the same on both paths; uniform without them), and the hot index's postings as coverage.
    Gated on the query's shape (``aspect_coverage_gate``, retrieval/query_shape.py; ``set_query``:
    whether its text asks for a set): a pointed query keeps the pick by relevance."""
    kappa = query_shape.gated(
        float(run.s("aspect_coverage")), str(run.s("aspect_coverage_gate")), set_query
    )
    if kappa <= 0:
        return {}
    own = query_tokens(run.cq.terms[:FTS_TERMS])
    added = [(tok, w) for _word, tok, w in run.cq.expansion]
    counts = run.vocab_counts
    aspects = aspects_of(
        own,
        added,
        counts.df if counts is not None else None,
        int(counts.memories) if counts is not None else 0,
        float(run.s("aspect_coverage_own")),
    )
    hot = run.hot_table("traces")
    return {
        "aspects": aspects,
        "coverage_weight": kappa,
        "coverage_top": int(run.s("aspect_coverage_top")),
        "coverage_decay": float(run.s("aspect_coverage_decay")),
        "covers": covers_by_postings(hot, run.hot_rows) if hot is not None else None,
    }
