"""Which words of a memory or a query the vocabulary holds: letters only, at least three of them,
not a stop word of the query side or of the index (numbers, names of one or two letters and
function words carry no meaning a neighbour could share)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache

from stratamem.core.hotindex.lexical import analyze

_LETTERS = re.compile(r"[^\W\d_]{3,}")
_ONLY_LETTERS = re.compile(r"[^\W\d_]{3,}\Z")


@cache
def _stop_words() -> frozenset[str]:
    """The query side's stop words (imported on first use: ``retrieval`` imports this package)."""
    from stratamem.core.retrieval.text import STOP_WORDS

    return STOP_WORDS


def is_word(term: str) -> bool:
    """Whether ``term`` (lower case) is a vocabulary word."""
    return (
        bool(_ONLY_LETTERS.match(term)) and term not in _stop_words() and token_of(term) is not None
    )


def token_of(word: str) -> str | None:
    """The index token ``word`` is searched as (its stem), None when the index drops it."""
    toks = analyze(word)
    return toks[0] if len(toks) == 1 else None


def words_of(text: str) -> set[str]:
    """The distinct vocabulary words of ``text``."""
    return {w for w in _LETTERS.findall((text or "").lower()) if is_word(w)}


def tokens_of(words: Iterable[str]) -> set[str]:
    """The distinct index tokens of ``words`` (each memory counts once per token: its df)."""
    return {t for w in words if (t := token_of(w)) is not None}
