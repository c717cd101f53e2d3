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
from bisect import bisect_right
from collections.abc import Callable, Iterable
from itertools import accumulate

#: a word is dropped from the embedded text when at least this share of the memories holds it
COMMON_SHARE = 0.8
#: below this many memories a share says little (three memories may all say "hello"): no change
MIN_MEMORIES = 20
#: the LanceDB path (no hot index to count on) estimates the shares over this many of the
#: caller's stored memories: a speaker named in every memory is in every sample
SAMPLE = 256
#: a word with its apostrophe forms ("Caroline's"): dropped or kept whole
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
_SPACES = re.compile(r"\s+")
_POSSESSIVE = re.compile(r"['’]s$")
_WORD_CHAR = re.compile(r"\w")


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


def sample_df(
    texts: Iterable[str], query: str, tokens: Callable[[str], list[str]]
) -> tuple[Callable[[str], int], int]:
    """``(df, n)`` of the query's tokens over sampled memory texts (the LanceDB path's counts).

    A memory holds a token when it holds the query word the token came from, as a whole word in
    any case: one regex scan per word over the joined sample (an analyzer pass over each memory
    cost ~25 ms per query on 256 memories, a search per memory and word ~15 ms)."""
    probes: dict[str, re.Pattern[str]] = {}
    for m in _WORD.finditer(query):
        word = _POSSESSIVE.sub("", m.group(0).lower())
        for tok in tokens(word):
            # the literal first (a leading \b keeps the regex engine from its fast scan); the
            # start of the word is checked on each match
            probes.setdefault(tok, re.compile(rf"{re.escape(word)}\b"))
    docs = [text.lower() for text in texts]
    joined = "\x00".join(docs)  # one scan per word over all of them, not one per memory
    starts = list(accumulate((len(d) + 1 for d in docs[:-1]), initial=0))
    counts = {
        tok: len(
            {
                bisect_right(starts, m.start())
                for m in probe.finditer(joined)
                if m.start() == 0 or not _WORD_CHAR.match(joined, m.start() - 1)
            }
        )
        for tok, probe in probes.items()
    }
    return (lambda tok: counts.get(tok, 0)), len(docs)
