"""Score-calibrated fusion of the trace channels: a weighted sum of scaled scores, not of ranks.

Rank fusion (RRF) forgets how far apart the scores are: a memory that BM25 finds far ahead of the
rest and one it barely matched get nearly the same credit, and a dense list of near-ties pushes
lexical matches down. On conversational memory (LoCoMo, one memory per pair of turns) plain RRF of
BM25 and MiniLM cosine scored *below* BM25 alone; the weighted sum of the BM25 score over the pool's
best and the cosine scaled over the pool's range beat both (see bench/results/locomo.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from stratamem.core.retrieval.candidates import Candidate

#: share of the lexical side in the fused score (the rest is the scaled cosine)
LEXICAL_WEIGHT = 0.5
#: the lexical score (BM25 over the pool's best) is raised to this power before it is weighed
LEXICAL_POWER = 1.0
#: channels whose (already top-normalised) score counts as the lexical evidence, with their weight
LEXICAL_CHANNELS: Mapping[str, float] = {"fts": 1.0, "pattern": 0.6}
#: a verbatim identifier or error signature is lexical evidence at full strength
EXACT_CHANNELS = frozenset({"exact_identifier", "structural"})


def lexical_score(cand: Candidate, power: float = LEXICAL_POWER) -> float:
    """The strongest lexical evidence of a candidate in [0, 1] (each channel's score to ``power``)."""
    if EXACT_CHANNELS.intersection(cand.channels):
        return 1.0
    best = 0.0
    for name, weight in LEXICAL_CHANNELS.items():
        got = cand.channels.get(name)
        if got is not None:
            best = max(best, weight * min(1.0, max(0.0, got[1])) ** power)
    return best


class CosineScale:
    """Min-max scaling of cosines over a pool (a memory below the pool's floor scores 0)."""

    def __init__(self, cosines: Iterable[float | None]) -> None:
        vals = [c for c in cosines if c is not None]
        self.lo = min(vals, default=0.0)
        self.hi = max(vals, default=0.0)

    def __call__(self, cosine: float | None) -> float:
        if cosine is None:
            return 0.0
        if self.hi <= self.lo:
            return 1.0 if cosine >= self.hi else 0.0
        return min(1.0, max(0.0, (cosine - self.lo) / (self.hi - self.lo)))


def fused_scores(
    cands: Iterable[Candidate],
    lexical_weight: float = LEXICAL_WEIGHT,
    lexical_power: float = LEXICAL_POWER,
) -> dict[str, float]:
    """ref id -> lexical_weight·lexical + (1 − lexical_weight)·scaled cosine, in [0, 1].

    Without any cosine in the pool (no embedder) the lexical side carries the whole score.
    """
    items = list(cands)
    scale = CosineScale(c.cosine for c in items)
    has_vec = any(c.cosine is not None for c in items)
    w = lexical_weight if has_vec else 1.0
    return {
        c.ref_id: w * lexical_score(c, lexical_power) + (1 - w) * scale(c.cosine) for c in items
    }
