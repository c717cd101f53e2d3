"""In-memory lexical index of one table: BM25 over stemmed tokens, idf weights, substring probes.

Analysis follows LanceDB's FTS defaults (simple tokenizer, lower case, ASCII folding, stop words
removed, English stemming) so the channel ranks like the native index it replaces, plus CJK bigrams
as tokens (the native tokenizer keeps a CJK run whole, so bigram queries never matched it).

- ``analysis``: text to index tokens (documents one at a time or a bulk load's batch, queries);
- ``postings``: per token, the slots holding it and their term frequencies, plus document lengths;
- ``bm25``: Okapi BM25's parameters and per-posting formulas, shared by both scorers;
- ``scoring``: ``Lexical``, the postings scored: exhaustive BM25, pruned (MaxScore) BM25 top-k that
  equals it, and the pattern channel's weighted overlap;
- ``substrings``: the substring channel (``str.find`` over the joined texts).
"""

from stratamem.core.hotindex.lexical.analysis import (
    FTS_STOP_WORDS,
    analyze,
    analyze_many,
    query_tokens,
)
from stratamem.core.hotindex.lexical.bm25 import K1, B, Extra, idf
from stratamem.core.hotindex.lexical.scoring import Lexical
from stratamem.core.hotindex.lexical.substrings import Substrings

__all__ = [
    "FTS_STOP_WORDS",
    "K1",
    "B",
    "Extra",
    "Lexical",
    "Substrings",
    "analyze",
    "analyze_many",
    "idf",
    "query_tokens",
]
