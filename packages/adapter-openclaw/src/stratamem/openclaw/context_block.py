"""The ``<memos_context>`` block OpenClaw prepends to the prompt, capped at 6,000 characters."""

from __future__ import annotations

MAX_CONTEXT_CHARS = 6000
OPEN_TAG = "<memos_context>"
CLOSE_TAG = "</memos_context>"
TRUNCATION_NOTE = f"[Memory context truncated to {MAX_CONTEXT_CHARS} characters.]"


def render_context_block(injected: str, max_chars: int = MAX_CONTEXT_CHARS) -> str:
    """Wrap the core's rendered context; empty input gives ``""``; the whole block stays ≤ max_chars."""
    body = injected.strip()
    if not body:
        return ""
    block = f"{OPEN_TAG}\n{body}\n{CLOSE_TAG}"
    if len(block) <= max_chars:
        return block
    tail = f"\n{TRUNCATION_NOTE}\n{CLOSE_TAG}"
    room = max(0, max_chars - len(OPEN_TAG) - 1 - len(tail))
    return f"{OPEN_TAG}\n{body[:room].rstrip()}{tail}"
