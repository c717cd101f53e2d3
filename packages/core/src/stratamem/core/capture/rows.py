"""Adapter for the facade's capture hook: a turn draft in, trace rows (with texts to embed) out."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stratamem.contract.dtos import TurnResult
from stratamem.core.capture.drafts import build_trace_drafts


def capture_turn(draft: Any, config: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Rows of the ``traces`` table minus id/episode/session/owner (the facade sets those), each with
    ``_embed = {"vec_summary": whole turn text, "vec_action": action text (full mode only)}``."""
    result = TurnResult(
        agent="",
        session_id="",
        agent_text=draft.agent_text or "",
        ts=int(draft.ts),
        tool_calls=tuple(draft.tool_calls),
        agent_thinking=draft.agent_thinking,
        reflection=draft.reflection,
    )
    drafts = build_trace_drafts(
        draft.user_text or "",
        result,
        lightweight=bool(draft.lightweight),
        config=config,
        user_ts=int(draft.turn_id),
    )
    rows = []
    for d in drafts:
        row = d.row()
        for key in (
            "episode_id",
            "session_id",
            "owner_agent_kind",
            "owner_profile_id",
            "owner_workspace_id",
            "share_scope",
            "share_target",
            "shared_at",
        ):
            row.pop(key, None)
        embed = {"vec_summary": d.summary_text_to_embed}
        if d.action_text_to_embed is not None:
            embed["vec_action"] = d.action_text_to_embed
        row["_embed"] = embed
        rows.append(row)
    return rows
