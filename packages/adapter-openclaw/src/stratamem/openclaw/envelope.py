"""Strip what OpenClaw and memory plugins wrap around user text, so only the user's words are stored.

OpenClaw adds envelopes (sender metadata, timestamps, runtime trailers); our own ``<memos_context>``
block is prepended to the prompt and must never be captured back as if the user had said it.
"""

from __future__ import annotations

import re

_INJECTED_BLOCK = re.compile(
    r"<(memos_context|memory_context|memory-context|relevant-memories)>.*?(</\1>|\Z)",
    re.DOTALL | re.IGNORECASE,
)
_INTERNAL_CONTEXT = re.compile(
    r"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>.*?(<<<END_OPENCLAW_INTERNAL_CONTEXT>>>|\Z)", re.DOTALL
)
_SENDER_META = re.compile(
    r"^[^\n]*\(untrusted metadata\):[ \t]*\n```[a-z0-9]*\n.*?\n```[ \t]*\n?",
    re.DOTALL | re.MULTILINE | re.IGNORECASE,
)
_SYSTEM_LINE = re.compile(r"^System \(untrusted\):.*(?:\n|\Z)", re.MULTILINE)
_CURRENT_TIME = re.compile(r"^Current time:.*(?:\n|\Z)", re.MULTILINE)
_MESSAGE_ID = re.compile(r"\[message_id:[^\]]*\]")
_TIMESTAMP_PREFIX = re.compile(
    r"^\s*\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d{2}-\d{2}[^\]]*\]\s*"
)
_SENDER_PREFIX = re.compile(r"^\s*ou_[A-Za-z0-9_-]+:\s*")
_RUNTIME_TRAILER = re.compile(r"\n+Runtime: agent=[^\n]*(?:\n.*)?\Z", re.DOTALL)
_BLANK_RUNS = re.compile(r"\n{3,}")


def strip_injected_blocks(text: str) -> str:
    """Remove ``<memos_context>`` (and sibling) memory blocks and OpenClaw internal context."""
    text = _INJECTED_BLOCK.sub("", text)
    return _INTERNAL_CONTEXT.sub("", text)


def strip_envelope(text: str) -> str:
    """The user's own words: envelopes, injected memory and runtime trailers removed, trimmed."""
    text = strip_injected_blocks(text)
    text = _SENDER_META.sub("", text)
    text = _SYSTEM_LINE.sub("", text)
    text = _CURRENT_TIME.sub("", text)
    text = _MESSAGE_ID.sub("", text)
    text = _RUNTIME_TRAILER.sub("", text)
    text = text.strip()
    # the timestamp and sender prefixes can come in either order
    for _ in range(2):
        text = _TIMESTAMP_PREFIX.sub("", text)
        text = _SENDER_PREFIX.sub("", text)
    return _BLANK_RUNS.sub("\n\n", text).strip()
