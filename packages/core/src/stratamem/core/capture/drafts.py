"""Trace drafts: everything the store needs for one trace row, except the vectors (the caller embeds)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stratamem.contract.dtos import Namespace, ToolCall, TurnResult
from stratamem.core.capture.signatures import error_signatures
from stratamem.core.capture.steps import (
    EpisodeTurn,
    Step,
    extract_steps,
    merge_per_turn,
    normalise_steps,
)
from stratamem.core.capture.summary import heuristic_summary
from stratamem.core.capture.tags import extract_tags
from stratamem.core.config.settings import lookup
from stratamem.core.storage.vector_text import (
    ACTION_INPUT_CHARS,
    action_text,
    short,
    turn_text,
)

LIGHTWEIGHT_TAG = "lightweight_memory"
#: each half of the whole turn embedded for vec_summary (the embedder truncates further by tokens)


@dataclass(frozen=True, slots=True)
class TraceDraft:
    """One trace row minus ``id``/vectors/``journal_seq`` (assigned by the store)."""

    episode_id: str
    session_id: str
    ts: int
    turn_id: int
    user_text: str
    agent_text: str
    summary: str
    reflection: str | None
    agent_thinking: str | None
    tool_calls: tuple[ToolCall, ...]
    tool_calls_json: str
    tags: tuple[str, ...]
    error_signatures: tuple[str, ...]
    value: float
    alpha: float
    r_human: float | None
    priority: float
    search_text: str
    owner_agent_kind: str
    owner_profile_id: str
    owner_workspace_id: str | None
    share_scope: str
    summary_text_to_embed: str
    action_text_to_embed: str | None

    def row(self) -> dict[str, Any]:
        """The non-vector columns of the ``traces`` table (no ``id``)."""
        return {
            "episode_id": self.episode_id,
            "session_id": self.session_id,
            "ts": self.ts,
            "turn_id": self.turn_id,
            "user_text": self.user_text,
            "agent_text": self.agent_text,
            "summary": self.summary,
            "reflection": self.reflection,
            "agent_thinking": self.agent_thinking,
            "tool_calls_json": self.tool_calls_json,
            "tags": list(self.tags),
            "error_signatures": list(self.error_signatures),
            "value": self.value,
            "alpha": self.alpha,
            "r_human": self.r_human,
            "priority": self.priority,
            "search_text": self.search_text,
            "owner_agent_kind": self.owner_agent_kind,
            "owner_profile_id": self.owner_profile_id,
            "owner_workspace_id": self.owner_workspace_id,
            "share_scope": self.share_scope,
            "share_target": None,
            "shared_at": None,
        }


def _cfg(config: Mapping[str, Any] | None, key: str) -> Any:
    return lookup(config, "capture", key)


def _calls_json(calls: Sequence[ToolCall]) -> str:
    return json.dumps(
        [
            {k: getattr(c, k) for k in ToolCall.__dataclass_fields__ if getattr(c, k) is not None}
            for c in calls
        ],
        default=str,
        ensure_ascii=False,
    )


def _tool_text(calls: Sequence[ToolCall]) -> str:
    bits: list[str] = []
    for c in calls:
        bits.append(c.name)
        if c.error_code:
            bits.append(c.error_code)
        if c.input is not None:
            bits.append(short(c.input, ACTION_INPUT_CHARS))
        if c.output is not None:
            bits.append(short(c.output, 2000))
    return "\n".join(bits)


def draft_from_step(
    step: Step,
    *,
    episode_id: str,
    session_id: str,
    namespace: Namespace | None,
    lightweight: bool,
    summary_max: int = 140,
) -> TraceDraft:
    ns = namespace or Namespace()
    summary = heuristic_summary(step.user_text, step.agent_text, summary_max)
    tool_text = _tool_text(step.tool_calls)
    signal_text = f"{step.user_text}\n{step.agent_text}\n{tool_text}"
    tags = extract_tags(signal_text, step.tool_calls)
    if lightweight:
        tags = [LIGHTWEIGHT_TAG, *tags][:8]
    sigs = error_signatures(f"{step.agent_text}\n{tool_text}")
    search_text = "\n".join(
        t
        for t in (
            step.user_text,
            step.agent_text,
            summary,
            " ".join(tags),
            " ".join(c.name for c in step.tool_calls),
            " ".join(sigs),
            step.reflection or "",
        )
        if t
    )
    whole = turn_text(step.user_text, step.agent_text) or summary
    return TraceDraft(
        episode_id=episode_id,
        session_id=session_id,
        ts=step.ts,
        turn_id=step.turn_id,
        user_text=step.user_text,
        agent_text=step.agent_text,
        summary=summary,
        reflection=step.reflection,
        agent_thinking=step.thinking,
        tool_calls=step.tool_calls,
        tool_calls_json=_calls_json(step.tool_calls),
        tags=tuple(tags),
        error_signatures=tuple(sigs),
        value=0.0,
        alpha=0.0,
        r_human=None,
        priority=0.5,
        search_text=search_text,
        owner_agent_kind=ns.agent_kind or "unknown",
        owner_profile_id=ns.profile_id or "default",
        owner_workspace_id=ns.workspace_id,
        share_scope="private",
        summary_text_to_embed=whole,
        action_text_to_embed=None if lightweight else action_text(step.agent_text, step.tool_calls),
    )


def turns_of(user_text: str, result: TurnResult, user_ts: int) -> list[EpisodeTurn]:
    """A user turn, one tool turn per call, and the assistant turn."""
    turns = [EpisodeTurn("user", user_text, user_ts)]
    for call in result.tool_calls:
        ts = call.started_at or call.ended_at or user_ts
        turns.append(EpisodeTurn("tool", "", max(ts, user_ts), tool_call=call))
    turns.append(
        EpisodeTurn(
            "assistant",
            result.agent_text,
            max(result.ts, user_ts),
            thinking=result.agent_thinking,
            reflection=result.reflection,
        )
    )
    return turns


def build_trace_drafts(
    user_text: str,
    result: TurnResult,
    *,
    lightweight: bool,
    config: Mapping[str, Any] | None = None,
    user_ts: int | None = None,
    episode_id: str | None = None,
) -> list[TraceDraft]:
    """Drafts for one finished turn: one (lightweight) or one per tool call + reply (full mode)."""
    u_ts = user_ts if user_ts is not None else result.ts
    steps = extract_steps(turns_of(user_text, result, u_ts))
    steps = normalise_steps(
        steps, int(_cfg(config, "max_text_chars")), int(_cfg(config, "max_tool_output_chars"))
    )
    if lightweight:
        steps = merge_per_turn(steps)
    return [
        draft_from_step(
            s,
            episode_id=episode_id or result.episode_id or "",
            session_id=result.session_id,
            namespace=result.namespace,
            lightweight=lightweight,
            summary_max=int(_cfg(config, "summary_max_chars")),
        )
        for s in steps
    ]
