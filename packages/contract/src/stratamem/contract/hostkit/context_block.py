"""The ``<memos_context>`` block a host puts before the model's prompt, with one truncation rule.

The block wraps the core's rendering (already inside its untrusted-data wrapper). It never exceeds the
host's cap, a cap is never below ``MIN_CONTEXT_CHARS``, and a cut block keeps its closing tag and says
it was cut, so the model never sees an unterminated block.
"""

from __future__ import annotations

MAX_CONTEXT_CHARS = 6000
MIN_CONTEXT_CHARS = 256
OPEN_TAG = "<memos_context>"
CLOSE_TAG = "</memos_context>"


def truncation_note(max_chars: int) -> str:
    return f"[Memory context truncated to {max_chars} characters.]"


def render_context_block(injected: str, max_chars: int | None = MAX_CONTEXT_CHARS) -> str:
    """``""`` for an empty rendering; otherwise the wrapped text, at most ``max_chars`` long."""
    body = injected.strip()
    if not body:
        return ""
    limit = max(MIN_CONTEXT_CHARS, max_chars or MAX_CONTEXT_CHARS)
    block = f"{OPEN_TAG}\n{body}\n{CLOSE_TAG}"
    if len(block) <= limit:
        return block
    tail = f"\n{truncation_note(limit)}\n{CLOSE_TAG}"
    room = limit - len(OPEN_TAG) - 1 - len(tail)
    return f"{OPEN_TAG}\n{body[:room].rstrip()}{tail}"
