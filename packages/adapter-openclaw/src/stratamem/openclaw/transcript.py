"""Cut the current turn out of OpenClaw's full transcript and pair tool calls with their results.

``agent_end`` hands over the whole session history every time; a per-session cursor (one message of
overlap) keeps each turn captured once. Handles pi-ai shapes and the OpenAI legacy shapes; unknown
roles are dropped, never coerced to user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from stratamem.contract.dtos import ToolCall
from stratamem.contract.hostkit.tools import parse_arguments
from stratamem.openclaw.envelope import strip_envelope, strip_injected_blocks

#: OpenClaw's Tool Search bridge: the model calls ``tool_call`` with ``{id: <tool>, args: {...}}``.
BRIDGE_TOOL = "tool_call"
MAX_TOOL_OUTPUT_CHARS = 4000


@dataclass(frozen=True, slots=True)
class ExtractedTurn:
    """One user turn as captured: the user's words, the answer, thinking and paired tool calls."""

    user_text: str
    agent_text: str
    agent_thinking: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    user_ts: int | None = None


def content_text(content: Any) -> str:
    """Plain text of a message ``content``: a string or a list of ``{type:"text", text}`` parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") in ("text", "input_text", "output_text")
        ]
        return "\n".join(p for p in parts if p)
    return ""


def _ts(message: Mapping[str, Any]) -> int | None:
    value = message.get("timestamp")
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _unbridge(name: str, arguments: Any) -> tuple[str, Any]:
    if (
        name == BRIDGE_TOOL
        and isinstance(arguments, Mapping)
        and isinstance(arguments.get("id"), str)
    ):
        return str(arguments["id"]), arguments.get("args")
    return name, arguments


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TOOL_OUTPUT_CHARS else text[:MAX_TOOL_OUTPUT_CHARS] + "…"


@dataclass
class _Pending:
    name: str
    input: Any
    call_id: str | None
    started_at: int | None
    thinking_before: str | None
    text_before: str | None
    output: Any = None
    error_code: str | None = None
    ended_at: int | None = None
    done: bool = False


@dataclass
class _Builder:
    calls: list[_Pending] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    pending_text: list[str] = field(default_factory=list)
    pending_thinking: list[str] = field(default_factory=list)

    def call(self, name: str, arguments: Any, call_id: str | None, ts: int | None) -> None:
        name, arguments = _unbridge(name, parse_arguments(arguments))
        self.calls.append(
            _Pending(
                name=name or "unknown",
                input=arguments,
                call_id=call_id,
                started_at=ts,
                thinking_before="\n".join(self.pending_thinking) or None,
                text_before="\n".join(self.pending_text) or None,
            )
        )
        self.pending_text.clear()
        self.pending_thinking.clear()

    def result(
        self, call_id: str | None, name: str | None, output: str, is_error: bool, ts: int | None
    ) -> None:
        match = next(
            (c for c in self.calls if call_id and c.call_id == call_id and not c.done), None
        )
        if match is None and name:
            match = next((c for c in self.calls if not c.done and c.name == name), None)
        if match is None:
            match = next((c for c in self.calls if not c.done), None)
        if match is None:
            return
        match.output = _clip(output)
        match.error_code = "tool_error" if is_error else None
        match.ended_at = ts
        match.done = True

    def assistant(self, message: Mapping[str, Any]) -> None:
        ts = _ts(message)
        content = message.get("content")
        if isinstance(content, str):
            self._text(content)
        elif isinstance(content, list):
            for part in content:
                if not isinstance(part, Mapping):
                    continue
                kind = part.get("type")
                if kind == "text":
                    self._text(str(part.get("text", "")))
                elif kind == "thinking":
                    value = str(part.get("thinking") or part.get("text") or "")
                    if value:
                        self.thinking.append(value)
                        self.pending_thinking.append(value)
                elif kind in ("toolCall", "tool_use"):
                    self.call(
                        str(part.get("name", "")),
                        part.get("arguments", part.get("input")),
                        _str_or_none(part.get("id")),
                        ts,
                    )
        for legacy in message.get("tool_calls") or ():
            if isinstance(legacy, Mapping):
                fn = legacy.get("function") or {}
                self.call(
                    str(fn.get("name", "")), fn.get("arguments"), _str_or_none(legacy.get("id")), ts
                )

    def _text(self, value: str) -> None:
        value = strip_injected_blocks(value).strip()
        if value:
            self.texts.append(value)
            self.pending_text.append(value)


def _str_or_none(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def last_user_index(messages: Sequence[Any]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, Mapping) and m.get("role") == "user":
            return i
    return None


def extract_turn(messages: Sequence[Any]) -> ExtractedTurn | None:
    """The last user message and everything after it, flattened; ``None`` without a user message."""
    start = last_user_index(messages)
    if start is None:
        return None
    user = messages[start]
    builder = _Builder()
    for m in messages[start + 1 :]:
        if not isinstance(m, Mapping):
            continue
        role = m.get("role")
        if role == "assistant":
            builder.assistant(m)
        elif role in ("toolResult", "tool"):
            builder.result(
                _str_or_none(m.get("toolCallId") or m.get("tool_call_id")),
                _str_or_none(m.get("toolName") or m.get("name")),
                content_text(m.get("content")),
                bool(m.get("isError")),
                _ts(m),
            )
        # other roles (custom, system, compaction summaries…) are dropped
    calls = tuple(
        ToolCall(
            name=c.name,
            input=c.input,
            output=c.output,
            error_code=c.error_code,
            tool_call_id=c.call_id,
            started_at=c.started_at,
            ended_at=c.ended_at,
            thinking_before=c.thinking_before,
            assistant_text_before=c.text_before,
        )
        for c in builder.calls
    )
    agent_text = "\n".join(builder.pending_text) or "\n".join(builder.texts)
    return ExtractedTurn(
        user_text=strip_envelope(content_text(user.get("content"))),
        agent_text=agent_text,
        agent_thinking="\n".join(builder.thinking) or None,
        tool_calls=calls,
        user_ts=_ts(user),
    )


@dataclass(frozen=True, slots=True)
class ObservedTool:
    """A tool call seen through ``after_tool_call`` (more reliable errors and durations)."""

    name: str
    tool_call_id: str
    error: str | None
    duration_ms: float
    ended_at: int


def merge_observed(
    calls: Sequence[ToolCall], observed: Mapping[str, ObservedTool]
) -> tuple[ToolCall, ...]:
    """Enrich transcript calls with what the hooks observed, matched by ``toolCallId``."""
    merged: list[ToolCall] = []
    for call in calls:
        seen = observed.get(call.tool_call_id or "")
        if seen is None:
            merged.append(call)
            continue
        merged.append(
            replace(
                call,
                error_code=("tool_error" if seen.error else call.error_code),
                started_at=call.started_at or int(seen.ended_at - seen.duration_ms),
                ended_at=call.ended_at or seen.ended_at,
            )
        )
    return tuple(merged)


class TranscriptCursor:
    """Per-session position in the transcript: each ``agent_end`` sees only what is new."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def new_messages(self, session_id: str, messages: Sequence[Any]) -> Sequence[Any]:
        """``messages[cursor-1:]`` (one message of overlap); a shrunk transcript restarts at 0."""
        cursor = self._seen.get(session_id, 0)
        if cursor > len(messages):
            cursor = 0  # compaction or /reset rewrote the history
        return messages[max(0, cursor - 1) :]

    def advance(self, session_id: str, messages: Sequence[Any]) -> None:
        self._seen[session_id] = len(messages)

    def forget(self, session_id: str) -> None:
        self._seen.pop(session_id, None)

    def position(self, session_id: str) -> int:
        return self._seen.get(session_id, 0)


def visible_user_texts(messages: Sequence[Any], limit: int = 128) -> list[str]:
    """The user texts of the history the model already sees (≤ ``limit``, newest last)."""
    texts = [
        strip_envelope(content_text(m.get("content")))
        for m in messages
        if isinstance(m, Mapping) and m.get("role") == "user"
    ]
    return [t for t in texts if t][-limit:]


def earliest_ts(messages: Sequence[Any]) -> int | None:
    stamps = [t for m in messages if isinstance(m, Mapping) for t in [_ts(m)] if t is not None]
    return min(stamps) if stamps else None
