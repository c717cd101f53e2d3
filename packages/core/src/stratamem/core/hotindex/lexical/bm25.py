"""Okapi BM25's parameters and per-posting formulas: one definition both scorers (and the postings'
cached bounds) use, so their float32 sums are bit-identical."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

#: weighted tokens added to a BM25 query (token -> multiplier of its idf)
Extra = Mapping[str, float] | None
K1, B = 1.2, 0.75


def idf(n_docs: int, df: int) -> float:
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def contrib(w: float, tfs: np.ndarray, dl: np.ndarray, avg: float) -> np.ndarray:
    """One term's BM25 contribution per posting, float32: the one expression both scorers use, so
    the pruned path's sums are bit-identical to the exhaustive ones (same operands, same order).
    ``tfs`` as the postings hold them (uint8 or float32), converted to float32 first: exact."""
    tf = tfs.astype(np.float32, copy=False)
    out: np.ndarray = w * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avg))
    return out
