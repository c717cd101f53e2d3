"""Turn a spooled DSH turn (its session events) into the core's routing and capture inputs.

Tool outcomes come from ``tool/call``/``tool/result`` pairs; a surface replacement rewrites the output
but never the timing or the outcome (hosts.md §5.3 item 7).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from stratamem.contract.dtos import ToolCall, ToolOutcome, TurnInput, TurnResult
from stratamem.contract.hostkit.tools import parse_arguments
from stratamem.dsh.host_api import (
    AGENT,
    ASSISTANT_MESSAGE,
    DEFAULT_TOOL_ERROR,
    TOOL_CALL,
    TOOL_RESULT,
    USER_MESSAGE,
    USER_SOURCE,
)
from stratamem.dsh.namespace import SessionInfo, resolve_namespace, turn_key


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One completed turn as the plugin spooled it."""

    key: str
    session: SessionInfo
    turn: int
    user_text: str
    started_at: int
    ended_at: int
    reason: str = "completed"
    events: tuple[dict[str, Any], ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnRecord:
        s = data.get("session") or {}
        info = SessionInfo(
            ref=str(s.get("ref") or ""),
            session_id=str(s.get("session_id") or ""),
            agent_preset=str(s.get("agent_preset") or ""),
            cwd=str(s.get("cwd") or ""),
            profile_id=str(s.get("profile_id") or "default"),
        )
        turn = int(data.get("turn") or 0)
        return cls(
            key=str(data.get("key") or turn_key(info.session_id, turn)),
            session=info,
            turn=turn,
            user_text=str(data.get("user_text") or ""),
            started_at=int(data.get("started_at") or 0),
            ended_at=int(data.get("ended_at") or 0),
            reason=str(data.get("reason") or "completed"),
            events=tuple(e for e in data.get("events") or () if isinstance(e, dict)),
        )


@dataclass
class _Tool:
    call_id: str
    name: str
    arguments: Any = None
    started_at: int | None = None
    ended_at: int | None = None
    output: str | None = None
    error_code: str | None = None
    done: bool = False


@dataclass(frozen=True, slots=True)
class CapturePlan:
    turn_input: TurnInput
    result: TurnResult
    outcomes: tuple[ToolOutcome, ...] = field(default=())


def _texts(content: Any, kinds: tuple[str, ...]) -> str:
    if isinstance(content, str):
        return content if "text" in kinds else ""
    parts = []
    for block in content or ():
        if isinstance(block, dict) and block.get("type") in kinds:
            text = block.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "\n".join(parts)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    out = []
    for block in content or ():
        if isinstance(block, dict):
            if isinstance(block.get("text"), str):
                out.append(block["text"])
            elif block.get("type") == "tool-result":
                out.append(_result_text(block.get("content")))
            else:
                out.append(json.dumps(block, ensure_ascii=False, sort_keys=True))
    return "\n".join(o for o in out if o)


def _tool_result(data: dict[str, Any]) -> tuple[str | None, str, bool]:
    """(callId, output text, is error) of a ``tool/result`` event."""
    message = data.get("message") or {}
    call_id = ((message.get("source") or {}).get("callId")) or data.get("callId")
    is_error = False
    output = ""
    for block in message.get("content") or ():
        if isinstance(block, dict) and block.get("type") == "tool-result":
            call_id = call_id or block.get("toolCallId")
            is_error = is_error or bool(block.get("isError"))
            output = _result_text(block.get("content"))
    return (str(call_id) if call_id else None), output, is_error


def plan_capture(record: TurnRecord) -> CapturePlan | None:
    """``None`` when the turn has no direct-user text (nothing to capture)."""
    user = record.user_text.strip()
    agent_parts: list[str] = []
    thinking_parts: list[str] = []
    tools: dict[str, _Tool] = {}
    order: list[str] = []
    for event in record.events:
        etype = event.get("type")
        data = event.get("data") or {}
        time_ms = int(event.get("time") or 0)
        if etype == USER_MESSAGE and not user:
            if (data.get("source") or {}).get("kind") == USER_SOURCE:
                user = _texts(data.get("content"), ("text",)).strip()
        elif etype == ASSISTANT_MESSAGE:
            content = (data.get("message") or {}).get("content")
            text = _texts(content, ("text",))
            if text.strip():
                agent_parts.append(text)
            thought = _texts(content, ("reasoning",))
            if thought.strip():
                thinking_parts.append(thought)
        elif etype == TOOL_CALL:
            call_id = str(data.get("callId") or f"call-{len(order)}")
            if call_id not in tools:
                order.append(call_id)
                tools[call_id] = _Tool(
                    call_id,
                    str(data.get("name") or "tool"),
                    parse_arguments(data.get("arguments")),
                    started_at=time_ms or None,
                )
        elif etype == TOOL_RESULT:
            result_id, output, is_error = _tool_result(data)
            if result_id is None:
                continue
            tool = tools.get(result_id)
            if tool is None:
                order.append(result_id)
                tool = tools[result_id] = _Tool(result_id, "tool")
            surface = event.get("surfaceOp")
            tool.output = output
            if isinstance(surface, dict) and surface.get("op") == "replace" and tool.done:
                continue  # a presentation rewrite: new output, same timing and outcome
            err = (
                (data.get("error") or {}).get("code")
                if isinstance(data.get("error"), dict)
                else None
            )
            tool.error_code = str(err) if err else (DEFAULT_TOOL_ERROR if is_error else None)
            tool.ended_at = time_ms or None
            tool.done = True
    if not user:
        return None
    info = record.session
    ns = resolve_namespace(info)
    key = record.key
    calls = tuple(
        ToolCall(
            name=t.name,
            input=t.arguments,
            output=t.output,
            error_code=t.error_code,
            tool_call_id=t.call_id,
            started_at=t.started_at,
            ended_at=t.ended_at,
        )
        for t in (tools[c] for c in order)
    )
    outcomes = tuple(
        ToolOutcome(
            session_id=info.session_id,
            tool=t.name,
            success=t.error_code is None,
            duration_ms=float(max(0, (t.ended_at or 0) - (t.started_at or t.ended_at or 0))),
            ts=t.ended_at or record.ended_at,
            error_code=t.error_code,
        )
        for t in (tools[c] for c in order)
        if t.done
    )
    hints: dict[str, Any] = {"dshTurn": record.turn, "cwd": info.cwd, "dshEndReason": record.reason}
    turn_input = TurnInput(
        agent=AGENT,
        session_id=info.session_id,
        user_text=user,
        ts=record.started_at or record.ended_at,
        namespace=ns,
        turn_key=key,
        context_hints=hints,
    )
    result = TurnResult(
        agent=AGENT,
        session_id=info.session_id,
        agent_text="\n\n".join(agent_parts),
        ts=record.ended_at or record.started_at,
        namespace=ns,
        tool_calls=calls,
        agent_thinking="\n\n".join(thinking_parts) or None,
        context_hints=hints,
        turn_key=key,
        user_text=user,
    )
    return CapturePlan(turn_input, result, outcomes)
