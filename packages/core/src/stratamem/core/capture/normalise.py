"""Clamp long texts by keeping the head (55%) and the tail (45%) around a visible marker."""

from __future__ import annotations

MARKER = "\n\n…[truncated]…\n\n"


def truncate_middle(text: str, max_chars: int) -> str:
    """``text`` unchanged when it fits, else head 55% + marker + tail 45% of max(200, max − marker)."""
    if len(text) <= max_chars:
        return text
    budget = max(200, max_chars - len(MARKER))
    head = int(budget * 0.55)
    tail = budget - head
    return text[:head] + MARKER + (text[-tail:] if tail > 0 else "")
