"""The topic-end reflect pass (memos-core §5.2): a reflection and an α for every step of an episode.

Adapter-given or regex-extracted reflections first; the LLM (batched ≤ ``batch_threshold`` steps
per call) synthesises missing ones and judges α; any failure falls back to the no-LLM α rule.
"""

from __future__ import annotations

from typing import Any

from stratamem.core.learning import prompts
from stratamem.core.learning.context import LearningContext
from stratamem.core.learning.reflection import extract_reflection, fallback_alpha, judged_alpha
from stratamem.core.learning.signature import tool_names


def _step_payload(i: int, row: dict[str, Any], reflection: str | None) -> dict[str, Any]:
    return {
        "index": i,
        "user": str(row.get("user_text") or "")[:500],
        "agent": str(row.get("agent_text") or "")[:500],
        "tools": tool_names(row)[:3],
        "reflection": reflection or "",
    }


async def reflect_episode(ctx: LearningContext, traces: list[dict[str, Any]]) -> list[float]:
    """Set ``reflection``/``alpha`` on each trace row (in place and in storage); returns the αs."""
    reflections = [
        r.get("reflection") or extract_reflection(str(r.get("agent_text") or "")) for r in traces
    ]
    alphas = [fallback_alpha(x) for x in reflections]
    use_llm = ctx.has_llm and bool(ctx.cfg("capture", "alpha_scoring"))
    synth = bool(ctx.cfg("capture", "synth_reflections"))
    size = max(1, int(ctx.cfg("capture", "batch_threshold")))
    budget = int(ctx.cfg("capture", "max_reflect_llm_calls"))
    if use_llm:
        first_user = next((str(r.get("user_text")) for r in traces if r.get("user_text")), "")
        task_ctx = {
            "first_user": first_user[:500],
            "final_assistant": str(traces[-1].get("agent_text") or "")[:500] if traces else "",
            "tools": sorted({t for r in traces for t in tool_names(r)})[:12],
        }
        for start in range(0, len(traces), size):
            if budget <= 0:
                break
            budget -= 1
            chunk = list(range(start, min(len(traces), start + size)))
            answer = await ctx.ask(
                "capture.reflect",
                {
                    "task_context": task_ctx,
                    "synthesize_missing": synth,
                    "steps": [_step_payload(i, traces[i], reflections[i]) for i in chunk],
                },
                prompts.valid_reflect,
            )
            if answer is None:
                continue  # this chunk keeps the deterministic α
            for item in answer["steps"]:
                i = int(item["index"])
                if i not in chunk:
                    continue
                text = item.get("reflection")
                if (
                    not reflections[i]
                    and synth
                    and isinstance(text, str)
                    and len(text.strip()) >= 10
                ):
                    reflections[i] = text.strip()[:1500]
                alphas[i] = judged_alpha(
                    float(item["alpha"]), bool(item.get("usable", True)), reflections[i]
                )
    for row, refl, a in zip(traces, reflections, alphas, strict=True):
        changed: dict[str, Any] = {"alpha": a}
        if refl and refl != row.get("reflection"):
            changed["reflection"] = refl
        row.update(changed)
        await ctx.update("traces", row["id"], changed)
    return alphas
