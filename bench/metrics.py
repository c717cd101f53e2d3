"""Ranking metrics and the two in-process baselines (Okapi BM25, exact cosine) the report compares against."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np


def _w(text: str, sep: str | None = None) -> tuple[str, ...]:
    """Words of a literal (keeps long vocabularies readable)."""
    return tuple(text.split(sep))


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
STOP_WORDS = frozenset(
    _w(
        "a an the and or but if of at by for with about against between into through during before "
        "after above below to from up down in out on off over under again further then once here "
        "there when where why how all any both each few more most other some such no nor not only "
        "own same so than too very s t can will just don should now i me my myself we our ours you "
        "your yours he him his she her hers it its they them their what which who whom this that "
        "these those am is are was were be been being have has had having do does did doing would "
        "could ought i'm you're it's that's let's i've i'd i'll"
    )
)


def recall_at_k(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """Share of the gold ids found in the first ``k`` ranked ids (NaN when there is no gold)."""
    if not gold:
        return math.nan
    top = set(ranked[:k])
    return sum(1 for g in set(gold) if g in top) / len(set(gold))


def reciprocal_rank(ranked: Sequence[str], gold: Sequence[str], k: int | None = None) -> float:
    """1 / rank of the first gold id within the first ``k`` (0 when none; NaN without gold)."""
    if not gold:
        return math.nan
    wanted = set(gold)
    for i, rid in enumerate(ranked[:k] if k else ranked, start=1):
        if rid in wanted:
            return 1.0 / i
    return 0.0


def mean(values: Sequence[float]) -> float:
    xs = [v for v in values if not math.isnan(v)]
    return sum(xs) / len(xs) if xs else math.nan


def exact_topk(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` rows of ``matrix`` (unit rows) with the highest cosine to ``query``, best first."""
    scores = matrix @ np.asarray(query, dtype=np.float32)
    k = min(k, len(scores))
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.argsort(-scores[part], kind="stable")]


def overlap_at_k(found: Sequence[str], exact: Sequence[str], k: int) -> float:
    """recall@k of an approximate top-k against the exact top-k."""
    want = list(exact[:k])
    if not want:
        return math.nan
    got = set(found[:k])
    return sum(1 for x in want if x in got) / len(want)


def tokenize(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]


class Bm25:
    """Okapi BM25 (k1 1.5, b 0.75, idf ln((N - df + .5)/(df + .5) + 1)) over an in-memory corpus."""

    def __init__(self, docs: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tfs = [Counter(tokenize(d)) for d in docs]
        self.lens = np.array([sum(tf.values()) for tf in self.tfs], dtype=np.float64)
        self.avgdl = float(self.lens.mean()) if len(self.lens) else 0.0
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log((n - c + 0.5) / (c + 0.5) + 1.0) for t, c in df.items()}

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(len(self.tfs), dtype=np.float64)
        if not self.tfs:
            return out
        norm = self.k1 * (1 - self.b + self.b * self.lens / max(self.avgdl, 1e-9))
        for term in dict.fromkeys(tokenize(query)):
            idf = self.idf.get(term)
            if idf is None:
                continue
            tf = np.array([d.get(term, 0) for d in self.tfs], dtype=np.float64)
            out += idf * tf * (self.k1 + 1) / (tf + norm)
        return out

    def top(self, query: str, k: int) -> list[int]:
        """Indices of the best ``k`` documents with a positive score, best first (ties by index)."""
        s = self.scores(query)
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))
        return [i for i in order[:k] if s[i] > 0]


class TokenCounter:
    """Tokens of an injected context, counted with the shipped WordPiece tokenizer (no truncation)."""

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        from stratamem.core.embedding.local import vendored_tokenizer_path

        self._tok = Tokenizer.from_file(str(vendored_tokenizer_path()))
        self._tok.no_truncation()
        self._tok.no_padding()

    def count(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)
