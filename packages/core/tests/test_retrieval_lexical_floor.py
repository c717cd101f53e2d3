"""The trace tier's BM25 floor (`retrieval.trace_lexical_floor`), on the hot index and on LanceDB.

One memory matching the query's rare words pushed the memories matching only its common words
under 0.2 of the best BM25 score, and the floor dropped them before fusion: a set's other members
never became candidates (LoCoMo, bench/results/locomo.md, session 23). The vector channels are
switched off here (a cosine floor no memory reaches) and the rank-time threshold too, so a memory
is returned exactly when the BM25 channel kept it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from capture_support import ingest_sessions

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK
from stratamem.core.engine.assemble import open_local_core

NS = Namespace("chat", "ann-bob")
QUERY = "Where did Zanzibar swim at the lake?"
# "lake" is a common word here, "Zanzibar" and "swim" are rare: memory 0.4 matches all three;
# the long memory 1.4 matches "lake" once, between 0.1 and 0.2 of 0.4's BM25 score
SESSIONS = [
    (
        1_700_000_000_000,
        [
            ("Ann: I tried a new pasta recipe at the lake tonight.", "Bob: Was it spicy?"),
            ("Ann: My sister called from the lake in Berlin.", "Bob: How is she doing?"),
            ("Ann: Work was busy this week.", "Bob: Take a break soon."),
            ("Ann: I repainted the kitchen blue.", "Bob: Bright choice!"),
            ("Ann: My puppy Zanzibar swam at the lake today!", "Bob: Cute!"),
        ],
    ),
    (
        1_700_900_000_000,
        [
            ("Ann: The lake concert got cancelled.", "Bob: What a shame."),
            ("Ann: I am reading a novel about sailors.", "Bob: Any good?"),
            ("Ann: My phone screen cracked.", "Bob: Oh no, again?"),
            ("Ann: We planted tomatoes by the lake.", "Bob: Homegrown is best."),
            (
                "Ann: Yesterday after work I took a long slow walk with my friends, then we sat "
                "and talked for hours about old times near the lake until sunset.",
                "Bob: Sounds like a lovely evening with good company.",
            ),
        ],
    ),
]
LOW = "1.4"  # the memory only the common word finds


async def _lexical_hits(home: Path, keys: dict[str, str], **overrides: Any) -> dict[str, list[str]]:
    core = await open_local_core(
        home,
        retrieval__min_trace_sim=0.99,
        retrieval__relative_threshold_floor=0.0,
        **overrides,
    )
    try:
        res = await core.search(
            RetrievalQuery(agent="chat", query=QUERY, namespace=NS, top_k=TopK(0, 12, 0))
        )
    finally:
        await core.shutdown()
    return {
        keys[h.ref_id]: [str(c) for c in h.score_details.get("channels") or ()]
        for h in res.hits
        if h.ref_id in keys
    }


@pytest.mark.parametrize("hot", [True, False], ids=["hot-index", "lancedb"])
async def test_the_trace_bm25_floor_keeps_a_weak_lexical_match_as_a_candidate(
    tmp_path: Path, hot: bool
) -> None:
    keys = await ingest_sessions(tmp_path, SESSIONS, NS)
    shipped = await _lexical_hits(tmp_path, keys, storage__hot_index=hot)
    assert "fts" in shipped.get("0.4", []), shipped
    assert "fts" in shipped.get(LOW, []), shipped
    # memos-core's 0.2 drops it before fusion: nothing else can bring it back
    seed = await _lexical_hits(
        tmp_path, keys, storage__hot_index=hot, retrieval__trace_lexical_floor=0.2
    )
    assert "0.4" in seed and LOW not in seed, seed
