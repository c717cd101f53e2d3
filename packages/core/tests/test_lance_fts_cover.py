"""The LanceDB path's text search does not depend on when its FTS index was built: rows written
after the build (appended, rewritten) and rows deleted since are folded in before a text query, so
the same memories rank the same whatever batches they arrived in, and as the hot index ranks them
(storage/fts_cover.py; bench/results/lance-fts-session18.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from test_retrieval_dense_query import NS, PAIRS, QUESTION, pair_turn

from stratamem.contract.dtos import RetrievalQuery, TopK
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.ownership import Scope

DIM = 8
TEXTS = [
    "kitten sleeps on the keyboard",
    "the kitten and the dog",
    "dog walks in the park",
    "a park bench in the rain",
    "rain again, the kitten stays in",
    "keyboard shortcuts for the editor",
    "the editor crashed in the rain",
    "a dog, a kitten and a parrot",
]
QUERIES = ["kitten keyboard", "rain park", "dog editor"]
SCOPE = Scope.everything("test")


def _row(i: int, text: str) -> dict[str, object]:
    return {
        "id": f"tr_{i:04d}",
        "episode_id": "ep_1",
        "session_id": "se_1",
        "ts": i,
        "turn_id": i,
        "user_text": text,
        "agent_text": "",
        "search_text": text,
        "owner_agent_kind": "a",
        "owner_profile_id": "default",
        "share_scope": "private",
        "vec_summary": np.ones(DIM, dtype=np.float32),
    }


async def _store(path: Path, *, hot: bool = True) -> LanceStore:
    """With a hot index (the default) the LanceDB path folds when it reads; without one the fold
    starts when a write lands (``FtsCover.soon``)."""
    return await LanceStore(path, DIM, "m", {"hot_index": hot}).open()


async def _ranking(store: LanceStore) -> dict[str, list[tuple[str, float]]]:
    out = {}
    for q in QUERIES:
        rows = await store.fts_search("traces", q, SCOPE, 20, columns=["id"])
        out[q] = sorted((str(r["id"]), round(float(r["_score"]), 4)) for r in rows)
    return out


async def _written(path: Path, batches: list[list[int]]) -> LanceStore:
    """A store holding ``TEXTS`` written in ``batches`` (the index is built on the first, as the
    journal's writer does with its first applied batch)."""
    store = await _store(path)
    for batch in batches:
        await store.insert("traces", [_row(i, TEXTS[i]) for i in batch])
        await store.ensure_fts("traces")
    return store


async def test_rows_written_after_the_index_was_built_score_as_if_written_at_once(
    tmp_path: Path,
) -> None:
    whole = await _written(tmp_path / "whole", [list(range(8))])
    want = await _ranking(whole)
    whole.close()
    for first in (1, 3, 6):
        rest = [[i] for i in range(first, 8)]
        store = await _written(tmp_path / f"first{first}", [list(range(first)), *rest])
        assert await _ranking(store) == want, f"index built on the first {first} rows"
        assert store.fts.folds == 1  # one fold for every row written since the build
        assert await _ranking(store) == want
        assert store.fts.folds == 1  # nothing written since: no fold
        store.close()


async def test_deleted_and_rewritten_rows_leave_the_scores_of_a_store_that_never_had_them(
    tmp_path: Path,
) -> None:
    store = await _written(tmp_path / "edited", [list(range(8))])
    await store.delete("traces", ["tr_0001", "tr_0004", "tr_0007"])
    await store.update("traces", "tr_0002", {"search_text": "kitten park keyboard"})
    kept = [0, 2, 3, 5, 6]
    fresh = await _store(tmp_path / "fresh")
    rows = [_row(i, TEXTS[i]) for i in kept]
    rows[1]["search_text"] = "kitten park keyboard"
    await fresh.insert("traces", rows)
    await fresh.ensure_fts("traces")
    assert await _ranking(store) == await _ranking(fresh)
    store.close()
    fresh.close()


async def test_a_reopened_store_folds_rows_an_earlier_process_left_unindexed(
    tmp_path: Path,
) -> None:
    store = await _written(tmp_path / "a", [[0, 1], [2, 3, 4], [5, 6, 7]])
    store.close()  # the process ends before an optimize
    whole = await _written(tmp_path / "b", [list(range(8))])
    want = await _ranking(whole)
    whole.close()
    again = await _store(tmp_path / "a")
    assert await _ranking(again) == want
    again.close()


async def test_without_a_hot_index_the_fold_starts_when_the_write_lands(tmp_path: Path) -> None:
    whole = await _written(tmp_path / "whole", [list(range(8))])
    want = await _ranking(whole)
    whole.close()
    store = await _store(tmp_path / "cold", hot=False)
    await store.insert("traces", [_row(i, TEXTS[i]) for i in range(3)])
    await store.ensure_fts("traces")
    await store.insert("traces", [_row(i, TEXTS[i]) for i in range(3, 8)])
    await store.fts.settle("traces")  # the fold the write started
    folds = store.fts.folds
    assert folds == 1
    assert await _ranking(store) == want
    assert store.fts.folds == folds  # the query found the index current
    store.close()


async def test_an_optimize_leaves_nothing_to_fold(tmp_path: Path) -> None:
    store = await _written(tmp_path, [[0], [1, 2, 3], [4, 5, 6, 7]])
    await store.optimize()
    await _ranking(store)
    assert store.fts.folds == 0
    store.close()


async def _forced(home: Path, first: int) -> list[tuple[str, list[str]]]:
    """The conversation written with the writer's first batch holding ``first`` turns (its lock
    held until then), then the question on the LanceDB path: (memory, channels) per hit."""
    core = await open_local_core(home, storage__hot_index=False)
    try:
        held = core.journal.write_lock
        await held.acquire()
        for i in range(len(PAIRS)):
            await core.turn_end(pair_turn(i))
            if i + 1 == first:
                held.release()
                await core.flush(60)  # the first applied batch: the index is built on it
        await core.flush(60)
        return await _hits(core)
    finally:
        await core.shutdown()


async def _hits(core: Any) -> list[tuple[str, list[str]]]:
    res = await core.search(
        RetrievalQuery(agent="chat", query=QUESTION, namespace=NS, top_k=TopK(0, 5, 0))
    )
    return [(h.snippet, list(h.score_details["channels"])) for h in res.hits]


async def test_the_lancedb_path_ranks_a_conversation_alike_whatever_its_first_batch(
    tmp_path: Path,
) -> None:
    # session 17's audit: with the index built on the first 1, 6 or 12 of 24 turns the LanceDB
    # path kept other memories than the hot index, and lost the kitten from its top five
    core = await open_local_core(tmp_path / "hot")
    try:
        for i in range(len(PAIRS)):
            await core.turn_end(pair_turn(i))
        await core.flush(60)
        hot = await _hits(core)
    finally:
        await core.shutdown()
    assert any("kitten" in text for text, _ in hot)
    # all but the kitten are the FTS channel's alone ("Ann" is in every memory): their order is
    # BM25's, which both paths compute over the same rows
    assert sum(channels == ["fts"] for _, channels in hot) >= 4, hot
    for first in (1, 6, 12, 24):
        assert await _forced(tmp_path / f"first{first}", first) == hot, f"first batch {first}"
