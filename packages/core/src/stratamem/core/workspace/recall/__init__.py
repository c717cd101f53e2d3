"""The project-scoped recall store: durable decisions, preferences and solutions, de-duplicated."""

from stratamem.core.workspace.recall.models import (
    RECALL_KINDS,
    RecallAppendResult,
    RecallHit,
    RecallRecord,
    RecallReplaceResult,
    RecallSearchResult,
    RecallVectorHit,
    RecallVectorSearchProvider,
)
from stratamem.core.workspace.recall.normalize import (
    content_hash,
    jaccard,
    normalize_recall_content,
    recall_tokens,
)
from stratamem.core.workspace.recall.search import clamp_recall_search_limit
from stratamem.core.workspace.recall.section import (
    RECALLED_CONTEXT_HEADING,
    RECALLED_CONTEXT_MAX_BYTES,
    append_recalled_context,
    build_recalled_context_section,
)
from stratamem.core.workspace.recall.store import RecallStore

__all__ = [
    "RECALLED_CONTEXT_HEADING",
    "RECALLED_CONTEXT_MAX_BYTES",
    "RECALL_KINDS",
    "RecallAppendResult",
    "RecallHit",
    "RecallRecord",
    "RecallReplaceResult",
    "RecallSearchResult",
    "RecallStore",
    "RecallVectorHit",
    "RecallVectorSearchProvider",
    "append_recalled_context",
    "build_recalled_context_section",
    "clamp_recall_search_limit",
    "content_hash",
    "jaccard",
    "normalize_recall_content",
    "recall_tokens",
]
