"""Pure ranking: rank fusion (RRF), exact-identifier eligibility, dedupe, relative threshold, seeded MMR.

Channels are fused by RANK (weighted RRF, k=60) so that no channel's score scale dominates; the fused
score is normalised to the pool's best and blended with the semantic cosine every candidate gets.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from stratamem.core.retrieval import coverage
from stratamem.core.retrieval.candidates import Candidate, rows_matrix

#: per-channel RRF weights (vector + BM25 carry the signal; substring patterns only help)
CHANNEL_WEIGHTS: dict[str, float] = {
    "vec_summary": 1.0,
    "vec_action": 0.7,
    "vec": 1.0,
    "fts": 1.0,
    "pattern": 0.5,
    "structural": 1.0,
    "exact_identifier": 1.0,
}
VECTOR_CHANNELS = frozenset({"vec_summary", "vec_action", "vec"})
FUSED_WEIGHT = 0.6
SEMANTIC_WEIGHT = 0.4


@dataclass(frozen=True, slots=True)
class RankParams:
    limit: int = 10
    tier_caps: Mapping[int, int] = field(default_factory=lambda: {1: 3, 2: 5, 3: 2})
    rrf_k: int = 60
    mmr_lambda: float = 0.7
    relative_floor: float = 0.2
    smart_seed: bool = True
    smart_seed_ratio: float = 0.7
    multi_channel_bypass: bool = True
    min_trace_sim: float = 0.25
    identifiers: tuple[str, ...] = ()
    #: a trace's pick gain falls by this for each trace of its session already chosen past
    #: ``session_free`` of them (0: off); it decides which traces make the list, not their
    #: order in it (``Ranked.score`` leaves it out)
    session_penalty: float = 0.0
    session_free: int = 0
    #: the query's aspects: a pick gains ``coverage_weight`` × the weight of the ones it adds
    #: (retrieval/coverage.py; 0: off), among the first ``coverage_top`` candidates; like the
    #: session penalty it decides which traces make the list, not their order in it
    aspects: coverage.Aspects | None = None
    coverage_weight: float = 0.0
    coverage_top: int = 30
    coverage_decay: float = 0.0
    covers: coverage.Covers | None = None


@dataclass(slots=True)
class Ranked:
    cand: Candidate
    relevance: float
    rrf: float
    fused: float
    semantic: float
    score: float = 0.0
    redundancy: float = 0.0
    bypassed: bool = False

    def details(self, profile: str, mmr_lambda: float) -> dict[str, Any]:
        return {
            "profile": profile,
            "semantic": round(self.semantic, 4),
            "tier_boost": round(self.cand.boost, 4),
            "rrf": round(self.rrf, 6),
            "fused": round(self.fused, 4),
            "relevance": round(self.relevance, 4),
            "mmr_lambda": mmr_lambda,
            "redundancy": round(self.redundancy, 4),
            "final_score": round(self.score, 4),
            "channels": sorted(self.cand.channels),
            "bypassed_threshold": self.bypassed,
        }


def rrf_score(cand: Candidate, k: int) -> float:
    return sum(
        CHANNEL_WEIGHTS.get(name, 0.5) / (k + rank + 1)
        for name, (rank, _s) in cand.channels.items()
    )


def score_candidates(cands: Sequence[Candidate], k: int) -> list[Ranked]:
    """Relevance = 0.6·(rrf / best rrf) + 0.4·clamp(cosine, 0, 1) + tier boost, or the tier's own
    score-fused ``prior`` + tier boost when it set one."""
    weight = CHANNEL_WEIGHTS.get
    rrfs = [
        sum([weight(name, 0.5) / (k + rank + 1) for name, (rank, _s) in c.channels.items()])
        for c in cands
    ]
    top = max(rrfs, default=0.0)
    out = []
    for cand, rrf in zip(cands, rrfs, strict=True):
        semantic = min(1.0, max(0.0, cand.cosine or 0.0))
        prior = cand.prior
        if prior is not None:  # the tier fused its channels by score (retrieval/fusion.py)
            out.append(Ranked(cand, prior + cand.boost, rrf, prior, semantic))
            continue
        fused = rrf / top if top > 0 else 0.0
        rel = FUSED_WEIGHT * fused + SEMANTIC_WEIGHT * semantic + cand.boost
        out.append(Ranked(cand, rel, rrf, fused, semantic))
    return out


def exact_eligible(items: list[Ranked], identifiers: Sequence[str]) -> list[Ranked]:
    """With identifiers in the query, traces/episodes/experiences must carry one (skills/world models exempt)."""
    if not identifiers:
        return items
    keep = []
    for it in items:
        c = it.cand
        if (
            c.ref_kind in ("skill", "world_model")
            or "exact_identifier" in c.channels
            or any(i in c.search_text().lower() for i in identifiers)
        ):
            keep.append(it)
    return keep


_ACK = re.compile(
    r"^\W*(?:ok(?:ay)?|thanks?(?: you)?|thx|got it|noted|sure|done|will do|understood|好的|记住了|收到|明白了?|知道了)\W*$",
    re.I,
)
_NORM = re.compile(r"[\W_]+", re.U)


#: ``_norm``'s entries: a query's candidates are normalised twice (``rank`` dedupes before and
#: after the threshold) and a repeated query meets the same ones again; each entry keeps its own
#: copy of the text (rows are read fresh from the side file), ~0.25 KB. 8,192 grew the soak's
#: process ~2 MB until full at ~6k turns; this many fill within its warm-up (soak-session11.md)
NORM_CACHE_ITEMS = 2048


@lru_cache(maxsize=NORM_CACHE_ITEMS)
def _norm(text: str) -> str:
    return _NORM.sub(" ", (text or "").lower()).strip()


def _has_evidence(row: Mapping[str, Any]) -> bool:
    agent = (row.get("agent_text") or "").strip()
    return (
        bool(row.get("reflection"))
        or bool(row.get("tool_calls_json") not in (None, "", "[]"))
        or (bool(agent) and not _ACK.match(agent))
    )


def dedupe_repeated(items: list[Ranked]) -> list[Ranked]:
    """Traces asking the same question: prefer evidence-bearing rows, one per distinct answer."""
    groups: dict[str, list[Ranked]] = {}
    for it in items:
        if it.cand.ref_kind == "trace":
            key = _norm(it.cand.row.get("user_text") or "")
            if key:
                groups.setdefault(key, []).append(it)
    drop: set[int] = set()
    for group in groups.values():
        if len(group) < 2:
            continue
        evidence = [g for g in group if _has_evidence(g.cand.row)]
        keep_from = evidence or [max(group, key=lambda g: g.relevance)]
        best: dict[str, Ranked] = {}
        for g in keep_from:
            sig = _norm(g.cand.row.get("agent_text") or "")
            if sig not in best or g.relevance > best[sig].relevance:
                best[sig] = g
        kept = {id(g) for g in best.values()}
        drop.update(id(g) for g in group if id(g) not in kept)
    return [it for it in items if id(it) not in drop]


def _strong(name: str, score: float, min_sim: float) -> bool:
    if name in VECTOR_CHANNELS:
        return score >= min_sim
    if name == "structural":
        return score >= 0.8
    return score >= 0.75


def relative_threshold(items: list[Ranked], p: RankParams) -> list[Ranked]:
    """Drop items below top·floor unless ≥2 channels agree and one of them is strong."""
    if not items:
        return items
    cutoff = max(it.relevance for it in items) * p.relative_floor
    out = []
    for it in items:
        if it.relevance >= cutoff:
            out.append(it)
        elif (
            p.multi_channel_bypass
            and len(it.cand.channels) >= 2
            and any(_strong(n, s, p.min_trace_sim) for n, (_r, s) in it.cand.channels.items())
        ):
            it.bypassed = True
            out.append(it)
    return out


class _Redundancy:
    """Each item's highest cosine to the chosen ones (first vectors; 0 when none or shapes differ),
    kept current with one matrix-vector product per pick instead of a Python loop per pair."""

    def __init__(self, items: Sequence[Ranked]) -> None:
        self.pos = {id(it): i for i, it in enumerate(items)}
        self.best = np.zeros(len(items), dtype=np.float64)
        groups: dict[tuple[int, ...], list[int]] = {}
        for i, it in enumerate(items):
            if it.cand.vectors:
                groups.setdefault(it.cand.vectors[0].shape, []).append(i)
        self.groups = {
            shape: (np.array(idx), rows_matrix([items[i].cand.vectors[0] for i in idx]))
            for shape, idx in groups.items()
        }

    def of(self, it: Ranked) -> float:
        return float(self.best[self.pos[id(it)]])

    def chose(self, it: Ranked) -> None:
        if not it.cand.vectors:
            return
        v = it.cand.vectors[0]
        got = self.groups.get(v.shape)
        if got is not None:
            idx, mat = got
            if len(idx) == len(self.best):  # one shape for all (the usual case): no gather
                np.maximum(self.best, mat @ v, out=self.best)
            else:
                self.best[idx] = np.maximum(self.best[idx], mat @ v)


def mmr_select(items: list[Ranked], p: RankParams) -> list[Ranked]:
    """Smart seeding (≤1 per tier, if within ratio of the pool's best) then greedy MMR under tier caps.

    Arrays over the relevance order: a pick is one masked argmax (the first best, as ``max`` over
    the remaining items in that order would choose), not a Python pass per pick."""
    lam = p.mmr_lambda
    remaining = sorted(items, key=lambda it: -it.relevance)
    chosen: list[Ranked] = []
    per_tier: dict[int, int] = {}
    red = _Redundancy(remaining)
    rel = np.array([it.relevance for it in remaining], dtype=np.float64)
    tiers = np.array([it.cand.tier for it in remaining], dtype=np.int64)
    left = np.ones(len(remaining), dtype=bool)

    def room(tier: int) -> bool:
        return per_tier.get(tier, 0) < int(p.tier_caps.get(tier, 0))

    delta = p.session_penalty
    sess, same = _sessions(remaining) if delta > 0 else (None, None)
    free = float(p.session_free)
    cov = (
        coverage.for_pick(
            [it.cand for it in remaining],
            p.aspects,
            p.coverage_weight,
            p.coverage_top,
            p.covers,
            p.coverage_decay,
        )
        if p.coverage_weight > 0
        else None
    )

    def take(i: int) -> None:
        it = remaining[i]
        it.redundancy = float(red.best[i])
        it.score = lam * it.relevance - (1 - lam) * it.redundancy
        if cov is not None:
            cov.chose(i)
        if sess is not None and same is not None and sess[i]:
            same[sess == sess[i]] += 1
        chosen.append(it)
        left[i] = False
        red.chose(it)
        per_tier[it.cand.tier] = per_tier.get(it.cand.tier, 0) + 1

    if remaining and p.smart_seed:
        top = remaining[0].relevance
        for tier in (1, 2, 3):
            idx = np.flatnonzero(left & (tiers == tier))
            if not len(idx):
                continue
            best = remaining[int(idx[0])]
            if best.relevance >= top * p.smart_seed_ratio and room(tier) and len(chosen) < p.limit:
                take(int(idx[0]))
    present = sorted(set(tiers.tolist()))
    lam_rel, mu = lam * rel, 1 - lam
    full: set[int] = set()  # tiers at their cap (a tier never gets room back)
    closed = np.zeros(len(remaining), dtype=bool)
    while len(chosen) < p.limit:
        for tier in present:
            if tier not in full and not room(tier):
                full.add(tier)
                closed |= tiers == tier
        shut = ~left | closed
        if shut.all():
            break
        gain = lam_rel - mu * red.best
        if cov is not None:
            gain += cov.gains()
        if same is not None:
            gain -= delta * np.maximum(same - free, 0.0)
        gain[shut] = -np.inf
        take(int(np.argmax(gain)))
    return sorted(chosen, key=lambda it: (-it.score, -it.rrf))


def _sessions(items: Sequence[Ranked]) -> tuple[np.ndarray, np.ndarray]:
    """Each trace's session as a code (0: not a trace, or no session) and the chosen-per-session
    counts, zero."""
    codes: dict[str, int] = {}
    out = np.zeros(len(items), dtype=np.int64)
    for i, it in enumerate(items):
        sid = it.cand.row.get("session_id") if it.cand.ref_kind == "trace" else None
        if sid:
            out[i] = codes.setdefault(str(sid), len(codes) + 1)
    return out, np.zeros(len(items), dtype=np.float64)


def rank(cands: Sequence[Candidate], p: RankParams) -> list[Ranked]:
    """The whole pure ranking pipeline of memos-core §5.7.4 (fusion by rank instead of raw scores)."""
    items = score_candidates(cands, p.rrf_k)
    items = exact_eligible(items, p.identifiers)
    items = dedupe_repeated(items)
    items = relative_threshold(items, p)
    items = dedupe_repeated(items)
    return mmr_select(items, p)
