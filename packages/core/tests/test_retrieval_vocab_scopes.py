"""Query expansion counts words over the memories the caller may see, never over the whole home:
a word frequent in one namespace's talk is not "rare" for it because other namespaces hold most
of the home's memories (the long-memory set's six personas in one home lost R@10 that way,
bench/results/locomo.md, session 9). Real MiniLM, real LanceDB, both retrieval paths."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK, TurnResult
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.hotindex.lexical import analyze
from stratamem.core.retrieval.dense_query import dense_text
from stratamem.core.retrieval.hot_channels import visible_df
from stratamem.core.storage.ownership import Scope
from stratamem.core.vocab.store import WordStore

ANN = Namespace("chat", "ann")
BOB = Namespace("chat", "bob")
T0 = 1_700_000_000_000
TOPICS = [
    "apples",
    "river",
    "mountain",
    "violin",
    "office",
    "meeting",
    "pizza",
    "tennis",
    "jacket",
    "laptop",
    "coffee",
    "sunset",
    "painting",
    "candle",
    "library",
    "bridge",
    "harbour",
    "forest",
    "cinema",
    "bakery",
    "dentist",
    "marathon",
    "tomatoes",
    "bicycle",
    "tyres",
    "bread",
    "museum",
    "dinosaur",
    "novel",
    "sailors",
    "roof",
    "curry",
    "train",
    "weather",
    "sister",
    "kitchen",
    "paint",
    "concert",
    "chess",
    "yoga",
    "camping",
    "lake",
    "fishing",
    "guitar",
    "opera",
    "theatre",
    "poetry",
    "garden",
    "piano",
    "soup",
]
#: Ann talks about her Xbox in a quarter of her memories: common in her scope
ANN_XBOX = [
    "Ann: I played on my Xbox until midnight.",
    "Ann: The Xbox controller needs new batteries.",
    "Ann: My nephew borrowed the Xbox for the weekend.",
    "Ann: I cleaned the dust out of the Xbox.",
    "Ann: The Xbox is under the television now.",
]
ANN_TALK = ANN_XBOX + [f"Ann: I spent the afternoon on {t} again." for t in TOPICS[:15]]
#: Bob mentions his once among 60 memories: rare in his scope
BOB_XBOX = "Bob: My brother gave me his old Xbox."
BOB_TALK = (
    [BOB_XBOX]
    + [f"Bob: I read about {t} this morning." for t in TOPICS]
    + [f"Bob: We talked about {t} at dinner." for t in TOPICS[: 59 - len(TOPICS)]]
)
#: 6 of the home's 80 memories hold "xbox": 7.5 %, under the 10 % cap home-wide; 25 % of Ann's
#: (over it), 1.7 % of Bob's (under it)
CAP = {"retrieval__expand_vocab_max_share": 0.1}
ON = {"retrieval__expand_vocab": True, **CAP}


async def _ingest(home: Path) -> None:
    core = await open_local_core(home, **ON)
    try:
        for ns, talk in ((ANN, ANN_TALK), (BOB, BOB_TALK)):
            for i, text in enumerate(talk):
                await core.turn_end(
                    TurnResult(
                        agent="chat",
                        session_id=f"{ns.profile_id}-{i // 5}",
                        user_text=text,
                        agent_text="Noted.",
                        ts=T0 + i * 60_000,
                        namespace=ns,
                    )
                )
        await core.flush(120)
    finally:
        await core.shutdown()


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("vocab-scopes")
    asyncio.run(_ingest(home))
    return home


@pytest.fixture
def home(filled: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "home"
    shutil.copytree(filled, dst)
    return dst


async def _search(home: Path, ns: Namespace, query: str, **overrides: Any) -> dict[str, float]:
    core = await open_local_core(home, **{**ON, **overrides})
    try:
        res = await core.search(
            RetrievalQuery(agent="chat", query=query, namespace=ns, top_k=TopK(0, 10, 0))
        )
    finally:
        await core.shutdown()
    return {h.snippet: round(h.score, 6) for h in res.hits}


def _score(hits: dict[str, float], text: str) -> float:
    return next((s for snippet, s in hits.items() if text in snippet), 0.0)


def test_the_store_counts_each_owner_apart(filled: Path) -> None:
    store = WordStore.load(filled / "data" / "vocab", 384)
    ann, bob = store.visible(Scope.visible(ANN)), store.visible(Scope.visible(BOB))
    assert (ann.memories, bob.memories) == (len(ANN_TALK), len(BOB_TALK))
    assert (ann.df("xbox"), bob.df("xbox")) == (len(ANN_XBOX), 1)
    assert store.visible(Scope.visible(Namespace("chat", "carol"))).memories == 0


@pytest.mark.parametrize("hot", [True, False], ids=["hot", "lancedb"])
async def test_a_word_common_in_the_callers_memories_is_not_added(home: Path, hot: bool) -> None:
    # "xbox" is a neighbour of "console" and rare home-wide, but a quarter of Ann's memories
    # hold it: not an informative word for her, so her ranking is the one without expansion
    query = "What console does Ann own?"
    path = {"storage__hot_index": hot}
    on = await _search(home, ANN, query, **path)
    off = await _search(home, ANN, query, retrieval__expand_vocab=False, **path)
    assert _score(off, ANN_XBOX[0]) > 0
    assert on == off


@pytest.mark.parametrize("hot", [True, False], ids=["hot", "lancedb"])
async def test_the_same_word_rare_in_the_callers_memories_is_added(home: Path, hot: bool) -> None:
    query = "What console does Bob own?"
    path = {"storage__hot_index": hot}
    on = await _search(home, BOB, query, **path)
    off = await _search(home, BOB, query, retrieval__expand_vocab=False, **path)
    assert _score(on, BOB_XBOX) > _score(off, BOB_XBOX) + 0.03


async def test_a_store_with_home_wide_counts_is_counted_again_per_owner(home: Path) -> None:
    # a store written before the counts were kept per owner: its lists and vectors are kept,
    # its counts are rebuilt in the background (plain BM25 until then)
    import numpy as np

    folder = home / "data" / "vocab"
    with np.load(folder / "state.npz") as z:
        nb, nc, meta = z["nb"], z["nc"], z["meta"]
    np.savez(
        folder / "state.npz",
        nb=nb,
        nc=nc,
        toks=np.array(["xbox"]),
        counts=np.array([6]),
        meta=meta[:5],
    )
    words = WordStore.load(folder, 384).words
    core = await open_local_core(home, **ON)
    try:
        vocab = core.services.vocab
        st = await vocab.store()
        assert not st.complete and st.words == words
        query = RetrievalQuery(
            agent="chat", query="What console does Ann own?", namespace=ANN, top_k=TopK(0, 10, 0)
        )
        await core.search(query)
        assert vocab._build is not None
        await vocab._build
        assert st.complete and st.words == words  # nothing embedded again
        assert st.visible(Scope.visible(ANN)).df("xbox") == len(ANN_XBOX)
    finally:
        await core.shutdown()
    again = WordStore.load(folder, 384)
    assert again.complete and again.visible(Scope.visible(BOB)).memories == len(BOB_TALK)


async def test_the_hot_index_counts_common_words_over_the_callers_memories(home: Path) -> None:
    # every memory of Ann's names her, a quarter of the home's: her question is embedded without
    # "Ann" on the hot index as on the LanceDB path (whose sample is her memories)
    core = await open_local_core(home, **ON)
    try:
        hot = core.store.hot.scoped("traces", Scope.visible(ANN))
        df, n = visible_df(hot)
        assert (n, df("ann"), df("xbox"), df("bob")) == (len(ANN_TALK), len(ANN_TALK), 5, 0)
        assert dense_text("What console does Ann own?", df, n, tokens=analyze) == (
            "What console does own?"
        )
        everyone = visible_df(core.store.hot.scoped("traces", Scope.everything("test")))
        assert everyone[1] == len(ANN_TALK) + len(BOB_TALK) and everyone[0]("xbox") == 6
    finally:
        await core.shutdown()
