"""The text each vector column embeds — one definition shared by capture (new rows), the journal's
replay and ``reembed`` (every row again after a model change)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from stratamem.contract.dtos import ToolCall
from stratamem.core.storage.rows import tool_calls_from_json

#: each side of a turn is clamped to this many characters (head + tail) before it is embedded
EMBED_HALF_CHARS = 1000
#: a tool call's input is cut to this many characters in the action text
ACTION_INPUT_CHARS = 300
MARKER = "\n\n…[truncated]…\n\n"


def truncate_middle(text: str, max_chars: int) -> str:
    """``text`` unchanged when it fits, else head 55% + marker + tail 45% of max(200, max − marker)."""
    if len(text) <= max_chars:
        return text
    budget = max(200, max_chars - len(MARKER))
    head = int(budget * 0.55)
    tail = budget - head
    return text[:head] + MARKER + (text[-tail:] if tail > 0 else "")


def short(value: Any, limit: int) -> str:
    """``value`` as text (JSON unless a string), cut to ``limit`` characters with an ellipsis."""
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def action_text(agent_text: str, calls: Sequence[ToolCall]) -> str:
    """``agentText \\n---\\n name(input≤300); …`` (what ``vec_action`` embeds)."""
    sig = "; ".join(f"{c.name}({short(c.input, ACTION_INPUT_CHARS)})" for c in calls)
    return f"{agent_text}\n---\n{sig}" if sig else agent_text


def turn_text(user_text: str, agent_text: str) -> str:
    """The whole turn (user + assistant), each side clamped head+tail: what ``vec_summary`` embeds."""
    parts = [truncate_middle(t, EMBED_HALF_CHARS) for t in (user_text, agent_text) if t.strip()]
    return "\n".join(parts)


def embed_text(table: str, column: str, row: Mapping[str, Any]) -> str | None:
    """The text a vector column embeds for a stored row (``None``: nothing to embed)."""
    if table == "traces":
        if column == "vec_summary":
            return turn_text(row.get("user_text") or "", row.get("agent_text") or "") or (
                row.get("summary") or None
            )
        if column == "vec_action":
            calls = tool_calls_from_json(row.get("tool_calls_json"))
            return action_text(row.get("agent_text") or "", calls) or None
    parts: tuple[Any, ...]
    if table == "policies":
        parts = (row.get("title"), row.get("trigger"), row.get("procedure"))
    elif table == "world_models":
        parts = (row.get("title"), row.get("body"))
    elif table == "skills":
        parts = (row.get("name"), row.get("invocation_guide"))
    else:
        return None
    text = "\n".join(p for p in parts if p)
    return text or None
