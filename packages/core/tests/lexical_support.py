"""Helpers of the hot index's lexical tests: postings as lists, and what indexing costs."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Sequence

from stratamem.core.hotindex.lexical import Lexical, analyze


def lists(lex: Lexical, tok: str) -> tuple[list[int], list[float]] | None:
    """``tok``'s postings as lists (a numpy view held over a write would pin the array)."""
    got = lex.postings(tok)
    return None if got is None else (got[0].tolist(), got[1].tolist())


def indexed_bytes(texts: Sequence[str]) -> tuple[Lexical, int]:
    """A fresh index of ``texts`` (slot = position, one ``add`` each) and the bytes its
    allocations still hold, traced; the analyser's caches warm before tracing."""
    for t in texts[:10]:
        analyze(t)
    gc.collect()
    tracemalloc.start()
    try:
        lex = Lexical()
        for i, t in enumerate(texts):
            lex.add(i, t)
        gc.collect()
        held, _peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return lex, held
