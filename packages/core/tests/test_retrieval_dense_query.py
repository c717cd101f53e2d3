"""The query is embedded without the words nearly every memory holds (retrieval/dense_query.py):
in a conversation every memory names both speakers, and the name would dominate the query's vector."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK, TurnResult
from stratamem.core.embedding import load_embedder
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.hotindex.lexical import analyze
from stratamem.core.retrieval.dense_query import dense_text, sample_df

NS = Namespace("chat", "ann-bob")
T0 = int(dt.datetime(2024, 1, 8, 15, tzinfo=dt.UTC).timestamp() * 1000)
# one memory per pair of turns, each with both speakers' names (as a host sends a conversation)
PAIRS = [
    ("Ann: Morning Bob! How was the weekend?", "Bob: Busy, we repainted the kitchen."),
    ("Ann: What colour did you go for?", "Bob: A pale green, it feels calm."),
    ("Ann: I started a new job at the library.", "Bob: Congratulations, you love books."),
    ("Ann: My sister visits next month.", "Bob: You must be looking forward to it."),
    ("Ann: The weather has been awful lately.", "Bob: Rain every single day here too."),
    ("Ann: Did you watch the match last night?", "Bob: Yes, what a finish in extra time."),
    ("Ann: I signed up for a marathon in autumn.", "Bob: Wow, that takes discipline."),
    ("Ann: Any tips for sleeping better?", "Bob: No screens an hour before bed helps me."),
    ("Ann: We finally fixed the leaking roof.", "Bob: Good, that was overdue."),
    ("Ann: I am learning to play the violin.", "Bob: That is a hard instrument to start."),
    ("Ann: Our neighbours threw a loud party.", "Bob: Did you join them in the end?"),
    ("Ann: I tried a new curry recipe.", "Bob: Spicy or mild?"),
    ("Ann: The train was late again this morning.", "Bob: Commuting is the worst."),
    (
        "Ann: I adopted a tabby kitten from the shelter, she sleeps on my keyboard.",
        "Bob: Adorable, what did you name her?",
    ),
    ("Ann: I am reading a novel about sailors.", "Bob: Is it any good so far?"),
    ("Ann: My phone screen cracked.", "Bob: Get a case next time."),
    ("Ann: We planted tomatoes in the garden.", "Bob: Homegrown ones taste better."),
    ("Ann: I have a dentist appointment tomorrow.", "Bob: Good luck with that."),
    ("Ann: The museum has a new dinosaur exhibit.", "Bob: Let's go together sometime."),
    ("Ann: I bought a second-hand bicycle.", "Bob: Great for the summer."),
    ("Ann: My car needs new tyres.", "Bob: Winter ones or all-season?"),
    ("Ann: I baked bread for the first time.", "Bob: Did it rise properly?"),
    ("Ann: Work has been stressful this week.", "Bob: Take the weekend off then."),
    ("Ann: I met an old school friend downtown.", "Bob: Small world!"),
]
QUESTION = "What pet did Ann get?"


def unit(vec: Any) -> np.ndarray:
    v = np.asarray(vec, dtype=np.float32).reshape(-1)
    return v / np.linalg.norm(v)


def _df(counts: dict[str, int]) -> Any:
    return lambda tok: counts.get(tok, 0)


def test_words_most_memories_hold_are_dropped_with_their_possessive() -> None:
    df = _df({"ann": 30, "bob": 29, "pet": 2, "kitten": 1})
    got = dense_text("What pet did Ann's sister and Bob get?", df, 30, tokens=analyze)
    assert got == "What pet did sister and get?"


def test_rare_words_small_stores_and_the_switch_keep_the_query() -> None:
    q = "What pet did Ann get?"
    assert dense_text(q, _df({"ann": 10}), 30, tokens=analyze) == q  # a third: not common
    assert dense_text(q, _df({"ann": 10}), 10, tokens=analyze) == q  # ten memories say little
    assert dense_text(q, _df({"ann": 30}), 30, tokens=analyze, share=0) == q


def test_the_lancedb_path_counts_whole_words_over_its_sample() -> None:
    texts = [f"Ann: note {i} / Bob: ok, Annabel said so" for i in range(30)]
    texts += ["Bob: the pet shop", "Ann's cat"]
    df, n = sample_df(texts, "What pet did Ann's sister and Bob get?", analyze)
    assert n == 32
    assert (df("ann"), df("bob"), df("pet"), df("sister")) == (31, 31, 1, 0)  # not "Annabel"
    assert dense_text("What pet did Ann get?", df, n, tokens=analyze) == "What pet did get?"


def test_a_query_of_common_words_only_is_embedded_as_asked() -> None:
    df = _df({"ann": 30, "bob": 30})
    assert dense_text("Ann and Bob?", df, 30, tokens=analyze) == "Ann and Bob?"


def pair_turn(i: int) -> TurnResult:
    """``PAIRS[i]`` as ``turn_end`` takes it: six pairs a session, a day apart, a minute between."""
    user, agent = PAIRS[i]
    return TurnResult(
        agent="chat",
        session_id=f"s{i // 6}",
        user_text=user,
        agent_text=agent,
        ts=T0 + i * 60_000 + (i // 6) * 86_400_000,
        namespace=NS,
    )


async def _ingest(home: Path) -> None:
    core = await open_local_core(home)
    try:
        for i in range(len(PAIRS)):
            await core.turn_end(pair_turn(i))
        await core.flush(60)
    finally:
        await core.shutdown()


async def _semantic(home: Path, **overrides: object) -> tuple[dict[str, float], dict[str, Any]]:
    """The cosine each returned memory got, and every stored memory's vector."""
    core = await open_local_core(home, **overrides)
    try:
        res = await core.search(
            RetrievalQuery(agent="chat", query=QUESTION, namespace=NS, top_k=TopK(0, 5, 0))
        )
        rows = await core.store.maintenance_table("traces", "test").query().to_list()
    finally:
        await core.shutdown()
    vecs = {str(r["id"]): np.asarray(r["vec_summary"], dtype=np.float32) for r in rows}
    got = {h.ref_id: float(h.score_details["semantic"]) for h in res.hits if h.ref_kind == "trace"}
    return got, vecs


@pytest.mark.parametrize(
    ("off", "hot"), [(False, True), (False, False), (True, True)], ids=["hot", "lancedb", "off"]
)
async def test_the_speakers_name_is_left_out_of_the_embedded_question(
    tmp_path: Path, off: bool, hot: bool
) -> None:
    # the LanceDB path counts the words over a sample of the stored memories, the hot index on
    # its postings: the same text is embedded on both
    await _ingest(tmp_path)
    overrides: dict[str, object] = {"storage__hot_index": hot}
    if off:
        overrides["retrieval__dense_common_word_share"] = 0
    got, vecs = await _semantic(tmp_path, **overrides)
    emb = load_embedder({"cache": {"enabled": False}})
    embedded = "What pet did Ann get?" if off else "What pet did get?"
    other = "What pet did get?" if off else "What pet did Ann get?"
    q, q_other = (unit(emb.embed_query(t)) for t in (embedded, other))
    assert got
    for rid, semantic in got.items():
        v = unit(vecs[rid])
        # ``semantic`` is the cosine clamped to [0, 1] (retrieval/rank.py): a hit another channel
        # found (fts, a neighbouring turn) may lie a little below zero
        assert min(1.0, max(0.0, float(v @ q))) == pytest.approx(semantic, abs=2e-3)
        assert abs(float(v @ q_other) - float(v @ q)) > 0.01  # the two texts are told apart
