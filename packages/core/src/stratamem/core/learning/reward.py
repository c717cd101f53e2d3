"""Reward (memos-core §5.3): score an episode (LLM rubric or explicit-feedback heuristic), then
back-propagate V over its traces and set their priority.

Unlike the reference, an episode scored with no signal at all (no LLM score, no feedback) leaves its
traces' values and priorities untouched, so unscored traces stay retrievable (§9).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stratamem.core.ids import now_ms
from stratamem.core.learning import prompts
from stratamem.core.learning.backprop import backpropagate, clamp, priority
from stratamem.core.learning.context import LearningContext
from stratamem.core.learning.triviality import skip_reason

WEIGHTS = {"goal_achievement": 0.45, "process_quality": 0.30, "user_satisfaction": 0.25}


@dataclass(frozen=True, slots=True)
class RewardOutcome:
    episode_id: str
    reward: float
    source: str  # llm | feedback | none
    trace_ids: tuple[str, ...]
    values: tuple[float, ...]


def rubric(answer: dict[str, Any]) -> float:
    return clamp(sum(w * float(answer[k]) for k, w in WEIGHTS.items()))


def heuristic_reward(feedback: Sequence[dict[str, Any]]) -> float | None:
    """Explicit rows (else the first row): Σ(±m)/Σm over non-neutral rows; ``None`` = no signal."""
    if not feedback:
        return None
    explicit = [f for f in feedback if f["channel"] == "explicit"]
    rows = explicit or [feedback[0]]
    scored = [f for f in rows if f["polarity"] != "neutral" and float(f["magnitude"]) > 0]
    den = sum(float(f["magnitude"]) for f in scored)
    if den <= 0:
        return None
    num = sum(float(f["magnitude"]) * (1 if f["polarity"] == "positive" else -1) for f in scored)
    return clamp(num / den)


def _summary(turns: Sequence[Any], cap: int) -> str:
    text = "\n".join(f"{t['role']}: {t['content']}" for t in turns)
    if len(text) <= cap:
        return text
    head = int(cap * 0.6)
    return text[:head] + "\n…\n" + text[-(cap - head) :]


async def episode_feedback(
    ctx: LearningContext, episode_id: str, trace_ids: Sequence[str]
) -> list[dict[str, Any]]:
    marks = ",".join("?" for _ in trace_ids) or "''"
    rows = await ctx.query(
        f"SELECT * FROM feedback WHERE episode_id=? OR trace_id IN ({marks}) ORDER BY ts",
        (episode_id, *trace_ids),
    )
    return [dict(r) for r in rows]


async def score_episode(
    ctx: LearningContext, episode_id: str, trigger: str
) -> RewardOutcome | None:
    """``None`` when the episode is skipped (trivial, empty, or no signal to learn from)."""
    await ctx.applied()
    turns = await ctx.query(
        "SELECT role, content, ts FROM episode_turns WHERE episode_id=? ORDER BY id", (episode_id,)
    )
    traces = await ctx.episode_traces(episode_id)
    if not traces:
        return None
    reason = skip_reason([dict(t) for t in turns], ctx.config.get("reward") or {})
    if reason is not None:
        await ctx.patch_episode_meta(episode_id, {"reward": {"skipped": True, "reason": reason}})
        return None
    ids = [str(t["id"]) for t in traces]
    feedback = await episode_feedback(ctx, episode_id, ids)
    r: float | None = None
    source = "none"
    if ctx.has_llm and bool(ctx.cfg("reward", "llm_scoring")):
        answer = await ctx.ask(
            "reward.score",
            {
                "task": _summary(turns, int(ctx.cfg("reward", "summary_max_chars"))),
                "feedback": [str(f.get("rationale") or f["polarity"])[:800] for f in feedback[:8]],
            },
            prompts.valid_reward,
        )
        if answer is not None:
            r, source = rubric(answer), "llm"
    if r is None:
        r = heuristic_reward(feedback)
        source = "feedback" if r is not None else "none"
    if r is None:
        r = 0.0
        if bool(ctx.cfg("learning", "keep_priority_without_signal")):
            await ctx.patch_episode_meta(
                episode_id, {"reward": {"skipped": True, "reason": "no_signal", "trigger": trigger}}
            )
            return None
    alphas = [float(t.get("alpha") or 0.0) for t in traces]
    values = backpropagate(r, alphas, float(ctx.cfg("reward", "gamma")))
    now = now_ms()
    half = float(ctx.cfg("reward", "decay_half_life_days"))
    for t, v in zip(traces, values, strict=True):
        prio = priority(v, int(t.get("ts") or now), now, half)
        t.update(value=v, r_human=r, priority=prio)
        await ctx.update("traces", t["id"], {"value": v, "r_human": r, "priority": prio})
    meta = {
        "reward": {
            "r": r,
            "source": source,
            "trigger": trigger,
            "trace_count": len(ids),
            "trace_ids": ids,
            "scored_at": now,
        }
    }

    def persist(c: Any) -> None:
        c.execute("UPDATE episodes SET r_task=? WHERE id=?", (r, episode_id))
        row = c.execute("SELECT meta_json FROM episodes WHERE id=?", (episode_id,)).fetchone()
        m = json.loads(row[0] or "{}") if row else {}
        m.update(meta)
        c.execute("UPDATE episodes SET meta_json=? WHERE id=?", (json.dumps(m), episode_id))

    await ctx.sql(persist)
    ctx.emit(
        "reward.computed",
        {"episode_id": episode_id, "reward": r, "source": source, "trigger": trigger},
        owner=traces[0],
    )
    ctx.emit(
        "trace.value_updated",
        {"episode_id": episode_id, "trace_ids": ids, "values": values},
        owner=traces[0],
    )
    return RewardOutcome(episode_id, r, source, tuple(ids), tuple(values))
