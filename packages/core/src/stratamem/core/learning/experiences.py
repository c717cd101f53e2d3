"""Feedback experiences (memos-core §5.9): significant, actionable user feedback becomes a policy
(``source_feedback_ids`` set) that tier-2 "experience" retrieval returns; similar ones merge.
"""

from __future__ import annotations

import json
from typing import Any

from stratamem.core.ids import new_id, now_ms
from stratamem.core.learning.context import LearningContext
from stratamem.core.learning.feedback import FeedbackClass
from stratamem.core.storage.ownership import Scope

#: shapes that say what to do (a bare "that failed" judges, it does not instruct)
ACTIONABLE = frozenset({"preference", "correction", "constraint", "instruction"})
TYPES = {
    "preference": ("preference", "mixed"),
    "correction": ("failure_avoidance", "negative"),
    "constraint": ("constraint", "mixed"),
    "instruction": ("preference", "mixed"),
}


async def feedback_experience(
    ctx: LearningContext, fb: dict[str, Any], fc: FeedbackClass, r_task: float | None
) -> str | None:
    """Policy id created or merged into, or ``None`` when the feedback is not significant/actionable."""
    text = str(fb.get("rationale") or "").strip()
    significance = max(float(fb.get("magnitude") or 0), fc.confidence, abs(r_task or 0.0))
    if not text or fc.shape not in ACTIONABLE:
        return None
    if significance < float(ctx.cfg("feedback", "experience_min_significance")):
        return None
    etype, polarity = TYPES[fc.shape]
    vec = await ctx.embed(text)
    owner = Scope.of_row(fb)
    prefer = (
        [fc.prefer]
        if fc.prefer
        else ([] if fc.shape in ("negative", "correction") else [text[:200]])
    )
    avoid = (
        [fc.avoid] if fc.avoid else ([text[:200]] if fc.shape in ("negative", "correction") else [])
    )
    ts = now_ms()
    if vec is not None:
        try:
            near = await ctx.nearest("policies", "vec", vec, owner, "status <> 'archived'", 5)
        except Exception:
            near = []
        for p, cos in near:
            need = float(ctx.cfg("feedback", "experience_merge_similarity"))
            if p.get("experience_type") != etype:
                need = float(ctx.cfg("feedback", "experience_merge_similarity_cross_type"))
            if cos >= need:
                g = json.loads(p.get("guidance_json") or "{}")
                g["preference"] = list(dict.fromkeys([*(g.get("preference") or []), *prefer]))
                g["anti_pattern"] = list(dict.fromkeys([*(g.get("anti_pattern") or []), *avoid]))
                await ctx.update(
                    "policies",
                    str(p["id"]),
                    {
                        "guidance_json": json.dumps(g),
                        "source_feedback_ids": sorted(
                            {*(p.get("source_feedback_ids") or []), str(fb["id"])}
                        ),
                        "updated_at": ts,
                    },
                )
                ctx.emit(
                    "policy.revised",
                    {
                        "policy_id": p["id"],
                        "gain": p.get("gain"),
                        "support": p.get("support"),
                        "status": p.get("status"),
                    },
                    owner=p,
                )
                return str(p["id"])
    salience = min(1.0, significance)
    title = text.splitlines()[0][:120]
    row = {
        "id": new_id("po"),
        "title": title,
        "trigger": str(fb.get("trigger") or "")[:300],
        "procedure": fc.prefer or text[:500],
        "verification": "",
        "boundary": "",
        "support": 1,
        "gain": max(0.02, salience),
        "status": "active" if salience >= 0.5 else "candidate",
        "experience_type": etype,
        "evidence_polarity": polarity,
        "salience": salience,
        "confidence": fc.confidence,
        "skill_eligible": False,
        "guidance_json": json.dumps({"preference": prefer, "anti_pattern": avoid}),
        "source_episode_ids": [str(fb["episode_id"])] if fb.get("episode_id") else [],
        "source_feedback_ids": [str(fb["id"])],
        "source_trace_ids": [str(fb["trace_id"])] if fb.get("trace_id") else [],
        "created_at": ts,
        "updated_at": ts,
        "edited_at": None,
        "search_text": "\n".join([title, text, *prefer, *avoid]),
        "owner_agent_kind": fb["owner_agent_kind"],
        "owner_profile_id": fb["owner_profile_id"],
        "owner_workspace_id": fb.get("owner_workspace_id"),
        "share_scope": "private",
        "share_target": None,
        "shared_at": None,
        "vec": vec,
    }
    await ctx.upsert("policies", [row])
    ctx.emit(
        "policy.induced",
        {
            "policy_id": row["id"],
            "title": title,
            "signature": "feedback",
            "episode_ids": row["source_episode_ids"],
        },
        owner=row,
    )
    return str(row["id"])
