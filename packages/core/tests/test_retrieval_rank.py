"""Pure ranking: rank fusion, exact identifiers, dedupe, relative threshold, smart seeding, MMR, caps."""

from __future__ import annotations

import numpy as np

from stratamem.core.retrieval import RankParams, rank
from stratamem.core.retrieval.candidates import Candidate
from stratamem.core.retrieval.rank import dedupe_repeated, relative_threshold, score_candidates


def vec(*xs: float) -> np.ndarray:
    v = np.array(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def cand(
    rid: str,
    channels: dict[str, tuple[int, float]],
    *,
    kind: str = "trace",
    tier: int = 2,
    v: np.ndarray | None = None,
    cos: float | None = None,
    row: dict[str, object] | None = None,
    text: str = "",
) -> Candidate:
    return Candidate(
        kind,
        rid,
        {"id": rid, **(row or {})},
        tier,
        dict(channels),
        [v] if v is not None else [],
        cos,
        0.0,
        text,
    )


def ids(items: list) -> list[str]:  # type: ignore[type-arg]
    return [it.cand.ref_id for it in items]


def test_a_perfect_pattern_score_does_not_outrank_a_vector_and_bm25_match() -> None:
    # the reference used the raw best channel score: a 1.0 pattern match beat cosine 0.6
    words = cand("question-words", {"pattern": (0, 1.0)}, cos=0.1, v=vec(1, 0, 0))
    right = cand("answer", {"vec_summary": (0, 0.6), "fts": (0, 1.0)}, cos=0.6, v=vec(0, 1, 0))
    assert ids(rank([words, right], RankParams(limit=2)))[0] == "answer"


def test_fusion_uses_ranks_so_score_scales_do_not_matter() -> None:
    a = cand("a", {"fts": (0, 1000.0)})
    b = cand("b", {"fts": (0, 0.001)})
    ra, rb = score_candidates([a, b], 60)
    assert ra.relevance == rb.relevance


def test_agreeing_channels_beat_a_single_channel() -> None:
    both = cand("both", {"vec_summary": (1, 0.5), "fts": (1, 3.0)}, cos=0.5)
    one = cand("one", {"vec_summary": (0, 0.52)}, cos=0.52)
    assert ids(rank([one, both], RankParams(limit=2)))[0] == "both"


def test_query_identifiers_drop_traces_without_them() -> None:
    ident = "build_7f3a9c2e1d4b"
    with_id = cand("x", {"fts": (1, 1.0)}, text=f"deploy {ident} ok")
    without = cand("y", {"vec_summary": (0, 0.9)}, cos=0.9)
    skill = cand("s", {"vec": (0, 0.5)}, kind="skill", tier=1, cos=0.5)
    got = ids(rank([with_id, without, skill], RankParams(identifiers=(ident,))))
    assert set(got) == {"x", "s"}


def test_repeated_questions_keep_the_evidence_bearing_answer() -> None:
    ack = cand("ack", {"fts": (0, 1.0)}, row={"user_text": "My dog is Rex", "agent_text": "ok!"})
    real = cand(
        "real",
        {"fts": (1, 1.0)},
        row={"user_text": "my dog is rex.", "agent_text": "Rex, noted as your dog's name."},
    )
    same = cand(
        "same",
        {"fts": (2, 1.0)},
        row={"user_text": "My dog is Rex", "agent_text": "Rex, noted as your dog's name"},
    )
    other = cand("other", {"fts": (3, 1.0)}, row={"user_text": "Weather?", "agent_text": "sunny"})
    got = ids(dedupe_repeated(score_candidates([ack, real, same, other], 60)))
    assert got == ["real", "other"]


def test_relative_threshold_drops_weak_items_unless_two_channels_and_one_strong() -> None:
    top = cand("top", {"vec_summary": (0, 0.9), "fts": (0, 1.0), "pattern": (0, 1.0)}, cos=0.9)
    weak = cand("weak", {"pattern": (40, 0.3)}, cos=0.0)
    bypass = cand("bypass", {"pattern": (45, 0.3), "vec_summary": (45, 0.3)}, cos=0.0)
    items = score_candidates([top, weak, bypass], 60)
    kept = relative_threshold(items, RankParams(relative_floor=0.5))
    assert ids(kept) == ["top", "bypass"] and kept[1].bypassed


def test_mmr_prefers_a_diverse_second_item_over_a_near_duplicate() -> None:
    a = cand("a", {"vec_summary": (0, 0.8)}, v=vec(1, 0, 0), cos=0.8)
    dup = cand("dup", {"vec_summary": (1, 0.79)}, v=vec(1, 0.01, 0), cos=0.79)
    other = cand("other", {"vec_summary": (2, 0.7)}, v=vec(0, 1, 0), cos=0.7)
    assert ids(rank([a, dup, other], RankParams(limit=2, smart_seed=False))) == ["a", "other"]


def test_per_tier_caps_and_total_limit_hold() -> None:
    traces = [cand(f"t{i}", {"fts": (i, 1.0)}, v=vec(1, i, 0)) for i in range(8)]
    skills = [
        cand(f"s{i}", {"fts": (i, 1.0)}, kind="skill", tier=1, v=vec(0, 1, i)) for i in range(5)
    ]
    got = rank(traces + skills, RankParams(limit=6, tier_caps={1: 1, 2: 4, 3: 2}))
    tiers = [it.cand.tier for it in got]
    assert len(got) == 5 and tiers.count(1) == 1 and tiers.count(2) == 4


def test_smart_seed_gives_a_strong_enough_tier_one_skill_a_place() -> None:
    traces = [
        cand(f"t{i}", {"vec_summary": (i, 0.8), "fts": (i, 1.0)}, cos=0.8, v=vec(1, i * 0.01, 0))
        for i in range(3)
    ]
    skill = cand("skill", {"vec": (0, 0.7)}, kind="skill", tier=1, cos=0.7, v=vec(1, 0, 0.01))
    seeded = rank([*traces, skill], RankParams(limit=2, smart_seed=True, smart_seed_ratio=0.5))
    unseeded = rank([*traces, skill], RankParams(limit=2, smart_seed=False))
    assert "skill" in ids(seeded)
    assert "skill" not in ids(unseeded)


def test_smart_seed_skips_a_tier_far_below_the_pool_top() -> None:
    top = cand("t", {"vec_summary": (0, 0.9), "fts": (0, 1.0)}, cos=0.9, v=vec(1, 0, 0))
    far = cand("wm", {"fts": (9, 0.2)}, kind="world_model", tier=3, cos=0.0, v=vec(1, 0.001, 0))
    got = rank([top, far], RankParams(limit=1, smart_seed_ratio=0.7))
    assert ids(got) == ["t"]


def test_final_order_is_by_score_and_details_are_reported() -> None:
    items = rank(
        [cand("a", {"fts": (0, 1.0)}, v=vec(1, 0)), cand("b", {"fts": (1, 1.0)}, v=vec(0, 1))],
        RankParams(limit=2),
    )
    assert items[0].score >= items[1].score
    d = items[0].details("default", 0.7)
    assert d["channels"] == ["fts"] and d["mmr_lambda"] == 0.7


def test_guidance_is_deduplicated_and_capped_at_three_lines_each() -> None:
    import json

    from stratamem.core.retrieval.guidance import collect_guidance

    rows = [
        {
            "guidance_json": json.dumps(
                {"preference": ["Use A", "use  a", "B", "C", "D"], "anti_pattern": ["X"]}
            )
        },
        {"guidance_json": "not json"},
        {"guidance_json": json.dumps({"antiPattern": ["x", "Y"]})},
    ]
    assert collect_guidance(rows) == (["Use A", "B", "C"], ["X", "Y"])


def test_a_session_penalty_leaves_room_for_other_sessions() -> None:
    # evidence of a question about several occasions sits in several sessions, while the
    # neighbour lift crowds the top of the list with one session's turns
    def trace(rid: str, session: str, prior: float, axis: int) -> Candidate:
        c = cand(rid, {"fts": (0, 1.0)}, v=vec(*np.eye(5)[axis]), row={"session_id": session})
        c.prior = prior
        return c

    pool = [
        trace("a1", "s1", 0.90, 0),
        trace("a2", "s1", 0.88, 1),
        trace("a3", "s1", 0.86, 2),
        trace("b1", "s2", 0.84, 3),
        trace("c1", "s3", 0.83, 4),
    ]
    plain = RankParams(limit=3, smart_seed=False)
    assert ids(rank(pool, plain)) == ["a1", "a2", "a3"]
    spread = RankParams(limit=3, smart_seed=False, session_penalty=0.06)
    assert ids(rank(pool, spread)) == ["a1", "b1", "c1"]
    # the first ``session_free`` chosen traces of a session do not count against it
    one_free = RankParams(limit=3, smart_seed=False, session_penalty=0.06, session_free=1)
    assert ids(rank(pool, one_free)) == ["a1", "a2", "b1"]


def test_the_session_penalty_picks_the_list_but_leaves_its_order_to_relevance() -> None:
    # a second trace of a session chosen under the penalty still ranks by its own MMR score
    # above a weaker trace of another session: the penalty decides membership, not order (the
    # evidence the list's reader sees first stays the best supported)
    def trace(rid: str, session: str, prior: float, axis: int) -> Candidate:
        c = cand(rid, {"fts": (0, 1.0)}, v=vec(*np.eye(4)[axis]), row={"session_id": session})
        c.prior = prior
        return c

    pool = [trace("a1", "s1", 0.90, 0), trace("a2", "s1", 0.88, 1), trace("b1", "s2", 0.80, 2)]
    spread = RankParams(limit=3, smart_seed=False, session_penalty=0.06)
    assert ids(rank(pool, spread)) == ["a1", "a2", "b1"]
