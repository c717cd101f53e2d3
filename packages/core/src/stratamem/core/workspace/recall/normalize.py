"""Recall content normalisation and similarity: defined once in the host kit, shared with adapters."""

from stratamem.contract.hostkit.recall_text import (
    content_hash,
    jaccard,
    normalize_recall_content,
    recall_tokens,
)

__all__ = ["content_hash", "jaccard", "normalize_recall_content", "recall_tokens"]
