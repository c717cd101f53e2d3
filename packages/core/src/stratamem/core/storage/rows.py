"""Convert LanceDB/SQLite rows to contract DTOs (and tool calls to JSON), nothing else."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

from stratamem.contract import codec
from stratamem.contract.dtos import (
    DecisionGuidance,
    Episode,
    Ownership,
    Policy,
    Session,
    Share,
    Skill,
    ToolCall,
    Trace,
    WorldModel,
    WorldModelEntry,
    WorldModelStructure,
)


def tool_calls_to_json(calls: Sequence[ToolCall]) -> str:
    return json.dumps(
        [
            {
                "name": c.name,
                "input": c.input,
                "output": c.output,
                "error_code": c.error_code,
                "tool_call_id": c.tool_call_id,
                "started_at": c.started_at,
                "ended_at": c.ended_at,
                "thinking_before": c.thinking_before,
                "assistant_text_before": c.assistant_text_before,
            }
            for c in calls
        ],
        default=str,
    )


def _no_constant(_: str) -> None:
    return None


def tool_calls_from_json(raw: str | None) -> tuple[ToolCall, ...]:
    """Stored tool calls. NaN and infinities (``turn_end`` refuses them now; an older version
    stored them) read as ``null``: JSON cannot carry them, and one stored value must not make
    every listing of its namespace fail over gRPC."""
    if not raw:
        return ()
    out = []
    for d in json.loads(raw, parse_constant=_no_constant):
        known = {k: d.get(k) for k in ToolCall.__dataclass_fields__ if k in d}
        out.append(ToolCall(**known))
    return tuple(out)


def owner_of(row: Mapping[str, Any]) -> Ownership:
    return Ownership(
        owner_agent_kind=row.get("owner_agent_kind") or "unknown",
        owner_profile_id=row.get("owner_profile_id") or "default",
        owner_workspace_id=row.get("owner_workspace_id"),
    )


def share_of(row: Mapping[str, Any]) -> Share | None:
    scope = row.get("share_scope") or "private"
    if scope == "private" and not row.get("share_target"):
        return None
    return Share(scope=scope, target=row.get("share_target"), shared_at=row.get("shared_at"))


def trace_from_row(row: Mapping[str, Any], episode_status: str | None = None) -> Trace:
    def f(name: str, default: float = 0.0) -> float:
        v = row.get(name)
        return float(v) if v is not None else default

    return Trace(
        id=row["id"],
        episode_id=row["episode_id"],
        session_id=row["session_id"],
        ts=int(row["ts"]),
        turn_id=int(row["turn_id"]),
        user_text=row.get("user_text") or "",
        agent_text=row.get("agent_text") or "",
        summary=row.get("summary"),
        tags=tuple(row.get("tags") or ()),
        tool_calls=tool_calls_from_json(row.get("tool_calls_json")),
        agent_thinking=row.get("agent_thinking"),
        reflection=row.get("reflection"),
        value=f("value"),
        alpha=f("alpha"),
        r_human=float(row["r_human"]) if row.get("r_human") is not None else None,
        priority=f("priority", 0.5),
        error_signatures=tuple(row.get("error_signatures") or ()),
        share=share_of(row),
        owner=owner_of(row),
        episode_status=episode_status,
    )


def unreadable_trace(row: Mapping[str, Any]) -> str | None:
    """Why a trace row could not be answered to a reader (the wire cannot carry it: a ``ts`` past
    int64, NaN in a tool call's input), or None when it can."""
    try:
        codec.to_proto(trace_from_row(row))
    except Exception as exc:  # any reason at all: the row cannot be shown
        return f"{type(exc).__name__}: {exc}"[:500]
    return None


def _guidance(raw: str | None) -> DecisionGuidance:
    d = json.loads(raw) if raw else {}
    return DecisionGuidance(
        preference=tuple(d.get("preference") or ()),
        anti_pattern=tuple(d.get("anti_pattern") or d.get("antiPattern") or ()),
    )


def policy_from_row(row: Mapping[str, Any]) -> Policy:
    return Policy(
        id=row["id"],
        title=row.get("title") or "",
        trigger=row.get("trigger") or "",
        procedure=row.get("procedure") or "",
        verification=row.get("verification") or "",
        boundary=row.get("boundary") or "",
        support=int(row.get("support") or 0),
        gain=float(row.get("gain") or 0.0),
        status=row.get("status") or "candidate",
        experience_type=row.get("experience_type") or "success_pattern",
        evidence_polarity=row.get("evidence_polarity") or "positive",
        salience=float(row.get("salience") or 0.0),
        confidence=float(row["confidence"]) if row.get("confidence") is not None else 0.5,
        skill_eligible=bool(row.get("skill_eligible", True)),
        created_at=int(row.get("created_at") or 0),
        updated_at=int(row.get("updated_at") or 0),
        edited_at=row.get("edited_at"),
        guidance=_guidance(row.get("guidance_json")),
        source_episode_ids=tuple(row.get("source_episode_ids") or ()),
        source_feedback_ids=tuple(row.get("source_feedback_ids") or ()),
        source_trace_ids=tuple(row.get("source_trace_ids") or ()),
        share=share_of(row),
        owner=owner_of(row),
    )


def _entries(items: Any) -> tuple[WorldModelEntry, ...]:
    return tuple(
        WorldModelEntry(
            label=str(i.get("label", "")),
            description=str(i.get("description", "")),
            evidence_ids=tuple(i.get("evidence_ids") or i.get("evidenceIds") or ()),
        )
        for i in items or ()
    )


def world_model_from_row(row: Mapping[str, Any]) -> WorldModel:
    st = json.loads(row["structure_json"]) if row.get("structure_json") else {}
    return WorldModel(
        id=row["id"],
        title=row.get("title") or "",
        body=row.get("body") or "",
        structure=WorldModelStructure(
            environment=_entries(st.get("environment")),
            inference=_entries(st.get("inference")),
            constraints=_entries(st.get("constraints")),
        ),
        policy_ids=tuple(row.get("policy_ids") or ()),
        domain_tags=tuple(row.get("domain_tags") or ()),
        confidence=float(row["confidence"]) if row.get("confidence") is not None else 0.5,
        created_at=int(row.get("created_at") or 0),
        updated_at=int(row.get("updated_at") or 0),
        version=int(row.get("version") or 1),
        status=row.get("status") or "active",
        edited_at=row.get("edited_at"),
        share=share_of(row),
        owner=owner_of(row),
    )


def skill_from_row(row: Mapping[str, Any]) -> Skill:
    return Skill(
        id=row["id"],
        name=row.get("name") or "",
        status=row.get("status") or "candidate",
        invocation_guide=row.get("invocation_guide") or "",
        guidance=_guidance(row.get("guidance_json")),
        evidence_anchors=tuple(row.get("evidence_anchors") or ()),
        eta=float(row.get("eta") or 0.0),
        support=int(row.get("support") or 0),
        gain=float(row.get("gain") or 0.0),
        trials_attempted=int(row.get("trials_attempted") or 0),
        trials_passed=int(row.get("trials_passed") or 0),
        source_policy_ids=tuple(row.get("source_policy_ids") or ()),
        source_world_model_ids=tuple(row.get("source_world_model_ids") or ()),
        created_at=int(row.get("created_at") or 0),
        updated_at=int(row.get("updated_at") or 0),
        version=int(row.get("version") or 1),
        usage_count=int(row.get("usage_count") or 0),
        last_used_at=row.get("last_used_at"),
        edited_at=row.get("edited_at"),
        share=share_of(row),
        owner=owner_of(row),
    )


def episode_from_row(row: sqlite3.Row) -> Episode:
    meta = json.loads(row["meta_json"] or "{}")
    trace_ids = tuple(json.loads(row["trace_ids_json"] or "[]"))
    return Episode(
        id=row["id"],
        session_id=row["session_id"],
        started_at=int(row["started_at"]),
        status=row["status"],
        ended_at=row["ended_at"],
        trace_ids=trace_ids,
        r_task=row["r_task"],
        close_reason=meta.get("close_reason"),
        topic_state=meta.get("topic_state"),
        turn_count=int(meta.get("turn_count", len(trace_ids))),
        preview=(meta.get("initial_user_text") or "")[:160] or None,
        owner=owner_of(dict(row)),
    )


def session_from_row(row: sqlite3.Row) -> Session:
    return Session(
        id=row["id"],
        agent=row["agent"],
        started_at=int(row["started_at"]),
        last_seen_at=int(row["last_seen_at"]),
        meta=json.loads(row["meta_json"] or "{}"),
        owner=owner_of(dict(row)),
    )
