"""Lexical query expansion with the home's own vocabulary.

A question often names a thing by another word than the memory that answers it ("What console
does Nate own?" / "Nate: … my new Xbox"). For each content word of the query, the store's nearest
words join the BM25 query as weighted terms when they are close to the word (cosine ≥ τ), rare
among the memories the caller may see (held by ≤ *s* of them: informative, unlike "month" or
"week"; counted per owner, vocab/counts.py, never home-wide) and close to
the question as a whole (cosine with the query vector ≥ θ: "places" → "town", "school" are
dropped for a question about travels, measured to keep the long-memory set from losing). Words
held by nearly every memory (the speakers' names) are not expanded. BM25 is a sum over terms, so
an added word adds γ × cosine × its own BM25. Figures: bench/results/locomo.md, sessions 6 and 8.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stratamem.core.vocab.counts import ScopeCounts
from stratamem.core.vocab.store import WordStore
from stratamem.core.vocab.words import is_word, token_of


@dataclass(frozen=True, slots=True)
class ExpandParams:
    neighbours: int = 8  # m
    min_cosine: float = 0.5  # τ
    weight: float = 0.5  # γ
    max_share: float = 0.02  # s
    min_query_cosine: float = 0.30  # θ
    common_share: float = 0.8


def params_of(section: Mapping[str, Any]) -> ExpandParams:
    """The expansion's settings from the retrieval config section (``expand_vocab_*``)."""
    return ExpandParams(
        neighbours=int(section["expand_vocab_neighbours"]),
        min_cosine=float(section["expand_vocab_min_cosine"]),
        weight=float(section["expand_vocab_weight"]),
        max_share=float(section["expand_vocab_max_share"]),
        min_query_cosine=float(section["expand_vocab_min_query_cosine"]),
        common_share=float(section["dense_common_word_share"]) or 0.8,
    )


@dataclass(frozen=True, slots=True)
class Expansion:
    """Added words, each with its index token and its BM25 weight (γ × cosine)."""

    words: tuple[tuple[str, str, float], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.words)

    def token_weights(self) -> dict[str, float]:
        return {tok: w for _, tok, w in self.words}

    def word_weights(self) -> list[tuple[str, float]]:
        return [(word, w) for word, _, w in self.words]


def query_words(counts: ScopeCounts, terms: Sequence[str], p: ExpandParams) -> list[str]:
    """The query's words to expand: vocabulary words not held by nearly every memory the caller
    may see (``counts``: ``WordStore.visible``)."""
    out: list[str] = []
    floor = p.common_share * counts.memories
    for term in terms:
        if term in out or not is_word(term):
            continue
        tok = token_of(term)
        if tok is None or (counts.memories and counts.df(tok) >= floor):
            continue
        out.append(term)
    return out


def missing(store: WordStore, words: Sequence[str]) -> list[str]:
    """The words of ``words`` the store lacks (embedded with the query, one model call)."""
    return [w for w in words if w not in store.index]


def expand(
    store: WordStore,
    counts: ScopeCounts,
    words: Sequence[str],
    qvec: np.ndarray | None,
    p: ExpandParams,
    lacking: Mapping[str, np.ndarray] | None = None,
    query_tokens: Iterable[str] = (),
) -> Expansion:
    """The added words for the query's ``words`` (``query_words``); ``counts``: the caller's
    visible memories (``WordStore.visible``); ``lacking``: the vectors of the ones the store lacks; ``query_tokens``: every token the BM25 query already holds (never
    added again). Nothing without a query vector (θ needs it) or an empty store."""
    if qvec is None or not words or not len(store) or p.weight <= 0:
        return Expansion()
    q = np.asarray(qvec, dtype=np.float32)
    own = {token_of(w) for w in words} | set(query_tokens)
    cap = p.max_share * counts.memories
    best: dict[str, tuple[str, float]] = {}
    for word in words:
        if word in store.index:
            names, ids, cos = store.neighbours(word)
        elif lacking is not None and word in lacking:
            names, ids, cos = store.nearest(lacking[word], p.neighbours)
        else:
            continue
        names, ids, cos = names[: p.neighbours], ids[: p.neighbours], cos[: p.neighbours]
        keep = [i for i, c in enumerate(cos.tolist()) if c >= p.min_cosine]
        if not keep:
            continue
        to_q = store.vectors(ids[keep]) @ q
        for i, qc in zip(keep, to_q.tolist(), strict=True):
            if qc < p.min_query_cosine:
                continue
            tok = store.tokens[int(ids[i])]
            if not tok or tok in own or counts.df(tok) > cap:
                continue
            c = float(cos[i])
            if tok not in best or c > best[tok][1]:
                best[tok] = (names[i], c)
    added = sorted(best.items(), key=lambda kv: (-kv[1][1], kv[0]))
    return Expansion(tuple((word, tok, p.weight * c) for tok, (word, c) in added))
