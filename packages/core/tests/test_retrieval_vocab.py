"""Query expansion with the home's own vocabulary (vocab/): a memory that names a thing by another
word than the question ("Xbox" / "console") is found by BM25 through the word store's nearest
words, on the hot index and on the LanceDB path alike; the store is filled by the capture writer,
survives a restart, is built in the background for a home that has none, and the switch off
changes nothing."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK, TurnResult
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.vocab.store import WordStore

NS = Namespace("chat", "ann-bob")
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
    "job",
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
]
# ≥ 50 memories: a word held by one of them is rare enough (≤ 2 %) to be added
PAIRS = [
    (f"Ann: I spent the afternoon on {t} again.", f"Bob: Sounds good, how was the {t}?")
    for t in TOPICS
]
XBOX = "Ann: I finally bought an Xbox and I play it every evening."
TRIP = "Ann: We drove to Oregon and California last summer."
PAIRS += [
    (XBOX, "Bob: Which games do you have?"),
    ("Bob: My old console broke, so I sold it.", "Ann: Bad luck."),
    ("Ann: The cat from next door sat in my garden all day.", "Bob: Lovely, a sunny garden."),
    (TRIP, "Bob: The coast there is beautiful."),
]
#: "console" is a word of the home; "states" is not (embedded with the query)
CONSOLE = "What console does Ann own?"
#: the switch, with the filters this small home needs: one memory of 52 is 1.9 % of them, over
#: the shipped 1 % share (the shipped θ 0.35 and share: bench/results/locomo.md, session 9)
ON = {
    "retrieval__expand_vocab": True,
    "retrieval__expand_vocab_max_share": 0.02,
    "retrieval__expand_vocab_min_query_cosine": 0.3,
}
STATES = "Which states did Ann visit?"


async def _ingest(home: Path, **overrides: Any) -> None:
    core = await open_local_core(home, **overrides)
    try:
        for i, (user, agent) in enumerate(PAIRS):
            await core.turn_end(
                TurnResult(
                    agent="chat",
                    session_id=f"s{i // 6}",
                    user_text=user,
                    agent_text=agent,
                    ts=T0 + i * 60_000,
                    namespace=NS,
                )
            )
        await core.flush(60)
    finally:
        await core.shutdown()


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("vocab-home")
    import asyncio

    asyncio.run(_ingest(home, **ON))
    return home


@pytest.fixture
def home(filled: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "home"
    shutil.copytree(filled, dst)
    return dst


async def _ranked(core: Any, query: str) -> list[tuple[str, float]]:
    res = await core.search(
        RetrievalQuery(agent="chat", query=query, namespace=NS, top_k=TopK(0, 5, 0))
    )
    return [(h.snippet, round(h.score, 6)) for h in res.hits]


async def _search(home: Path, query: str, **overrides: Any) -> list[tuple[str, float]]:
    core = await open_local_core(home, **{**ON, **overrides})
    try:
        return await _ranked(core, query)
    finally:
        await core.shutdown()


def _holds(hits: list[tuple[str, float]], text: str) -> bool:
    return any(text in snippet for snippet, _ in hits)


def _place(hits: list[tuple[str, float]], text: str) -> tuple[int, float]:
    """(rank, score) of the memory holding ``text``; (99, 0) when it is not returned."""
    for i, (snippet, score) in enumerate(hits):
        if text in snippet:
            return i, score
    return 99, 0.0


async def test_a_neighbour_of_a_query_word_lifts_the_memory_that_holds_it(home: Path) -> None:
    store = WordStore.load(home / "data" / "vocab", 384)
    assert "console" in store.index and "xbox" in store.neighbours("console")[0]
    on = await _search(home, CONSOLE)
    off = await _search(home, CONSOLE, retrieval__expand_vocab=False)
    # without the expansion only the dense channel finds it; BM25 now matches "xbox" too
    (rank_on, score_on), (rank_off, score_off) = _place(on, XBOX), _place(off, XBOX)
    assert rank_on <= rank_off < 99
    assert score_on > score_off + 0.03


async def test_a_query_word_the_home_lacks_is_embedded_with_the_query(home: Path) -> None:
    store = WordStore.load(home / "data" / "vocab", 384)
    assert "states" not in store.index and "oregon" in store.index
    on = await _search(home, STATES)
    off = await _search(home, STATES, retrieval__expand_vocab=False)
    assert on and TRIP in on[0][0]
    assert not _holds(off, TRIP)


async def test_the_word_store_survives_a_restart(home: Path) -> None:
    folder = home / "data" / "vocab"
    before = WordStore.load(folder, 384)
    assert len(before) > 50 and before.memories == len(PAIRS) and before.complete
    core = await open_local_core(home, **ON)
    try:
        first = await _ranked(core, CONSOLE)
        st = await core.services.vocab.store()
        assert st.words == before.words  # nothing embedded again
        assert st.neighbours("console")[0] == before.neighbours("console")[0]
        await core.turn_end(
            TurnResult(
                agent="chat",
                session_id="s-new",
                user_text="Ann: I also got a Nintendo Switch for travelling.",
                agent_text="Bob: Handy on trains.",
                ts=T0 + 10**8,
                namespace=NS,
            )
        )
        await core.flush(60)
    finally:
        await core.shutdown()
    after = WordStore.load(folder, 384)
    assert "nintendo" in after.index and after.memories == len(PAIRS) + 1
    assert after.words[: len(before)] == before.words
    again = await _search(home, CONSOLE)
    assert _holds(first, XBOX) and _holds(again, XBOX)


@pytest.mark.parametrize("query", [CONSOLE, STATES])
async def test_the_lancedb_path_ranks_as_the_hot_index_with_the_expansion(
    home: Path, query: str
) -> None:
    hot = await _search(home, query)
    lance = await _search(home, query, storage__hot_index=False)
    lance_off = await _search(home, query, storage__hot_index=False, retrieval__expand_vocab=False)
    assert [s for s, _ in lance] == [s for s, _ in hot]
    assert [sc for _, sc in lance] == pytest.approx([sc for _, sc in hot], abs=1e-3)
    assert lance != lance_off  # the LanceDB path did expand


async def test_the_switch_off_fills_no_store_and_ranks_as_before(tmp_path: Path) -> None:
    home = tmp_path / "off"
    await _ingest(home, retrieval__expand_vocab=False)
    assert not (home / "data" / "vocab").exists()  # capture paid nothing for it
    core = await open_local_core(home, retrieval__expand_vocab=False)
    try:
        off = await _ranked(core, CONSOLE)
        core.services.vocab = None  # a core without the feature at all
        without = await _ranked(core, CONSOLE)
    finally:
        await core.shutdown()
    assert off == without and off


async def test_a_home_without_a_store_builds_one_in_the_background(tmp_path: Path) -> None:
    # an older home (memories captured with no store): plain BM25 until the build is done
    home = tmp_path / "old"
    await _ingest(home, retrieval__expand_vocab=False)
    core = await open_local_core(home, **ON)
    try:
        vocab = core.services.vocab
        plain = await _ranked(core, CONSOLE)
        assert vocab._build is not None
        await vocab._build
        st = await vocab.store()
        assert st.complete and st.memories == len(PAIRS) and "xbox" in st.index
        expanded = await _ranked(core, CONSOLE)
    finally:
        await core.shutdown()
    assert plain == await _search(home, CONSOLE, retrieval__expand_vocab=False)
    assert _place(expanded, XBOX)[1] > _place(plain, XBOX)[1] + 0.03
    assert WordStore.load(home / "data" / "vocab", 384).complete
