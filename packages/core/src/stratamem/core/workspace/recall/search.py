"""Deterministic keyword scoring, the one shared limit clamp, and the vector-provider semantics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stratamem.core.telemetry import get_logger
from stratamem.core.workspace.recall.models import (
    RecallHit,
    RecallRecord,
    RecallSearchResult,
    RecallVectorSearchProvider,
)
from stratamem.core.workspace.recall.normalize import jaccard, recall_tokens

DEFAULT_RECALL_LIMIT = 10
MAX_RECALL_LIMIT = 50


def _log() -> Any:
    return get_logger("workspace.recall")  # resolved per call: honours logging configured later


def clamp_recall_search_limit(limit: Any = None) -> int:
    """The one clamp for keyword, vector, degradation and list paths: default 10, max 50."""
    if limit is None or isinstance(limit, bool):
        return DEFAULT_RECALL_LIMIT
    try:
        value = int(limit)
    except (TypeError, ValueError):
        return DEFAULT_RECALL_LIMIT
    if value < 1:
        return DEFAULT_RECALL_LIMIT
    return min(value, MAX_RECALL_LIMIT)


def _recency(record: RecallRecord) -> tuple[int, str]:
    return (-record.created_at, record.id)


def keyword_score(query: frozenset[str], record: RecallRecord) -> float:
    """0.7 × share of query tokens covered by content+tags + 0.3 × Jaccard(query, content+tags)."""
    if not query:
        return 0.0
    have = recall_tokens(record.content) | frozenset(
        t for tag in record.tags for t in recall_tokens(tag)
    )
    coverage = len(query & have) / len(query)
    if coverage == 0:
        return 0.0
    return round(0.7 * coverage + 0.3 * jaccard(query, have), 9)


def keyword_search(query: str, candidates: Sequence[RecallRecord], limit: int) -> list[RecallHit]:
    q = recall_tokens(query)
    if not q:  # the list path: most recent first
        return [RecallHit(r, 0.0) for r in sorted(candidates, key=_recency)[:limit]]
    scored = [(keyword_score(q, r), r) for r in candidates]
    hits = [RecallHit(r, s) for s, r in scored if s > 0]
    hits.sort(key=lambda h: (-h.score, *_recency(h.record)))
    return hits[:limit]


def _hit_parts(item: Any) -> tuple[str, float] | None:
    try:
        if isinstance(item, dict):
            rid, score = item["id"], item["score"]
        elif isinstance(item, tuple | list):
            rid, score = item[0], item[1]
        else:
            rid, score = item.id, item.score
        value = float(score)
    except (KeyError, IndexError, AttributeError, TypeError, ValueError):
        return None
    if not isinstance(rid, str) or value != value:  # NaN scores are dropped
        return None
    return rid, value


def rank_candidates(
    query: str,
    candidates: Sequence[RecallRecord],
    limit: Any = None,
    provider: RecallVectorSearchProvider | None = None,
) -> RecallSearchResult:
    """Rank already scoped and filtered candidates: vector when a provider yields a resolvable id,
    keyword otherwise; the clamp applies after ranking on every path."""
    k = clamp_recall_search_limit(limit)
    caps = {"keyword": True, "vector": provider is not None}
    if provider is not None and query.strip() and candidates:
        by_id = {r.id: r for r in candidates}
        best: dict[str, float] = {}
        try:
            raw = provider.search(query, list(candidates), k)
            for item in list(raw or []):
                parts = _hit_parts(item)
                if parts is None or parts[0] not in by_id:
                    continue  # unknown ids are discarded
                rid, score = parts
                if rid not in best or score > best[rid]:
                    best[rid] = score  # a duplicate id keeps its highest score
        except Exception as exc:
            _log().info("recall vector provider failed; keyword mode", error=str(exc))
            best = {}
        if best:
            hits = [RecallHit(by_id[rid], score) for rid, score in best.items()]
            hits.sort(key=lambda h: (-h.score, *_recency(h.record)))
            return RecallSearchResult("vector", hits[:k], caps)
    return RecallSearchResult("keyword", keyword_search(query, candidates, k), caps)
