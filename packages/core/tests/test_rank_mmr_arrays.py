"""The array form of seeded MMR picks exactly what the per-item reference loop (the earlier code)
picks: same items, same order, same scores and redundancies, under tier caps, ties and items
without vectors."""

from __future__ import annotations

import random

import numpy as np

from stratamem.core.retrieval.candidates import Candidate
from stratamem.core.retrieval.rank import Ranked, RankParams, _Redundancy, mmr_select


def reference_mmr(items: list[Ranked], p: RankParams) -> list[Ranked]:
    """The loop ``mmr_select`` replaced (kept here as the specification)."""
    lam = p.mmr_lambda
    remaining = sorted(items, key=lambda it: -it.relevance)
    chosen: list[Ranked] = []
    per_tier: dict[int, int] = {}
    red = _Redundancy(remaining)

    def room(it: Ranked) -> bool:
        return per_tier.get(it.cand.tier, 0) < int(p.tier_caps.get(it.cand.tier, 0))

    def take(it: Ranked) -> None:
        it.redundancy = red.of(it)
        it.score = lam * it.relevance - (1 - lam) * it.redundancy
        chosen.append(it)
        remaining.remove(it)
        red.chose(it)
        per_tier[it.cand.tier] = per_tier.get(it.cand.tier, 0) + 1

    if remaining and p.smart_seed:
        top = remaining[0].relevance
        for tier in (1, 2, 3):
            best = next((it for it in remaining if it.cand.tier == tier), None)
            if (
                best is not None
                and best.relevance >= top * p.smart_seed_ratio
                and room(best)
                and len(chosen) < p.limit
            ):
                take(best)
    while remaining and len(chosen) < p.limit:
        open_items = [it for it in remaining if room(it)]
        if not open_items:
            break
        pick = max(open_items, key=lambda it: lam * it.relevance - (1 - lam) * red.of(it))
        take(pick)
    return sorted(chosen, key=lambda it: (-it.score, -it.rrf))


def _items(rng: random.Random, n: int, dim: int = 6) -> list[Ranked]:
    out = []
    base = [np.array([rng.gauss(0, 1) for _ in range(dim)], dtype=np.float32) for _ in range(4)]
    for i in range(n):
        tier = rng.choice([1, 2, 2, 2, 3])
        kind = {1: "skill", 2: "trace", 3: "world_model"}[tier]
        vecs = []
        if rng.random() > 0.1:  # near-duplicates of a few directions: redundancy matters
            v = base[rng.randrange(4)] + 0.3 * np.array(
                [rng.gauss(0, 1) for _ in range(dim)], dtype=np.float32
            )
            vecs = [v / np.linalg.norm(v)]
        rel = rng.choice([0.5, 0.7, round(rng.random(), 2)])  # ties on purpose
        cand = Candidate(kind, f"{kind}-{i}", {"id": f"{kind}-{i}"}, tier, {}, vecs)
        out.append(Ranked(cand, rel, rrf=rng.random(), fused=0.0, semantic=0.0))
    return out


def _view(items: list[Ranked]) -> list[tuple[str, float, float]]:
    return [(it.cand.ref_id, it.score, it.redundancy) for it in items]


def test_array_mmr_equals_the_reference_loop() -> None:
    rng = random.Random(11)
    for trial in range(300):
        n = rng.randrange(0, 40)
        p = RankParams(
            limit=rng.choice([1, 5, 10, 20]),
            tier_caps={1: rng.randrange(0, 4), 2: rng.randrange(0, 8), 3: rng.randrange(0, 3)},
            mmr_lambda=rng.choice([0.7, 0.85, 1.0, 0.0]),
            smart_seed=rng.random() > 0.3,
        )
        seed = rng.randrange(10**9)
        got = mmr_select(_items(random.Random(seed), n), p)
        want = reference_mmr(_items(random.Random(seed), n), p)
        assert _view(got) == _view(want), f"trial {trial}"
