"""Score-calibrated fusion and neighbour-turn expansion of the trace tier (pure parts)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest

from stratamem.core.retrieval import RankParams, rank
from stratamem.core.retrieval.candidates import Candidate, Pool
from stratamem.core.retrieval.expand import (
    adjacency,
    expand_pool,
    in_spans,
    neighbour_spans,
    propagate,
    spans_where,
)
from stratamem.core.retrieval.fusion import CosineScale, fused_scores, lexical_score


def cand(rid: str, channels: dict[str, tuple[int, float]], cos: float | None) -> Candidate:
    return Candidate("trace", rid, {"id": rid}, 2, dict(channels), [], cos, 0.0, "")


def test_a_strong_bm25_match_beats_a_near_tie_of_cosines_that_rank_fusion_prefers() -> None:
    # BM25 finds "rare" far ahead; the dense channel ranks it last of three near-ties.
    rare = cand("rare", {"fts": (0, 1.0), "vec_summary": (2, 0.50)}, 0.50)
    a = cand("a", {"fts": (1, 0.21), "vec_summary": (0, 0.52)}, 0.52)
    b = cand("b", {"fts": (2, 0.20), "vec_summary": (1, 0.51)}, 0.51)
    rest = [cand(f"r{i}", {"vec_summary": (3 + i, 0.3 - i / 100)}, 0.3 - i / 100) for i in range(5)]
    s = fused_scores([rare, a, b, *rest])
    assert max(s, key=lambda k: s[k]) == "rare"
    by_rrf = rank([rare, a, b, *rest], RankParams(limit=3, mmr_lambda=1.0))
    assert by_rrf[0].cand.ref_id == "a"  # rank fusion: two first/second places beat one first


def test_fused_scores_are_bounded_and_lexical_alone_without_vectors() -> None:
    x = cand("x", {"fts": (0, 1.0)}, None)
    y = cand("y", {"pattern": (0, 1.0)}, None)
    s = fused_scores([x, y], lexical_weight=0.3)
    assert s == {"x": 1.0, "y": 0.6}  # no cosine anywhere: the lexical side is the whole score
    z = cand("z", {"exact_identifier": (0, 1.0)}, 0.1)
    w = cand("w", {"vec_summary": (0, 0.9)}, 0.9)
    s = fused_scores([z, w], lexical_weight=0.5)
    assert s == {"z": 0.5, "w": 0.5}
    assert all(0.0 <= v <= 1.0 for v in s.values())
    assert lexical_score(cand("p", {"pattern": (0, 2.0)}, None)) == pytest.approx(0.6)


def test_lexical_power_keeps_a_clear_bm25_lead_over_a_partial_match_with_a_better_cosine() -> None:
    # "lead" holds the query's rare words (BM25 best); "partial" shares one common word with the
    # query (BM25 0.6 of the best) and sits a little closer in cosine
    lead = cand("lead", {"fts": (0, 1.0), "vec_summary": (1, 0.38)}, 0.38)
    partial = cand("partial", {"fts": (1, 0.6), "vec_summary": (0, 0.52)}, 0.52)
    far = cand("far", {"vec_summary": (2, 0.20)}, 0.20)
    linear = fused_scores([lead, partial, far])
    assert linear["partial"] > linear["lead"]  # power 1: the partial match wins on its cosine
    powered = fused_scores([lead, partial, far], lexical_power=1.5)
    assert powered["lead"] > powered["partial"]
    assert powered["lead"] == pytest.approx(linear["lead"])  # the best lexical match keeps 1.0
    assert lexical_score(partial, 1.5) == pytest.approx(0.6**1.5)


def test_cosine_scale_maps_the_pool_range_to_unit_and_clips() -> None:
    sc = CosineScale([0.2, 0.6, None])
    assert sc(0.2) == 0.0 and sc(0.6) == 1.0 and sc(0.4) == pytest.approx(0.5)
    assert sc(0.1) == 0.0 and sc(None) == 0.0
    assert CosineScale([0.5])(0.5) == 1.0


def rows(session: str, n: int, ts: int = 1000, step: int = 0) -> list[dict[str, Any]]:
    return [
        {"id": f"{session}-{i:02d}", "session_id": session, "ts": ts + i * step} for i in range(n)
    ]


def test_adjacency_is_per_session_in_time_then_id_order_within_the_window() -> None:
    same_ts = rows("s1", 3)  # LoCoMo: every turn of a session carries the session's date
    spaced = rows("s2", 3, ts=0, step=40 * 60 * 1000)  # 40 min apart: beyond the window
    adj = adjacency([same_ts[2], *spaced, same_ts[0], same_ts[1]])
    assert adj["s1-00"] == ["s1-01"]
    assert adj["s1-01"] == ["s1-00", "s1-02"]
    assert adj["s2-01"] == []


def test_propagation_lifts_a_memory_by_its_best_neighbour_only() -> None:
    got = propagate({"a": 1.0, "b": 0.1, "c": 0.0}, {"b": ["a", "c"], "a": ["b"]}, 0.5)
    assert got == {"a": 1.05, "b": 0.6, "c": 0.0}


def test_neighbour_spans_cover_each_session_window_once() -> None:
    spans = neighbour_spans([*rows("s'1", 2, ts=10_000, step=5), {"id": "x", "ts": 3}])
    assert spans == [("s'1", 10_000 - 30 * 60_000, 10_005 + 30 * 60_000)]
    assert in_spans({"session_id": "s'1", "ts": 10_000 + 60_000}, spans)
    assert not in_spans({"session_id": "other", "ts": 10_000}, spans)
    assert in_spans({"session_id": "any", "ts": 5}, [(None, 0, 10)])
    sql = spans_where([*spans, (None, 1, 2)])
    assert "session_id = 's''1'" in sql  # quoted
    assert sql.endswith("(ts >= 1 AND ts <= 2)")


def unit(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_expand_pool_adds_related_seed_neighbours_and_sets_every_prior() -> None:
    session = rows("s", 5)
    vecs = [unit(1, 0), unit(1, 0.2), unit(1, 0.5), unit(0, 1), unit(1, 1)]
    for r, v in zip(session, vecs, strict=True):
        r["vec_summary"] = v
    pool = Pool("trace", ("vec_summary",), lambda r: "")
    pool.add_channel("fts", [(session[1], 1.0)])
    pool.add_channel("vec_summary", [(session[0], 1.0), (session[1], 0.98), (session[4], 0.71)])
    asked: list[Any] = []

    async def fetch(spans: list[Any]) -> Sequence[Mapping[str, Any]]:
        asked.append(spans)
        return [r for r in session if in_spans(r, spans)]

    asyncio.run(expand_pool(pool, fetch, [], unit(1, 0), lexical_weight=0.5, weight=0.5, top=3))
    assert len(asked) == 1
    # s-02 follows the seed s-01 and is about the same thing: it joins the pool
    assert set(pool.items) == {"s-00", "s-01", "s-02", "s-04"}
    assert pool.items["s-02"].channels["neighbour"][0] == 0
    # s-03 sits next to the seed s-04 but is less related than anything retrieved: left out
    assert "s-03" not in pool.items
    priors = {k: c.prior for k, c in pool.items.items()}
    assert all(p is not None for p in priors.values())
    assert priors["s-02"] > 0.5 * 0.5 * (0.894 - 0.707) / (1 - 0.707)  # own score + the lift
