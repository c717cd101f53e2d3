"""Text similarity for duplicate checks: character-bigram Dice (memos-core §5.4 step 5c)."""

from __future__ import annotations

import re


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", (text or "").lower()).strip()


def bigrams(text: str) -> list[str]:
    s = _norm(text)
    return [s[i : i + 2] for i in range(len(s) - 1)]


def dice(a: str, b: str) -> float:
    x, y = bigrams(a), bigrams(b)
    if not x or not y:
        return 1.0 if _norm(a) == _norm(b) and _norm(a) else 0.0
    pool = list(y)
    hits = 0
    for g in x:
        if g in pool:
            pool.remove(g)
            hits += 1
    return 2 * hits / (len(x) + len(y))


def same_text(a: str, b: str) -> bool:
    return _norm(a) == _norm(b)
