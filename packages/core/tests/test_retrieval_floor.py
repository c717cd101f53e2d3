"""The absolute relevance floor of tier 2 (retrieval/floor.py): a pool where nothing reaches the
cosine floor, the idf-coverage floor or an exact identifier is emptied, so recall injects nothing;
the shipped default keeps it off (every measured threshold cost answerable questions)."""

from __future__ import annotations

import time
from pathlib import Path

from stratamem.contract.dtos import Namespace, RetrievalQuery, TurnResult
from stratamem.core import open_core
from stratamem.core.config.defaults import DEFAULTS
from stratamem.core.retrieval.candidates import Candidate, Pool
from stratamem.core.retrieval.floor import apply_floor, coverage, relevant

NS = Namespace(agent_kind="hermes", profile_id="floor")


def _cand(rid: str, cosine: float | None, text: str = "", **channels: float) -> Candidate:
    return Candidate(
        "trace",
        rid,
        {"id": rid},
        cosine=cosine,
        text=text,
        channels={k: (0, v) for k, v in channels.items()},
    )


def test_coverage_is_the_share_of_idf_weight_a_text_holds() -> None:
    assert coverage(["pottery", "class"], [3.0, 1.0], "I signed up for a pottery course") == 0.75
    assert coverage(["pottery"], [1.0], "nothing related") == 0.0
    assert coverage([], [], "anything") == 0.0


def test_any_of_cosine_coverage_or_identifier_clears_the_floor() -> None:
    terms, weights = ["pottery", "class"], [3.0, 1.0]
    weak = _cand("a", 0.12, "the weather was nice", fts=1.0)
    assert not relevant([weak], terms, weights, min_cosine=0.3, min_coverage=0.6)
    assert relevant([weak, _cand("b", 0.31)], terms, weights, min_cosine=0.3, min_coverage=0.6)
    assert relevant(
        [weak, _cand("c", 0.05, "my pottery teacher")],
        terms,
        weights,
        min_cosine=0.3,
        min_coverage=0.6,
    )
    assert relevant(
        [_cand("d", 0.0, "", exact_identifier=1.0)],
        terms,
        weights,
        min_cosine=0.3,
        min_coverage=0.6,
    )


def test_apply_floor_empties_an_unrelated_pool_and_keeps_a_related_one() -> None:
    pool = Pool("trace", (), lambda r: "")
    pool.items = {"a": _cand("a", 0.1, "weather talk"), "b": _cand("b", 0.2, "lunch")}
    assert apply_floor(pool, ["pottery"], [1.0], min_cosine=0.3, min_coverage=0.6)
    assert pool.items == {}
    pool.items = {"a": _cand("a", 0.1, "weather talk"), "b": _cand("b", 0.45, "clay")}
    assert not apply_floor(pool, ["pottery"], [1.0], min_cosine=0.3, min_coverage=0.6)
    assert set(pool.items) == {"a", "b"}


async def test_search_injects_nothing_for_an_unrelated_query_once_the_floor_is_on(
    tmp_path: Path,
) -> None:
    assert DEFAULTS["retrieval"]["relevance_floor_cosine"] == -1.0  # shipped off
    now = int(time.time() * 1000)
    async with open_core(tmp_path, retrieval__relevance_floor_cosine=0.3) as core:
        for i, (u, a) in enumerate(
            [
                ("I signed up for a pottery class on Saturdays", "Pottery is a lovely hobby!"),
                ("My daughter loves dinosaurs and fossils", "Dinosaur museums are great."),
            ]
        ):
            await core.turn_end(
                TurnResult(
                    agent="hermes",
                    session_id="s1",
                    user_text=u,
                    agent_text=a,
                    ts=now + i,
                    namespace=NS,
                )
            )
        related = await core.search(
            RetrievalQuery(agent="hermes", query="what hobby class did I join?", namespace=NS)
        )
        unrelated = await core.search(
            # shares one word ("Saturdays") with a memory, so BM25 alone would recall it
            RetrievalQuery(
                agent="hermes", query="which bank branches open late on Saturdays?", namespace=NS
            )
        )
    assert related.hits and "pottery" in related.injected_context.lower()
    assert unrelated.hits == () and unrelated.injected_context == ""
