"""The LanceDB path's sample for the name-stripped dense query (retrieval/dense_query.py) is read
once per table version and visibility scope, then reused: a second query with nothing written in
between reads nothing, a write makes the next query see the new words, and two namespaces never
share a sample. Real LanceDB, hot index off (the path a namespace evicted past
``storage.hot_index_max_mb`` takes too)."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stratamem.contract.dtos import Namespace, RetrievalQuery, TopK, TurnResult
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.hotindex.lexical import analyze
from stratamem.core.local import LocalCore
from stratamem.core.retrieval.dense_query import Sample, SampleCache, cache_for, sample_df
from stratamem.core.retrieval.engine import RetrievalContext, _Run
from stratamem.core.storage.ownership import Scope

ALICE = Namespace("chat", "alice")
BOB = Namespace("chat", "bob")
T0 = int(dt.datetime(2024, 3, 4, 9, tzinfo=dt.UTC).timestamp() * 1000)
TOPICS = [
    "the kitchen paint",
    "a new job at the library",
    "the marathon in autumn",
    "a violin lesson",
    "the leaking roof",
    "a curry recipe",
    "the late train",
    "a second-hand bicycle",
    "winter tyres",
    "baking bread",
    "the dinosaur exhibit",
    "tomatoes in the garden",
    "a cracked phone screen",
    "a dentist appointment",
    "an old school friend",
    "a novel about sailors",
    "the loud party next door",
    "sleeping better",
    "the football match",
    "a sister's visit",
    "rain every day",
    "a stressful week",
    "the weekend plans",
    "a museum trip",
]
QUESTION = "Where did the quokka sleep last night?"
STRIPPED = "Where did the sleep last night?"  # without the word every memory of alice holds


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[LocalCore]:
    c = await open_local_core(tmp_path, storage__hot_index=False)
    try:
        await _say(c, ALICE, [f"Our quokka and {t}." for t in TOPICS])  # every memory: "quokka"
        await _say(c, BOB, [f"Thinking about {t}." for t in TOPICS])
        yield c
    finally:
        await c.shutdown()


async def _say(core: LocalCore, ns: Namespace, lines: list[str], start: int = 0) -> None:
    for i, line in enumerate(lines, start):
        await core.turn_end(
            TurnResult(
                agent="chat",
                session_id=f"{ns.profile_id}-s{i // 8}",
                user_text=line,
                agent_text="Noted.",
                ts=T0 + i * 60_000,
                namespace=ns,
            )
        )
    await core.flush(60)


async def _dense(core: LocalCore, ns: Namespace, text: str = QUESTION) -> str:
    """The text the engine embeds for ``ns``'s query on the LanceDB path (the served caller's
    context: the caller's scoped tables and the store)."""
    ctx = RetrievalContext(
        query=RetrievalQuery(agent="chat", query=text, namespace=ns),
        namespace=ns,
        tables={"traces": core.store.scoped("traces", Scope.visible(ns))},
        config=core.config,
        store=core.store,
    )
    return await _Run(ctx).dense_query_text()


def _cache(core: LocalCore) -> SampleCache:
    got = cache_for(core.store)
    assert got is not None
    return got


async def test_a_second_query_with_no_write_between_reuses_the_sample(core: LocalCore) -> None:
    cache = _cache(core)
    before = cache.reads
    assert await _dense(core, ALICE) == STRIPPED
    assert cache.reads == before + 1
    assert await _dense(core, ALICE) == STRIPPED
    assert cache.reads == before + 1  # nothing was written: no second read
    # the served search path (the real caller) takes the same cached sample
    for _ in range(2):
        res = await core.search(
            RetrievalQuery(agent="chat", query=QUESTION, namespace=ALICE, top_k=TopK(0, 5, 0))
        )
        assert res.hits
    assert cache.reads == before + 1
    # a session renewal reopens the tables at the same version: still the same sample
    await core.store.renew_session()
    assert await _dense(core, ALICE) == STRIPPED
    assert cache.reads == before + 1


async def test_a_write_by_the_same_caller_makes_the_next_query_see_the_new_words(
    core: LocalCore,
) -> None:
    cache = _cache(core)
    assert await _dense(core, ALICE) == STRIPPED
    reads = cache.reads
    # ten more memories without "quokka": 24 of 34 hold it now (< 0.8), so it stays in the query
    await _say(core, ALICE, [f"Remember {t}." for t in TOPICS[:10]], start=len(TOPICS))
    assert await _dense(core, ALICE) == QUESTION
    assert cache.reads == reads + 1
    assert await _dense(core, ALICE) == QUESTION
    assert cache.reads == reads + 1
    # an optimize commits a new version too (compaction may reorder the sample): read again
    await core.store.optimize()
    assert await _dense(core, ALICE) == QUESTION
    assert cache.reads == reads + 2


async def test_two_namespaces_never_share_a_cached_sample(core: LocalCore) -> None:
    cache = _cache(core)
    reads = cache.reads
    assert await _dense(core, ALICE) == STRIPPED
    # "quokka" is in every memory of alice and none of bob's: bob's query keeps it
    assert await _dense(core, BOB) == QUESTION
    assert cache.reads == reads + 2
    for _ in range(2):  # each keeps its own sample, reused
        assert await _dense(core, ALICE) == STRIPPED
        assert await _dense(core, BOB) == QUESTION
    assert cache.reads == reads + 2


def test_the_cache_keeps_the_most_recently_used_scopes_up_to_its_bound() -> None:
    cache = SampleCache(scopes=2)
    a, b, c = (("traces", w) for w in ("scope-a", "scope-b", "scope-c"))
    for key in (a, b):
        cache.put(key, 1, Sample.of([key[1]]))
    assert cache.get(a, 1) is not None  # a is now the most recent: b goes first
    assert cache.get(a, 2) is None  # another version of the table: not this sample
    cache.put(c, 1, Sample.of(["c"]))
    assert cache.get(b, 1) is None
    assert cache.get(a, 1) is not None and cache.get(c, 1) is not None


def test_a_prepared_sample_counts_as_the_texts_do() -> None:
    texts = ["Ann: the pet shop", "Bob's cat and Ann", "", "annabel"]
    query = "What pet did Ann's sister get?"
    df_texts, n_texts = sample_df(texts, query, analyze)
    df_sample, n_sample = sample_df(Sample.of(texts), query, analyze)
    assert n_texts == n_sample == 4
    for tok in analyze(query):
        assert df_texts(tok) == df_sample(tok)
    assert (df_sample("ann"), df_sample("pet")) == (2, 1)
