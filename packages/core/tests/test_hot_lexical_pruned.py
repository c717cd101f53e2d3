"""The pruned (MaxScore) BM25 top-k returns exactly the exhaustive scorer's list: the same slots,
bit-identical scores, ties broken by the lower slot. Exercised on random corpora with Zipf-like term
frequencies, writes between queries (the cached term bounds must stay upper bounds as the average
document length drifts), rewritten slots (postings must stay in slot order for the lookups),
removals, masks and repeated query tokens."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stratamem.core.hotindex.lexical import Lexical, analyze, scoring

VOCAB = [f"w{i}x" for i in range(40)]  # analysed as themselves (no stemming, no stop words)
WEIGHTS = [1.0 / (i + 1) ** 1.1 for i in range(len(VOCAB))]


@pytest.fixture(autouse=True)
def _prune_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    # small corpora: take the pruned path for every query, cache bounds for every term
    monkeypatch.setattr(scoring, "PRUNE_MIN_POSTINGS", 0)
    monkeypatch.setattr(scoring, "_BOUND_MIN_DF", 2)


def _text(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choices(VOCAB, WEIGHTS, k=rng.randrange(lo, hi)))


def _query(rng: random.Random) -> list[str]:
    toks = rng.sample(VOCAB, rng.randrange(1, 7))
    if rng.random() < 0.3:
        toks.append(toks[0])  # a repeated query token counts twice
    if rng.random() < 0.2:
        toks.append("absentx")
    return toks


def _check(lex: Lexical, rng: random.Random, n: int) -> None:
    for _ in range(6):
        toks = _query(rng)
        mask = np.array([rng.random() > 0.3 for _ in range(n)], dtype=bool)
        limit = rng.choice([1, 3, 10, 50])
        assert lex.bm25(toks, mask, limit) == lex.bm25_exhaustive(toks, mask, limit)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(5, 400))
def test_pruned_top_k_equals_the_exhaustive_scorer(seed: int, n: int) -> None:
    rng = random.Random(seed)
    half = n // 2
    lex = Lexical()
    texts = [_text(rng, 1, 12) for _ in range(half)]
    lex.add_many(0, texts)
    docs = dict(enumerate(texts))
    _check(lex, rng, n)
    for slot in range(half, n):  # longer documents: the average length drifts up past the bounds
        docs[slot] = _text(rng, 8, 40)
        lex.add(slot, docs[slot])
    _check(lex, rng, n)
    for slot in rng.sample(sorted(docs), len(docs) // 4):  # rewritten in place (an update)
        lex.remove(slot, docs[slot])
        docs[slot] = _text(rng, 1, 30)
        lex.add(slot, docs[slot])
    for slot in rng.sample(sorted(docs), len(docs) // 5):
        lex.remove(slot, docs.pop(slot))
    _check(lex, rng, n)
    for slot in range(n, n + 20):  # shorter documents: the average falls
        docs[slot] = _text(rng, 1, 3)
        lex.add(slot, docs[slot])
    _check(lex, rng, n + 20)


def test_postings_stay_in_slot_order_after_a_rewrite() -> None:
    lex = Lexical()
    for slot in range(5):
        lex.add(slot, "tram coffee")
    lex.remove(1, "tram coffee")
    lex.add(1, "tram violin")
    got = lex.postings(analyze("tram")[0])
    assert got is not None
    assert got[0].tolist() == [0, 1, 2, 3, 4]
    assert lex.postings(analyze("coffee")[0])[0].tolist() == [0, 2, 3, 4]  # type: ignore[index]


@pytest.mark.parametrize("pruned", [True, False])
def test_equal_scores_are_ranked_by_slot(pruned: bool) -> None:
    lex = Lexical()
    rng = random.Random(3)
    order = list(range(300))
    rng.shuffle(order)
    for slot in range(300):  # every document scores the same for "tram"
        lex.add(slot, "tram coffee" if slot % 2 else "coffee tram")
    mask = np.ones(300, dtype=bool)
    mask[:7] = False
    score = lex.bm25 if pruned else lex.bm25_exhaustive
    got = score(["tram"], mask, 10)
    assert [s for s, _ in got] == list(range(7, 17))
    assert len({v for _, v in got}) == 1


_PIECES = [*"abcXYZ019 _-'.,\n\x01", "the ", "dogs ", "running ", "having ", "Café ", "東京タワー"]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


@settings(max_examples=80, deadline=None)
@given(texts=st.lists(_TEXT, min_size=1, max_size=30), first=st.integers(0, 5))
def test_bulk_indexing_equals_indexing_the_texts_one_by_one(texts: list[str], first: int) -> None:
    # add_many splits the ASCII texts of a batch in one pass (Arrow encodes the words); add
    # analyses each text by itself
    bulk, one = Lexical(), Lexical()
    bulk.add_many(first, texts)
    for i, text in enumerate(texts):
        one.add(first + i, text)
    assert bulk.docs == one.docs
    assert (
        np.frombuffer(bulk._len, np.float32).tolist()
        == np.frombuffer(one._len, np.float32).tolist()
    )
    assert sorted(bulk.tokens()) == sorted(one.tokens())
    for tok in one.tokens():
        got, want = bulk.postings(tok), one.postings(tok)
        assert got is not None and want is not None, tok
        assert got[0].tolist() == want[0].tolist(), tok
        assert got[1].tolist() == want[1].tolist(), tok


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(5, 300))
def test_weighted_expansion_terms_are_pruned_exactly_and_add_weight_times_their_bm25(
    seed: int, n: int
) -> None:
    # query expansion (vocab/expand.py): added tokens with a weight each, inside the pruned pass
    rng = random.Random(seed)
    lex = Lexical()
    lex.add_many(0, [_text(rng, 1, 12) for _ in range(n)])
    for _ in range(6):
        toks = _query(rng)
        extra = {t: rng.choice([0.1, 0.35, 0.5, 1.7]) for t in rng.sample(VOCAB, 3)}
        extra = {t: w for t, w in extra.items() if t not in toks}
        mask = np.array([rng.random() > 0.3 for _ in range(n)], dtype=bool)
        limit = rng.choice([1, 3, 10, 50])
        got = lex.bm25(toks, mask, limit, extra)
        assert got == lex.bm25_exhaustive(toks, mask, limit, extra)
        # BM25 is a sum over terms: the weighted query is the plain one plus w × each term's
        whole = dict(lex.bm25_exhaustive(toks, mask, n))
        for tok, w in extra.items():
            for slot, sc in lex.bm25_exhaustive([tok], mask, n):
                whole[slot] = whole.get(slot, 0.0) + w * sc
        assert len(got) == min(limit, len(whole))
        for slot, sc in got:
            assert sc == pytest.approx(whole[slot], rel=1e-5)
        left_out = [sc for slot, sc in whole.items() if slot not in dict(got)]
        assert max(left_out, default=0.0) <= got[-1][1] * (1 + 1e-5) if got else not whole
