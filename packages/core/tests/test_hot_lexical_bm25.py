"""The hot index's array BM25 (postings as numpy views, one reused score buffer) ranks exactly like
the textbook per-document scoring, for rare and common query tokens, masks, removed documents and
back-to-back queries (the reused buffer must come back clean)."""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import numpy as np
import pytest

from stratamem.core.hotindex.lexical import K1, B, Lexical, analyze

WORDS = ["tram", "commute", "coffee", "berlin", "garden", "violin", "python", "rust", "sister"]
RARE = ["zeppelin", "quokka", "marimba"]


def reference_bm25(docs: dict[int, str], tokens: list[str]) -> dict[int, float]:
    toks = {slot: analyze(text) for slot, text in docs.items()}
    lens = {slot: max(1, len(t)) for slot, t in toks.items()}
    avg = sum(lens.values()) / len(lens)
    n = len(docs)
    out: dict[int, float] = {}
    for tok in tokens:
        df = sum(1 for t in toks.values() if tok in t)
        if not df:
            continue
        idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        for slot, t in toks.items():
            tf = Counter(t)[tok]
            if tf:
                norm = tf + K1 * (1 - B + B * lens[slot] / avg)
                out[slot] = out.get(slot, 0.0) + idf * tf * (K1 + 1) / norm
    return out


def _doc(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randrange(1, 12))
    if rng.random() < 0.05:
        words.append(rng.choice(RARE))
    return " ".join(words)


@pytest.mark.parametrize("n_docs", [30, 400])
def test_array_bm25_matches_the_per_document_reference(n_docs: int) -> None:
    rng = random.Random(n_docs)
    lex = Lexical()
    docs: dict[int, str] = {}
    for slot in range(n_docs):
        docs[slot] = _doc(rng)
        lex.add(slot, docs[slot])
    for slot in rng.sample(sorted(docs), n_docs // 10):  # removed documents leave the statistics
        lex.remove(slot, docs.pop(slot))
    for i in range(60):
        # every third query: only rare tokens (few postings, merged rather than scanned)
        query = rng.sample(RARE, 2) if i % 3 == 0 else rng.sample(WORDS + RARE, rng.randrange(1, 5))
        tokens = [analyze(w)[0] for w in query]
        mask = np.array([rng.random() > 0.2 for _ in range(n_docs)], dtype=bool)
        limit = rng.choice([3, 20, 1000])
        got = lex.bm25(tokens, mask, limit)
        ref = reference_bm25(docs, tokens)
        want = sorted(((s, v) for s, v in ref.items() if mask[s]), key=lambda sv: -sv[1])
        assert len(got) == min(limit, len(want))
        for (slot, score), (_s, v) in zip(got, want, strict=False):
            assert score == pytest.approx(ref[slot], rel=1e-5)  # float32 sums
            assert score == pytest.approx(v, rel=1e-5)  # in order (ties: equal scores)
        assert all(a[1] >= b[1] for a, b in itertools.pairwise(got))
