"""Query-side text analysis: content terms (stop words removed), CJK bigrams, identifiers, BM25 helpers."""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence

#: English function words and question words: they never decide a lexical match.
_STOP_TEXT = """a about above after again against all am an and any are aren't as at be because been before being
    below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down
    during each few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here
    here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself
    let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves out
    over own same shan't she she'd she'll she's should shouldn't so some such than that that's the their
    theirs them themselves then there there's these they they'd they'll they're they've this those through
    to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when when's
    where where's which while who who's whom why why's will with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves also just any anything something tell told say said ask
    asked know remember recall please pls thanks thank ok okay yes yeah hi hello hey like get got one two
    use used using want need would could might may shall must thing things way ever still really"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
#: CJK characters that carry no topic (particles, pronouns, question words).
CJK_NOISE = frozenset("我你他她它的了呢吗么还记得是有想请问谁哪帮吧啊呀在和与就都也这那个")

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_'+#.-]*[A-Za-z0-9+#]|[A-Za-z0-9]")
CJK_RUN = _CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+")
_IDENT = re.compile(r"[A-Za-z0-9_:-]{12,}")
#: words joined by hyphens ("transgender-specific", "state-of-the-art"): prose, not an identifier
_COMPOUND_WORD = re.compile(r"[a-z]+(?:-[a-z]+)+")


def ascii_terms(text: str) -> list[str]:
    """Lower-case word tokens of ≥2 chars that are not stop words, in order, deduplicated."""
    out: list[str] = []
    for tok in _TOKEN.findall(text or ""):
        t = tok.lower().strip(".'-")
        if len(t) < 2 or t in STOP_WORDS or t in out:
            continue
        out.append(t)
    return out


def cjk_bigrams(text: str) -> list[str]:
    """Bigrams of CJK runs without noise characters (a 2-char run is kept whole)."""
    out: list[str] = []
    for run in _CJK_RUN.findall(text or ""):
        clean = "".join(c for c in run if c not in CJK_NOISE)
        grams = [clean] if len(clean) == 2 else [clean[i : i + 2] for i in range(len(clean) - 1)]
        for g in grams:
            if len(g) == 2 and g not in out:
                out.append(g)
    return out


def content_terms(text: str, limit: int = 16) -> list[str]:
    """Pattern terms of a query: ASCII content words then CJK bigrams, at most ``limit``."""
    return (ascii_terms(text) + cjk_bigrams(text))[:limit]


def exact_identifiers(text: str, limit: int = 8) -> list[str]:
    """Long opaque identifiers (ids, hashes, keys): ≥16 chars with a letter and a ``_:-`` or digit.

    Letters-only words joined by hyphens are prose ("transgender-specific events"): as an
    identifier they would make every memory without that exact spelling ineligible (rank.py)."""
    out: list[str] = []
    for tok in _IDENT.findall(unicodedata.normalize("NFKC", text or "")):
        t = tok.strip(":-_").lower()[:128]
        if len(t) < 16 or not re.search(r"[a-z]", t) or not re.search(r"[_:\-0-9]", t):
            continue
        if _COMPOUND_WORD.fullmatch(t):
            continue
        if t not in out:
            out.append(t)
        if len(out) >= limit:
            break
    return out


def doc_tokens(text: str) -> set[str]:
    """Tokens of a stored document for in-memory matching (same analysis as the query side)."""
    low = (text or "").lower()
    toks = {t.lower().strip(".'-") for t in _TOKEN.findall(low)}
    return toks | set(cjk_bigrams(low))


def term_in(term: str, text_lower: str, tokens: set[str]) -> bool:
    """A term matches a whole token, a token prefix of ≥4 chars (plurals, -ing), or a CJK substring."""
    if term in tokens:
        return True
    if _CJK_RUN.match(term):
        return term in text_lower
    if len(term) >= 4:
        return any(t.startswith(term) or (len(t) >= 4 and term.startswith(t)) for t in tokens)
    return False


def idf(n_docs: int, df: int) -> float:
    """BM25 idf, always positive."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_scores(
    terms: Sequence[str], docs: Sequence[str], k1: float = 1.2, b: float = 0.75
) -> list[float]:
    """Okapi BM25 of each doc for the (stop-word-free) terms; OR semantics (any term contributes)."""
    if not docs or not terms:
        return [0.0] * len(docs)
    lows = [d.lower() for d in docs]
    toks = [doc_tokens(d) for d in lows]
    lens = [max(1, len(_TOKEN.findall(d)) + len(_CJK_RUN.findall(d))) for d in lows]
    avg = sum(lens) / len(lens)
    n = len(docs)
    out = [0.0] * n
    for term in terms:
        hits = [term_in(term, lows[i], toks[i]) for i in range(n)]
        df = sum(hits)
        if df == 0:
            continue
        w = idf(n, df)
        for i, hit in enumerate(hits):
            if hit:
                tf = max(1, lows[i].count(term))
                out[i] += w * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lens[i] / avg))
    return out


def weighted_match(terms: Sequence[str], weights: Sequence[float], text: str) -> float:
    """Share of the query's idf weight whose terms occur in ``text`` (0..1)."""
    total = sum(weights)
    if total <= 0:
        return 0.0
    low = (text or "").lower()
    toks = doc_tokens(low)
    got = sum(w for t, w in zip(terms, weights, strict=True) if term_in(t, low, toks))
    return got / total


def dedupe(items: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for i in items:
        if i not in seen:
            seen.append(i)
    return seen
