"""The hot index's BM25 scores every row exactly as LanceDB's native FTS index does (issue 15: a
speed change that loses recall is not done). Both analyse the same documents: stop words checked
after stemming, LanceDB's stop list, a query token counted once per occurrence."""

from __future__ import annotations

from pathlib import Path

import lancedb
import numpy as np
import pytest
from lancedb.index import FTS

from stratamem.core.hotindex.lexical import Lexical, analysis, analyze, analyze_many, query_tokens
from stratamem.core.retrieval import channels as ch
from stratamem.core.retrieval.query import compile_text

DOCS = [
    "Maria: I really like the dog shelter, I tell everyone because it helps.",
    "John: We're considering adopting a rescue dog - for love and to teach the kids.",
    "Maria: Volunteering at the shelter made me feel great, even if only once a week.",
    "John: Having dogs is hard work but worth it; they're very loyal, and any walk is fun.",
    "Maria: I got a puppy two weeks ago! She's always the first to greet me at the door.",
    "John: The homeless shelter asked for volunteers before the winter; I said yes.",
    "Maria: Something I want to remember: the dogs at the shelter love long walks.",
]
QUERIES = [
    "How many dogs has Maria adopted from the dog shelter she volunteers at?",
    "What does John really like about the shelter?",
    "Why did Maria get a puppy?",
]


async def _lance_scores(tmp_path: Path, query: str) -> dict[int, float]:
    db = await lancedb.connect_async(str(tmp_path / "lance"))
    name = "t" + str(abs(hash(query)) % 10_000)
    table = await db.create_table(
        name, data=[{"id": str(i), "search_text": d} for i, d in enumerate(DOCS)]
    )
    await table.create_index("search_text", config=FTS(), replace=True)
    got = await ch.table_fts(table, compile_text(query).fts_text, "true", len(DOCS))
    return {int(r["id"]): s for r, s in got}


def _hot_scores(query: str) -> dict[int, float]:
    lex = Lexical()
    for i, d in enumerate(DOCS):
        lex.add(i, d)
    mask = np.ones(len(DOCS), dtype=bool)
    toks = query_tokens(compile_text(query).terms[:12], unique=False)
    return dict(lex.bm25(toks, mask, len(DOCS)))


@pytest.mark.parametrize("query", QUERIES)
async def test_hot_bm25_scores_match_lancedb_fts_row_for_row(tmp_path: Path, query: str) -> None:
    lance = await _lance_scores(tmp_path, query)
    hot = _hot_scores(query)
    assert lance, "LanceDB matched nothing: the fixture no longer exercises the channel"
    assert set(hot) == set(lance)
    for row, score in lance.items():
        assert hot[row] == pytest.approx(score, rel=1e-4), (row, DOCS[row])


def test_stop_words_are_checked_after_stemming_like_lancedbs_analyzer() -> None:
    # "having" stems to the stop word "have"; "because" stems to "becaus", which is no stop word
    assert analyze("having fun because") == ["fun", "becaus"]
    # words our query side drops ("really", "like", "tell") are still document tokens there
    assert analyze("really like tell") == ["realli", "like", "tell"]


def test_numbers_index_as_themselves_without_filling_the_word_cache() -> None:
    # every soak trace brings a new number: the analyser's word cache must not keep one per trace
    held = len(analysis._WORD_TOKEN)
    nums = [str(n) for n in range(7_300_000, 7_302_000)]
    texts = [f"note {n} of 0042" for n in nums]
    assert [analyze(t) for t in texts] == [["note", n, "0042"] for n in nums]
    names, tids, where = analyze_many(texts)
    got = [[names[t] for t in tids[where == i].tolist()] for i in range(len(texts))]
    assert got == [["note", n, "0042"] for n in nums]
    assert analyze("1" * 41 + " 12x") == ["12x"]  # too long a token, as before
    assert len(analysis._WORD_TOKEN) <= held + 4  # "note", "of", "12x", the 41 ones at most


def test_a_repeated_query_token_counts_once_per_occurrence_for_bm25() -> None:
    assert query_tokens(["dogs", "dog"]) == ["dog"]
    assert query_tokens(["dogs", "dog"], unique=False) == ["dog", "dog"]


#: added words with their weights, as the query expansion passes them (vocab/expand.py)
EXTRA = [("walks", 0.5), ("homeless", 0.35), ("greet", 0.3)]


@pytest.mark.parametrize("query", QUERIES)
async def test_weighted_added_words_score_alike_on_the_hot_index_and_lancedb(
    tmp_path: Path, query: str
) -> None:
    # the LanceDB path sends them as boosted clauses of one boolean query, the hot index as
    # weighted tokens of its pruned scorer: both are BM25(query) + Σ weight × BM25(word)
    db = await lancedb.connect_async(str(tmp_path / "lance"))
    table = await db.create_table(
        "t", data=[{"id": str(i), "search_text": d} for i, d in enumerate(DOCS)]
    )
    await table.create_index("search_text", config=FTS(), replace=True)
    cq = compile_text(query)
    got = await ch.table_fts(table, cq.fts_text, "true", len(DOCS), extra=EXTRA)
    lance = {int(r["id"]): s for r, s in got}
    lex = Lexical()
    for i, d in enumerate(DOCS):
        lex.add(i, d)
    toks = query_tokens(cq.terms[:12], unique=False)
    extra = {query_tokens([w])[0]: wt for w, wt in EXTRA}
    hot = dict(lex.bm25(toks, np.ones(len(DOCS), dtype=bool), len(DOCS), extra))
    assert set(hot) == set(lance)
    plain = await _lance_scores(tmp_path, query)
    assert any(abs(lance[r] - plain.get(r, 0.0)) > 0.05 for r in lance), "the words added nothing"
    for row, score in lance.items():
        assert hot[row] == pytest.approx(score, rel=1e-4), (row, DOCS[row])


#: two owners' rows in one table: every one of Ann's names her, a quarter of the table's
OWNED = (
    [("ann", f"Ann: I spent the afternoon on the {w} again.") for w in ("dog", "shelter")]
    + [
        ("ann", "Ann: The dog shelter needs volunteers on Sunday."),
        ("ann", "Ann: I walked the dog."),
    ]
    + [("bob", d) for d in DOCS]
    + [("bob", "Bob: long walks with the dogs, every afternoon.")]
)


async def test_a_prefiltered_lancedb_fts_scores_with_the_whole_tables_statistics(
    tmp_path: Path,
) -> None:
    # In a home shared by namespaces the LanceDB path filters the FTS query to the caller's rows;
    # over indexed rows LanceDB still takes idf, row count and average length over the whole
    # table, so the hot index (postings over every row, a mask for the caller's) is its equal.
    # Rows not yet folded into the index (between optimizes) are flat-searched and scored with
    # the filtered rows' statistics instead: that difference is LanceDB's, not a parity defect
    # (bench/results/locomo.md, session 10).
    db = await lancedb.connect_async(str(tmp_path / "lance"))
    rows = [{"id": str(i), "owner": o, "search_text": d} for i, (o, d) in enumerate(OWNED)]
    table = await db.create_table("t", data=rows)
    await table.create_index("search_text", config=FTS(), replace=True)
    stats = await table.index_stats("search_text_idx")
    assert stats is not None and stats.num_unindexed_rows == 0
    lex = Lexical()
    for i, (_o, d) in enumerate(OWNED):
        lex.add(i, d)
    compared = 0
    for owner in ("ann", "bob"):
        for query in ["Did Ann take the dog to the shelter in the afternoon?", *QUERIES]:
            cq = compile_text(query)
            got = await ch.table_fts(table, cq.fts_text, f"owner = '{owner}'", len(OWNED))
            lance = {int(r["id"]): s for r, s in got}
            mask = np.array([o == owner for o, _ in OWNED])
            toks = query_tokens(cq.terms[:12], unique=False)
            hot = dict(lex.bm25(toks, mask, len(OWNED)))
            assert set(hot) == set(lance), (owner, query)
            for row, score in lance.items():
                assert hot[row] == pytest.approx(score, rel=1e-4), (owner, query, OWNED[row])
            compared += len(lance)
    assert compared > 20, "LanceDB matched too little: the fixture no longer exercises the FTS"
