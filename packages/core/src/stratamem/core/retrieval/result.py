"""One retrieval's result: a snippet per ranked hit, the prefer/avoid guidance and the rendered
context packet, with the hits' ownership and score details (split from ``engine.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from stratamem.contract.dtos import Ownership, RetrievalHit, RetrievalResult, TierLatency
from stratamem.core.ids import new_id
from stratamem.core.retrieval.guidance import collect_guidance
from stratamem.core.retrieval.rank import Ranked
from stratamem.core.retrieval.render import (
    Snippet,
    episode_snippet,
    experience_snippet,
    render_packet,
    skill_snippet,
    trace_snippet,
    world_model_snippet,
)

if TYPE_CHECKING:
    from stratamem.core.retrieval.engine import _Run


def snippet(run: _Run, it: Ranked) -> Snippet:
    row, score = it.cand.row, it.score
    kind = it.cand.ref_kind
    if kind == "skill":
        return skill_snippet(
            row, score, str(run.s("skill_injection_mode")), int(run.s("skill_summary_chars"))
        )
    if kind == "episode":
        return episode_snippet(
            it.cand.ref_id,
            str(row.get("summary") or ""),
            row.get("ts"),
            score,
            run.ctx.tz_offset_minutes,
        )
    if kind == "experience":
        return experience_snippet(row, score)
    if kind == "world_model":
        return world_model_snippet(row, score)
    return trace_snippet(row, score, run.ctx.tz_offset_minutes)


def guidance(
    run: _Run, ranked: Sequence[Ranked], linked: Sequence[Mapping[str, Any]] = ()
) -> tuple[list[str], list[str]]:
    if not run.plan.guidance:
        return [], []
    sources = [it.cand.row for it in ranked if it.cand.ref_kind in ("skill", "experience")]
    return collect_guidance([*sources, *linked])


def build_result(
    run: _Run, ranked: list[Ranked], linked: Sequence[Mapping[str, Any]] = ()
) -> RetrievalResult:
    snippets = [snippet(run, it) for it in ranked]
    prefer, avoid = guidance(run, ranked, linked)
    text = render_packet(run.query.reason, snippets, prefer, avoid)
    hits = []
    for it, sn in zip(ranked, snippets, strict=True):
        row = it.cand.row
        hits.append(
            RetrievalHit(
                tier=it.cand.tier,
                ref_id=it.cand.ref_id,
                ref_kind=it.cand.ref_kind,
                score=round(it.score, 6),
                snippet=sn.body,
                owner=Ownership(
                    owner_agent_kind=row.get("owner_agent_kind") or "unknown",
                    owner_profile_id=row.get("owner_profile_id") or "default",
                    owner_workspace_id=row.get("owner_workspace_id"),
                ),
                share_scope=row.get("share_scope"),
                source_trace_id=row.get("source_trace_id"),
                score_details=it.details(run.profile, float(run.s("mmr_lambda"))),
            )
        )
    return RetrievalResult(
        query=run.query,
        hits=tuple(hits),
        injected_context=text,
        tier_latency_ms=TierLatency(
            tier1=round(run.latency[1], 3),
            tier2=round(run.latency[2], 3),
            tier3=round(run.latency[3], 3),
        ),
        cut_off=run.dl.cut_off,
        packet_id=new_id("pk") if hits else f"empty-{run.now}",
    )
