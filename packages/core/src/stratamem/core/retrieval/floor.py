"""An absolute relevance floor for the trace tier: recall injects nothing when nothing is relevant.

Fused scores are relative to the pool (the best candidate always scores high), so they cannot say
that the whole pool is unrelated. Two absolute signals can: the best cosine of any candidate to the
query (MiniLM cosines of unrelated sentences sit around 0.0-0.2, paraphrases above 0.5) and the
best share of the query's idf weight that one candidate's text holds (a rare query word found
verbatim is evidence even when the sentence embedding disagrees). When both are below their floors
the tier abstains; a verbatim identifier or error signature never abstains.

Measured on LoCoMo (bench/results/locomo.md): answerable questions' best cosine has its 1st
percentile at 0.38, so a floor of 0.3 costs about one question in a thousand; the adversarial
(category 5) questions ask about a detail the conversation holds for the other speaker, their best
cosine is distributed like the answerable ones', and no absolute floor separates them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from stratamem.core.retrieval.candidates import Candidate
from stratamem.core.retrieval.fusion import EXACT_CHANNELS
from stratamem.core.retrieval.text import doc_tokens, term_in

#: abstain when no candidate reaches this cosine to the query ...
MIN_COSINE = 0.3
#: ... and none holds this share of the query's idf weight
MIN_COVERAGE = 0.6


def coverage(terms: Sequence[str], weights: Sequence[float], text: str) -> float:
    """Share of the query's term weight whose terms ``text`` holds (0..1)."""
    total = float(sum(weights))
    if total <= 0:
        return 0.0
    low = (text or "").lower()
    toks = doc_tokens(low)
    return sum(w for t, w in zip(terms, weights, strict=True) if term_in(t, low, toks)) / total


def relevant(
    cands: Iterable[Candidate],
    terms: Sequence[str],
    weights: Sequence[float],
    *,
    min_cosine: float = MIN_COSINE,
    min_coverage: float = MIN_COVERAGE,
    text_of: Callable[[Candidate], str] = lambda c: c.text,
) -> bool:
    """Whether any candidate clears the floor (an empty pool is not relevant)."""
    for c in cands:
        if EXACT_CHANNELS.intersection(c.channels):
            return True
        if c.cosine is not None and c.cosine >= min_cosine:
            return True
        if terms and coverage(terms, weights, text_of(c)) >= min_coverage:
            return True
    return False


def apply_floor(
    pool: Any,
    terms: Sequence[str],
    weights: Sequence[float],
    *,
    min_cosine: float,
    min_coverage: float,
) -> bool:
    """Empty ``pool`` when nothing in it clears the floor; returns True when it abstained."""
    if not pool.items or relevant(
        pool.items.values(), terms, weights, min_cosine=min_cosine, min_coverage=min_coverage
    ):
        return False
    pool.items.clear()
    return True


def floor_traces(
    pool: Any, terms: Sequence[str], qvec: Any, table: Any | None, config: Any
) -> bool:
    """Tier 2's floor with the configured thresholds (``retrieval.relevance_floor_*``); term
    weights are the hot index's idf (uniform without one). True when the pool was emptied."""
    from stratamem.core.retrieval import hot_channels as hc
    from stratamem.core.retrieval.channels import MAX_PATTERN_TERMS
    from stratamem.core.retrieval.settings import setting

    min_cos = float(setting(config, "relevance_floor_cosine"))
    if min_cos <= -1 or not pool.items:
        return False
    pool.set_cosines(qvec)
    words: Sequence[str] = terms[:MAX_PATTERN_TERMS]
    weights: Sequence[float] = [1.0] * len(words)
    if table is not None and words:
        words, weights = hc.pattern_weights(table, words, [], len(words))
    cov = float(setting(config, "relevance_floor_coverage"))
    return apply_floor(pool, words, weights, min_cosine=min_cos, min_coverage=cov)
