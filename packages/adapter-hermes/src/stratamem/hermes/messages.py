"""Read one turn's tool calls and thinking out of Hermes' OpenAI-style ``messages`` list.

The turn is located by its user text, so messages of a later turn appended to the same list are ignored.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stratamem.contract.dtos import ToolCall
from stratamem.contract.hostkit.tools import parse_arguments


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text", "") for p in content if isinstance(p, dict)]
        return "\n".join(x for x in parts if isinstance(x, str))
    return ""


def _norm(text: str) -> str:
    return " ".join(text.split())


def turn_slice(messages: Sequence[dict[str, Any]], user_text: str) -> list[dict[str, Any]]:
    """Messages after the LAST user message with ``user_text`` up to the next user message."""
    msgs = [m for m in messages if isinstance(m, dict)]
    wanted = _norm(user_text)
    start = None
    for i in range(len(msgs) - 1, -1, -1):
        if msgs[i].get("role") == "user":
            got = _norm(_text(msgs[i].get("content")))
            if got == wanted or (wanted and got.startswith(wanted)):
                start = i
                break
    if start is None:
        return []
    out: list[dict[str, Any]] = []
    for msg in msgs[start + 1 :]:
        if msg.get("role") == "user":
            break
        out.append(msg)
    return out


def extract_turn(
    messages: Sequence[dict[str, Any]] | None, user_text: str
) -> tuple[tuple[ToolCall, ...], str | None]:
    """``(tool_calls, thinking)`` of the turn that ``user_text`` opened."""
    if not messages:
        return (), None
    turn = turn_slice(messages, user_text)
    results: dict[str, dict[str, Any]] = {}
    for msg in turn:
        if msg.get("role") == "tool" and msg.get("tool_call_id"):
            results[str(msg["tool_call_id"])] = msg
    calls: list[ToolCall] = []
    thinking: list[str] = []
    for msg in turn:
        if msg.get("role") != "assistant":
            continue
        reasoning = msg.get("reasoning") or msg.get("reasoning_content")
        if isinstance(reasoning, str) and reasoning.strip():
            thinking.append(reasoning.strip())
        before = _text(msg.get("content")) or None
        for tc in msg.get("tool_calls") or []:
            if not isinstance(tc, dict):
                continue
            fn = tc.get("function") or {}
            call_id = str(tc.get("id") or "") or None
            result = results.get(call_id or "")
            output = _text(result.get("content")) if result else None
            error = None
            if output and output.lstrip().startswith("{"):
                parsed = parse_arguments(output)
                if isinstance(parsed, dict) and parsed.get("error"):
                    error = "tool_error"
            calls.append(
                ToolCall(
                    name=str(fn.get("name") or tc.get("name") or "unknown"),
                    input=parse_arguments(fn.get("arguments")),
                    output=output,
                    error_code=error,
                    tool_call_id=call_id,
                    thinking_before=reasoning if isinstance(reasoning, str) else None,
                    assistant_text_before=before,
                )
            )
    return tuple(calls), ("\n\n".join(thinking) or None)
