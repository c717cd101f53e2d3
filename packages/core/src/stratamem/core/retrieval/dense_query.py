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
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import accumulate
from typing import Any
from weakref import WeakKeyDictionary

#: a word is dropped from the embedded text when at least this share of the memories holds it
COMMON_SHARE = 0.8
#: below this many memories a share says little (three memories may all say "hello"): no change
MIN_MEMORIES = 20
#: the LanceDB path (no hot index to count on) estimates the shares over this many of the
#: caller's stored memories: a speaker named in every memory is in every sample
SAMPLE = 256
#: visibility scopes whose sample is kept (``SampleCache``; LRU, 40-100 KB each at 256 memories)
SAMPLE_SCOPES = 32
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


@dataclass(frozen=True, slots=True)
class Sample:
    """Sampled memory texts as ``sample_df`` scans them: lower-cased, joined once, with each
    memory's start offset (built once per table version, not once per query)."""

    joined: str
    starts: list[int]
    n: int

    @classmethod
    def of(cls, texts: Iterable[str]) -> Sample:
        docs = [text.lower() for text in texts]
        starts = list(accumulate((len(d) + 1 for d in docs[:-1]), initial=0))
        return cls("\x00".join(docs), starts, len(docs))


def sample_df(
    texts: Iterable[str] | Sample, query: str, tokens: Callable[[str], list[str]]
) -> tuple[Callable[[str], int], int]:
    """``(df, n)`` of the query's tokens over sampled memory texts (the LanceDB path's counts).

    A memory holds a token when it holds the query word the token came from, as a whole word in
    any case: one regex scan per word over the joined sample (an analyzer pass over each memory
    cost ~25 ms per query on 256 memories, a search per memory and word ~15 ms)."""
    sample = texts if isinstance(texts, Sample) else Sample.of(texts)
    probes: dict[str, re.Pattern[str]] = {}
    for m in _WORD.finditer(query):
        word = _POSSESSIVE.sub("", m.group(0).lower())
        for tok in tokens(word):
            # the literal first (a leading \b keeps the regex engine from its fast scan); the
            # start of the word is checked on each match
            probes.setdefault(tok, re.compile(rf"{re.escape(word)}\b"))
    joined, starts = sample.joined, sample.starts  # one scan per word over all of them
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
    return (lambda tok: counts.get(tok, 0)), sample.n


class SampleCache:
    """The LanceDB path's samples, one per (table, visibility scope), each valid for the table
    version it was read at: a query reads its sample once and reuses it until a write, delete or
    optimize commits a new version (1.5-3 ms per query otherwise, repeated although nothing
    changed). Keyed by the scope's filter, so two namespaces never share a sample; a version
    number names one immutable state of the dataset, so the key stays right across a session
    renewal (``LanceStore.renew_session`` reopens the same versions). LRU over scopes, bounded."""

    def __init__(self, scopes: int = SAMPLE_SCOPES) -> None:
        self.scopes = max(1, scopes)
        self._held: OrderedDict[tuple[str, str], tuple[int, Sample]] = OrderedDict()
        #: samples read from LanceDB (misses), for tests and the bench
        self.reads = 0

    def get(self, key: tuple[str, str], version: int) -> Sample | None:
        got = self._held.get(key)
        if got is None or got[0] != version:
            return None
        self._held.move_to_end(key)
        return got[1]

    def put(self, key: tuple[str, str], version: int, sample: Sample) -> None:
        self._held[key] = (version, sample)
        self._held.move_to_end(key)
        while len(self._held) > self.scopes:
            self._held.popitem(last=False)

    def clear(self) -> None:
        self._held.clear()


_CACHES: WeakKeyDictionary[Any, SampleCache] = WeakKeyDictionary()


def cache_for(store: Any) -> SampleCache | None:
    """The sample cache of ``store`` (one per open ``LanceStore``: a store opened again, e.g. on a
    re-created home whose versions restart, starts empty); None without a store."""
    if store is None:
        return None
    try:
        got = _CACHES.get(store)
        if got is None:
            got = _CACHES[store] = SampleCache()
    except TypeError:  # not weak-referenceable: no cache, the sample is read per query
        return None
    return got


async def read_sample(table: Any, store: Any) -> Sample:
    """The caller's sample of ``table`` (a ``ScopedTable``): the cached one while the table is at
    the version it was read at, else read now (the retrieval runs this under its deadline).

    A sample is kept only when the version did not move while it was read, so a cached sample is
    always what that version returns. The FTS index is brought up to date first (``LanceStore.
    fts_current``): its rebuild commits a version, which would retire a sample read before it."""
    fold = getattr(store, "fts_current", None)
    if fold is not None:
        await fold(str(table.name))
    cache = cache_for(store)
    if cache is None:
        return Sample.of(_texts(await _sample_rows(table)))
    key = (str(table.name), str(table.scope.where))
    version = int(await table.version())
    got = cache.get(key, version)
    if got is not None:
        return got
    sample = Sample.of(_texts(await _sample_rows(table)))
    cache.reads += 1
    if int(await table.version()) == version:
        cache.put(key, version, sample)
    return sample


async def _sample_rows(table: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = await table.query().select(["search_text"]).limit(SAMPLE).to_list()
    return rows


def _texts(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    return (str(r.get("search_text") or "") for r in rows)
