"""Query compilation: from a retrieval request to the text to embed and the lexical/structural probes."""

from __future__ import annotations

import json
from dataclasses import dataclass

from stratamem.contract.dtos import RetrievalQuery
from stratamem.core.capture.signatures import error_signatures
from stratamem.core.capture.tags import keyword_tags
from stratamem.core.retrieval.text import content_terms, exact_identifiers

MAX_QUERY_CHARS = 1500
_TRUNC = "\n...[truncated]...\n"


@dataclass(frozen=True, slots=True)
class CompiledQuery:
    text: str  # what is embedded (≤1500 chars)
    tags: tuple[str, ...]
    error_fragments: tuple[str, ...]
    terms: tuple[str, ...]  # pattern / BM25 terms, stop words removed (≤16)
    fts_text: str  # OR query for the native FTS index (≤12 terms)
    identifiers: tuple[str, ...]
    #: words the home's vocabulary adds to the BM25 query: (word, index token, weight)
    #: (vocab/expand.py; set by the engine once the query vector is known)
    expansion: tuple[tuple[str, str, float], ...] = ()


def clamp_query(text: str) -> str:
    if len(text) <= MAX_QUERY_CHARS:
        return text
    half = (MAX_QUERY_CHARS - 32) // 2
    return text[:half] + _TRUNC + text[-half:]


def query_source_text(query: RetrievalQuery) -> str:
    """The untruncated query text per reason (memos-core §5.7.2)."""
    hints = query.context_hints or {}
    if query.reason == "tool_driven" and query.filters:
        rest = {k: v for k, v in query.filters.items() if k != "query"}
        extra = json.dumps(rest, default=str, ensure_ascii=False, sort_keys=True) if rest else ""
        return "\n".join(t for t in (query.query, extra) if t)
    if query.reason == "skill_invoke" and hints.get("skill_id"):
        return f"skill:{hints['skill_id']}\n{query.query}"
    if query.reason == "sub_agent" and hints.get("profile"):
        return f"profile:{hints['profile']}\n{query.query}"
    if query.reason == "decision_repair" and hints.get("failing_tool"):
        return (
            f"failing_tool:{hints['failing_tool']}\nfailures:{hints.get('failure_count', 0)}"
            f"\nerror:{hints.get('last_error_code', '')}\n{query.query}"
        ).strip()
    return query.query or ""


def signature_head(fragment: str, max_chars: int = 40) -> str:
    """The stable head of an error fragment (word-trimmed ≤40 chars): tails carry paths and noise."""
    if len(fragment) <= max_chars:
        return fragment
    cut = fragment[:max_chars]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def compile_text(source: str) -> CompiledQuery:
    terms = content_terms(source, 16)
    return CompiledQuery(
        text=clamp_query(source),
        tags=tuple(keyword_tags(source)),
        error_fragments=tuple(dict.fromkeys(signature_head(f) for f in error_signatures(source))),
        terms=tuple(terms),
        fts_text=" ".join(terms[:12]),
        identifiers=tuple(exact_identifiers(source)),
    )


def compile_query(query: RetrievalQuery) -> CompiledQuery:
    return compile_text(query_source_text(query))
