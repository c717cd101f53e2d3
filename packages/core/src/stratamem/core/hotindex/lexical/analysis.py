"""Text to index tokens, as LanceDB's FTS analyses it (simple tokenizer, lower case, ASCII folding,
English stemming, stop words checked after stemming), plus CJK bigrams as tokens."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import snowballstemmer

_TEXT: Any = None


def _text() -> Any:
    """The query-side analysis (``retrieval.text``), imported on first use: importing the
    ``retrieval`` package at module load would close an import cycle (retrieval → hotindex)."""
    global _TEXT
    if _TEXT is None:
        from stratamem.core.retrieval import text

        _TEXT = text
    return _TEXT


_WORD = re.compile(r"[^\W_]+")
_MAX_TOKEN = 40
_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word))


def _fold(text: str) -> str:
    if text.isascii():
        return text.lower()
    norm = unicodedata.normalize("NFKD", text.lower())
    return "".join(c for c in norm if not unicodedata.combining(c))


#: LanceDB's English stop list (NLTK's, apostrophe pieces included), probed from its FTS index
_FTS_STOP_TEXT = """
    a about after again against ain all am an and are aren as at be been being below between
    both but by can couldn d did didn do doesn doing don down each few for from further had hadn
    has hasn have haven having he her here hers herself him himself his how i if in into is isn
    it its itself just ll m ma me mightn more most mustn my myself needn no nor not now o of off
    on or other our ours out over own re s same shan she should shouldn so some such t than that
    the their theirs them then there these they this those through to too under until up ve was
    wasn we were weren what when where which while who whom will with won wouldn y you your
    yours yourself
"""
FTS_STOP_WORDS = frozenset(_FTS_STOP_TEXT.split())


#: word -> its index token (None when dropped): analysis of a word is a pure function of it
_WORD_TOKEN: dict[str, str | None] = {}
_UNSEEN = "\x00"  # never a word


def _word_token(word: str) -> str | None:
    """The token a lower-cased, folded word indexes as (None: too long, a CJK run, a stop word).

    A number is its own token and is not cached: the English stemmer leaves ASCII digits as they
    are (checked over 300k numbers), no stop word is one, and numbers are most of a large table's
    distinct words (each soak trace brings a new one), so caching them grew the cache by a word a
    trace and held every number's string after its traces were gone.
    """
    if word.isascii() and word.isdigit() and len(word) <= _MAX_TOKEN:
        return word
    tok: str | None = None
    if len(word) <= _MAX_TOKEN and not _text().CJK_RUN.match(word):
        tok = _stem(word)
        if tok in FTS_STOP_WORDS:
            tok = None
    if len(_WORD_TOKEN) >= 500_000:  # a long-lived service meets unbounded junk words
        _WORD_TOKEN.clear()
    _WORD_TOKEN[word] = tok
    return tok


def analyze(text: str) -> list[str]:
    """Index tokens of a document: stemmed words (CJK runs excluded) plus CJK bigrams.

    Like LanceDB's analyzer, a word is stemmed first and the *stem* is checked against the stop
    list ("having" -> "have" is dropped, "because" -> "becaus" is kept): documents get the same
    lengths, so BM25 ranks as the native index does (measured on LoCoMo: our wider query-side stop
    list on the document side shifted near-ties and cost 0.7 pt of R@5 against the LanceDB path).
    """
    low = _fold(text or "")
    out: list[str] = []
    for w in _WORD.findall(low):
        tok = _WORD_TOKEN.get(w, _UNSEEN)  # (one lookup: another thread may clear the cache)
        if tok is _UNSEEN:
            tok = _word_token(w)
        if tok is not None:
            out.append(tok)
    t = _text()
    if t.CJK_RUN.search(low):
        out.extend(t.cjk_bigrams(low))
    return out


#: ASCII bytes to their lower case, other word bytes (``_WORD`` on ASCII: letters, digits) kept,
#: the text separator \x01 kept, every other byte a space
_ASCII_WORDS = bytes(
    c + 32 if 65 <= c <= 90 else c if 97 <= c <= 122 or 48 <= c <= 57 or c == 1 else 32
    for c in range(256)
)


def analyze_many(texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``analyze`` of every text as arrays: (token names, each token's id, the index of the text
    it came from), tokens of one text in order, texts in order.

    The ASCII texts are lower-cased and split in one pass over their joined bytes, their words
    dictionary-encoded by Arrow and each distinct word analysed once (a load's texts repeat their
    words: ~30 words a text, a few distinct ones each); other texts go through ``analyze``.
    """
    vocab: dict[str, int] = {}
    names: list[str] = []

    def tid(tok: str) -> int:
        got = vocab.get(tok)
        if got is None:
            got = vocab[tok] = len(names)
            names.append(tok)
        return got

    plain = [i for i, t in enumerate(texts) if t.isascii() and "\x01" not in t]
    tids: list[np.ndarray] = []
    where: list[np.ndarray] = []
    if plain:
        blob = "\x01".join([texts[i] for i in plain]).encode("ascii")
        words = blob.translate(_ASCII_WORDS).replace(b"\x01", b" \x01 ").split()
        enc = pc.dictionary_encode(pa.array(words, type=pa.binary()))
        code = np.empty(len(enc.dictionary), dtype=np.int64)
        for i, raw in enumerate(enc.dictionary.to_pylist()):
            if raw == b"\x01":
                code[i] = -2
                continue
            w = raw.decode("ascii")
            tok = _WORD_TOKEN.get(w, _UNSEEN)
            if tok is _UNSEEN:
                tok = _word_token(w)
            code[i] = -1 if tok is None else tid(tok)
        ids = code[np.asarray(enc.indices, dtype=np.int64)]
        text_no = np.cumsum(ids == -2)  # the k-th text of ``plain`` follows k separators
        keep = ids >= 0
        tids.append(ids[keep])
        where.append(np.asarray(plain, dtype=np.int64)[text_no[keep]])
    if len(plain) < len(texts):
        rest = sorted(set(range(len(texts))) - set(plain))
        for i in rest:
            toks = analyze(texts[i])
            tids.append(np.array([tid(t) for t in toks], dtype=np.int64))
            where.append(np.full(len(toks), i, dtype=np.int64))
    if not tids:
        return names, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return names, np.concatenate(tids), np.concatenate(where)


def query_tokens(terms: Iterable[str], *, unique: bool = True) -> list[str]:
    """Tokens of the query's content terms (stop words already removed), deduplicated unless
    ``unique`` is False: BM25 scores a token once per occurrence in the query, as LanceDB's FTS
    does ("dogs … dog" weighs "dog" twice)."""
    out: list[str] = []
    for term in terms:
        for tok in analyze(term) if not _text().CJK_RUN.fullmatch(term) else [term]:
            if not unique or tok not in out:
                out.append(tok)
    return out
