"""The recall message body: ``<memos_context>`` around the core's rendering, capped with a suffix."""

from __future__ import annotations

CONTEXT_MAX_CHARS = 6000
CONTEXT_MIN_CHARS = 256
TRUNCATION_SUFFIX = "\n\n[Memory context truncated.]"


def context_block(injected: str, max_chars: int = CONTEXT_MAX_CHARS) -> str:
    """``""`` for an empty rendering; otherwise the wrapped text, at most ``max_chars`` long."""
    if not injected.strip():
        return ""
    limit = max(CONTEXT_MIN_CHARS, max_chars or CONTEXT_MAX_CHARS)
    text = f"<memos_context>\n{injected}\n</memos_context>"
    if len(text) <= limit:
        return text
    return text[: limit - len(TRUNCATION_SUFFIX)] + TRUNCATION_SUFFIX
