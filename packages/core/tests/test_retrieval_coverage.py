"""The coverage-aware final pick (``retrieval.aspect_coverage``, retrieval/coverage.py): a memory
holding an aspect of the query that the picked memories lack beats one that repeats them; the
hot index's postings and the analysed texts tell the same coverage; both retrieval paths pick
alike. Real LanceDB, real hot index, no embedder (the lexical channel alone)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK, TurnResult
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.retrieval import RankParams, rank
from stratamem.core.retrieval.candidates import Candidate
from stratamem.core.retrieval.coverage import (
    Aspects,
    aspects_of,
    covers_by_postings,
    covers_by_text,
    for_pick,
)
from stratamem.core.retrieval.query_shape import asks_for_set
from stratamem.core.storage.ownership import Scope

NS = Namespace("chat", "maria")
T0 = 1_700_000_000_000


def _trace(rid: str, text: str, prior: float, axis: int) -> Candidate:
    v = np.zeros(8, dtype=np.float32)
    v[axis] = 1.0  # orthogonal vectors: MMR's redundancy is 0 for every pair
    c = Candidate("trace", rid, {"id": rid, "search_text": text}, 2, {"fts": (0, 1.0)}, [v])
    c.prior = prior
    return c


def _ids(items: list[Any]) -> list[str]:
    return [it.cand.ref_id for it in items]


POOL = [
    ("e1", "Maria: We spent a week in London, England.", 0.90),
    ("e2", "Maria: England was rainy but we loved the museums.", 0.88),
    ("s1", "Maria: Spain was sunny, the beaches were great.", 0.80),
    ("x1", "Maria: I baked bread this morning.", 0.70),
]
#: "What European countries has Maria been to?": the expansion added england and spain
ASPECTS = aspects_of([], [("england", 0.3), ("spain", 0.3)], None, 0)


def test_the_pick_takes_the_member_the_list_lacks() -> None:
    pool = [_trace(rid, text, prior, i) for i, (rid, text, prior) in enumerate(POOL)]
    plain = RankParams(limit=2, smart_seed=False)
    assert _ids(rank(pool, plain)) == ["e1", "e2"]
    pool = [_trace(rid, text, prior, i) for i, (rid, text, prior) in enumerate(POOL)]
    spread = RankParams(limit=2, smart_seed=False, aspects=ASPECTS, coverage_weight=0.2)
    got = rank(pool, spread)
    assert _ids(got) == ["e1", "s1"]
    # the gain picks the list, not its order (the score leaves it out, as the session penalty)
    assert got[1].score == pytest.approx(0.7 * 0.80)
    # once spain is covered too, nothing is left to gain: the third pick is by relevance
    pool = [_trace(rid, text, prior, i) for i, (rid, text, prior) in enumerate(POOL)]
    three = RankParams(limit=3, smart_seed=False, aspects=ASPECTS, coverage_weight=0.2)
    assert _ids(rank(pool, three)) == ["e1", "e2", "s1"]


def test_a_covered_aspect_keeps_its_decayed_share_and_the_reach_is_bounded() -> None:
    cands = [_trace(rid, text, prior, i) for i, (rid, text, prior) in enumerate(POOL)]
    cov = for_pick(cands, ASPECTS, 1.0, top=3, covers=None, decay=0.5)
    assert cov is not None
    assert cov.gains().tolist() == pytest.approx([0.5, 0.5, 0.5, 0.0])  # x1: past the reach
    cov.chose(0)
    assert cov.gains().tolist() == pytest.approx([0.25, 0.25, 0.5, 0.0])
    assert for_pick(cands, ASPECTS, 0.0, top=3, covers=None) is None
    assert for_pick(cands, Aspects(), 1.0, top=3, covers=None) is None


def test_aspects_weigh_by_idf_and_drop_what_no_memory_holds() -> None:
    df = {"maria": 100, "countri": 5, "england": 2, "spain": 0}.get
    got = aspects_of(["maria", "countri"], [("england", 0.3), ("spain", 0.3)], df, 100)
    w = dict(zip(got.tokens, got.weights, strict=True))
    assert "spain" not in w  # no memory to cover it with
    raw = {
        "maria": math.log(1 + 0.5 / 100.5),
        "countri": math.log(1 + 95.5 / 5.5),
        "england": 0.3 * math.log(1 + 98.5 / 2.5),
    }
    total = sum(raw.values())
    assert w == pytest.approx({k: v / total for k, v in raw.items()})
    assert sum(got.weights) == pytest.approx(1.0)
    # the query's own words can be left out (own weight 0): the added words alone
    only = aspects_of(["maria", "countri"], [("england", 0.3)], df, 100, own_weight=0.0)
    assert only.tokens == ("england",)


TALK = [
    "Maria: We spent a week in England, the countries of Europe are lovely, England again.",
    "Maria: England was rainy, visited countries in Europe, England is lovely.",
    "Maria: Spain was sunny.",
    "Maria: I baked bread this morning.",
    "Maria: The bus was late again today.",
    "Maria: My cat knocked over the plant.",
]


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import asyncio

    home = tmp_path_factory.mktemp("coverage")

    async def ingest() -> None:
        core = await open_local_core(home, embedding__provider="none")
        try:
            for i, text in enumerate(TALK):
                await core.turn_end(
                    TurnResult(
                        agent="chat",
                        session_id=f"s{i}",
                        user_text=text,
                        agent_text="Noted.",
                        ts=T0 + i * 86_400_000,
                        namespace=NS,
                    )
                )
            await core.flush(120)
            await core.store.optimize()
        finally:
            await core.shutdown()

    asyncio.run(ingest())
    return home


async def test_postings_tell_the_same_coverage_as_the_texts(filled: Path) -> None:
    core = await open_local_core(filled, embedding__provider="none")
    try:
        hot = core.store.hot.scoped("traces", Scope.visible(NS))
        cands = []
        for slot in range(hot.n):
            row = hot.full_row(slot)
            cands.append(Candidate("trace", str(row["id"]), row))
        # a row the table does not hold (a pending turn): analysed from its text
        cands.append(Candidate("trace", "pending", {"id": "pending", "search_text": "Spain!"}))
        toks = ["england", "spain", "countri", "bread", "absent"]
        by_post = covers_by_postings(hot)(cands, toks)
        assert by_post.tolist() == covers_by_text(cands, toks).tolist()
        # the rows the channels made give the slots without the id index: the same coverage
        made = {slot: c.row for slot, c in enumerate(cands[:-1])}
        assert covers_by_postings(hot, made)(cands, toks).tolist() == by_post.tolist()
        assert by_post[:, 0].sum() == 2 and by_post[:, 1].sum() == 2 and not by_post[:, 4].any()
    finally:
        await core.shutdown()


@pytest.mark.parametrize("hot", [True, False], ids=["hot", "lancedb"])
async def test_both_paths_pick_the_missing_member(filled: Path, hot: bool) -> None:
    async def search(**overrides: Any) -> list[str]:
        core = await open_local_core(
            filled, embedding__provider="none", storage__hot_index=hot, **overrides
        )
        try:
            res = await core.search(
                RetrievalQuery(
                    agent="chat",
                    query="Which countries has Maria visited, England or Spain?",
                    namespace=NS,
                    top_k=TopK(0, 2, 0),
                )
            )
        finally:
            await core.shutdown()
        return sorted(h.snippet.split(":", 1)[1].split()[0] for h in res.hits)

    # the two England turns outrank the Spain one; with coverage the second England turn,
    # which adds nothing the first lacks, gives way to it
    assert await search() == ["England", "We"]
    assert await search(retrieval__aspect_coverage=5.0) == ["England", "Spain"]


#: one fact asked for (no rule of retrieval/query_shape.py fires): "country" is singular
POINTED_Q = "Which country of Europe did Maria visit, England or Spain?"


@pytest.mark.parametrize("hot", [True, False], ids=["hot", "lancedb"])
async def test_the_gate_leaves_a_pointed_query_to_relevance(filled: Path, hot: bool) -> None:
    assert not asks_for_set(POINTED_Q)

    async def search(**overrides: Any) -> list[str]:
        core = await open_local_core(
            filled, embedding__provider="none", storage__hot_index=hot, **overrides
        )
        try:
            res = await core.search(
                RetrievalQuery(agent="chat", query=POINTED_Q, namespace=NS, top_k=TopK(0, 2, 0))
            )
        finally:
            await core.shutdown()
        return sorted(h.snippet.split(":", 1)[1].split()[0] for h in res.hits)

    plain = await search()
    assert plain == ["England", "We"]
    # the default gate ("set_query"): a pointed query's pick stays by relevance
    assert await search(retrieval__aspect_coverage=5.0) == plain
    # ungated, coverage spreads it as it spreads a set query
    spread = await search(retrieval__aspect_coverage=5.0, retrieval__aspect_coverage_gate="always")
    assert spread == ["England", "Spain"]


def test_the_knobs_are_range_checked(tmp_path: Path) -> None:
    from stratamem.core.config.loader import load_config

    assert load_config(tmp_path, {"retrieval__aspect_coverage": 0.8})["retrieval"][
        "aspect_coverage"
    ] == pytest.approx(0.8)
    with pytest.raises(Exception, match="aspect_coverage_decay"):
        load_config(tmp_path, {"retrieval__aspect_coverage_decay": 2.0})
    assert load_config(tmp_path, {})["retrieval"]["aspect_coverage_gate"] == "set_query"
    assert (
        load_config(tmp_path, {"retrieval__aspect_coverage_gate": "always"})["retrieval"][
            "aspect_coverage_gate"
        ]
        == "always"
    )
    with pytest.raises(Exception, match="aspect_coverage_gate"):
        load_config(tmp_path, {"retrieval__aspect_coverage_gate": "sometimes"})
