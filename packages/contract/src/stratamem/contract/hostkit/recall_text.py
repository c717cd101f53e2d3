"""Recall content normalisation and similarity: the de-duplication rules in one place.

The core's recall store de-duplicates with these; an adapter that must find "the entry its host's
tool names" (Hermes' ``memory`` tool) matches with the same normalisation, never a copy of it.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

_WS = re.compile(r"\s+")
_TOKEN = re.compile(r"\w+", re.UNICODE)


def normalize_recall_content(content: str) -> str:
    """Trim, lowercase, collapse whitespace, strip trailing punctuation (repeatedly)."""
    text = _WS.sub(" ", content.strip().lower())
    while text and (unicodedata.category(text[-1]).startswith("P") or text[-1].isspace()):
        text = text[:-1]
    return text.strip()


def content_hash(normalized: str) -> str:
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


def recall_tokens(text: str) -> frozenset[str]:
    return frozenset(_TOKEN.findall(text.lower()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a ∩ b| / |a ∪ b|; 0 when either side has no tokens."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
