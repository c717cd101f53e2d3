"""The text a query is embedded from: the query without the words nearly every memory holds.

BM25 gives a word held by every memory an idf of ~0, so it ranks nothing; the dense channel has no
such discount. In conversational memory each memory names its speakers ("Caroline: … / Melanie:
…"), so a question about one of them ("What activities does Caroline do?") embeds mostly as the
name: every memory is near it and the asked-about content decides little. Embedding the question
without those words is what the lexical channel already does, at no extra model call. Measured on
LoCoMo (one memory per pair of turns, MiniLM): vector-only R@10 0.532 -> 0.658, multi-hop 0.141 ->
0.239 (see bench/results/locomo.md, session 5); a store whose memories do not share such words
(the long-memory set) embeds its queries unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable

#: a word is dropped from the embedded text when at least this share of the memories holds it
COMMON_SHARE = 0.8
#: below this many memories a share says little (three memories may all say "hello"): no change
MIN_MEMORIES = 20
#: a word with its apostrophe forms ("Caroline's"): dropped or kept whole
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_SPACES = re.compile(r"\s+")


def dense_text(
    text: str,
    df: Callable[[str], int],
    memories: int,
    *,
    tokens: Callable[[str], list[str]],
    share: float = COMMON_SHARE,
    min_memories: int = MIN_MEMORIES,
) -> str:
    """``text`` without the words whose every index token is held by ≥ ``share`` of the
    ``memories`` (``df(token)`` = how many hold it; ``tokens(text)`` = its index tokens, the
    lexical index's analyzer, so a word counts as BM25 counts it).

    Unchanged when the switch is off (``share`` ≤ 0), the store is small, nothing is common, or
    nothing but stop words would be left (the query is then all common words).
    """
    if share <= 0 or memories < max(1, min_memories):
        return text
    floor = share * memories

    def common(word: str) -> bool:
        toks = tokens(word)
        return bool(toks) and all(df(t) >= floor for t in toks)

    dropped = False

    def keep(m: re.Match[str]) -> str:
        nonlocal dropped
        if common(m.group(0)):
            dropped = True
            return ""
        return m.group(0)

    out = _WORD.sub(keep, text)
    if not dropped:
        return text
    out = _SPACES.sub(" ", out).strip()
    return out if tokens(out) else text
