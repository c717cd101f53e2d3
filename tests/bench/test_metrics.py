"""Metrics and baselines of the harness compute what their names say."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bench.metrics import Bm25, exact_topk, overlap_at_k, recall_at_k, reciprocal_rank, tokenize
from bench.stats import percentile, summarize


def test_recall_at_k_counts_gold_within_the_cut() -> None:
    ranked = ["a", "b", "c", "d"]
    assert recall_at_k(ranked, ["b", "d"], 2) == 0.5
    assert recall_at_k(ranked, ["b", "d"], 4) == 1.0
    assert recall_at_k(ranked, ["z"], 4) == 0.0
    assert math.isnan(recall_at_k(ranked, [], 4))


def test_reciprocal_rank_uses_the_first_gold_hit() -> None:
    assert reciprocal_rank(["x", "g", "h"], ["h", "g"]) == 0.5
    assert reciprocal_rank(["x", "y", "g"], ["g"], k=2) == 0.0
    assert math.isnan(reciprocal_rank(["x"], []))


def test_exact_topk_matches_a_full_sort() -> None:
    rng = np.random.default_rng(0)
    m = rng.standard_normal((500, 16)).astype(np.float32)
    m /= np.linalg.norm(m, axis=1, keepdims=True)
    q = m[42] + 0.1 * rng.standard_normal(16).astype(np.float32)
    want = np.argsort(-(m @ q))[:10]
    got = exact_topk(m, q, 10)
    assert got.tolist() == want.tolist()
    assert got[0] == 42


def test_overlap_at_k_is_recall_against_the_exact_list() -> None:
    assert overlap_at_k(["a", "b", "x"], ["a", "b", "c"], 3) == pytest.approx(2 / 3)


def test_bm25_prefers_the_rare_matching_term() -> None:
    docs = [
        "the weather is nice today",
        "my dog Biscuit loves the park",
        "the park is closed today",
        "nice weather for the park",
    ]
    bm = Bm25(docs)
    assert bm.top("where does Biscuit play", 2)[0] == 1
    s = bm.scores("park")
    assert s[0] == 0 and all(s[i] > 0 for i in (1, 2, 3))
    # shorter documents score higher for the same term frequency (length normalisation)
    assert s[2] > s[1]
    assert bm.top("zebra", 3) == []


def test_bm25_matches_the_okapi_formula() -> None:
    docs = ["apple banana", "apple apple cherry", "cherry"]
    bm = Bm25(docs, k1=1.5, b=0.75)
    n, df, avgdl = 3, 2, (2 + 3 + 1) / 3
    idf = math.log((n - df + 0.5) / (df + 0.5) + 1)
    tf, dl = 2, 3
    want = idf * tf * 2.5 / (tf + 1.5 * (1 - 0.75 + 0.75 * dl / avgdl))
    assert bm.scores("apple")[1] == pytest.approx(want)


def test_tokenize_drops_stop_words() -> None:
    assert tokenize("What is the name of my Dog?") == ["name", "dog"]


def test_percentile_interpolates_like_numpy() -> None:
    xs = [5.0, 1.0, 9.0, 3.0, 7.0, 2.0]
    for q in (0, 50, 95, 100):
        assert percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)))
    s = summarize(xs)
    assert (s.n, s.min, s.median) == (6, 1.0, 4.0)
    assert math.isnan(summarize([]).median)
