"""Prompts and answer validators of every learning-stage LLM call, one place per task.

Each system prompt starts with ``stratamem-task: <name>`` so logs (and scripted test servers) can
tell the tasks apart; the payload is JSON in the user message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from stratamem.core.llm.base import Message

TASK_MARKER = "stratamem-task: "

INSTRUCTIONS: dict[str, str] = {
    "capture.reflect": (
        "For each agent step, write a short first-person reflection on why the step was taken "
        "(keep a given one) and judge it on faithfulness, causal insight, transferability and "
        'concreteness. Reply JSON {"steps": [{"index": int, "reflection": str, "alpha": 0..1, '
        '"usable": bool}]}.'
    ),
    "reward.score": (
        "Score how well the agent did on the task, using the user's feedback. Reply JSON "
        '{"goal_achievement": -1..1, "process_quality": -1..1, "user_satisfaction": -1..1, '
        '"reason": str}.'
    ),
    "l2.induce": (
        "These high-value steps from different episodes share a situation. Induce one reusable "
        'policy. Reply JSON {"title": str (<=120 chars), "trigger": str, "procedure": str, '
        '"verification": str, "boundary": str, "rationale": str, "caveats": [str], '
        '"confidence": 0..1, "support_trace_ids": [str]}.'
    ),
    "l3.abstract": (
        "Abstract these related policies into a world model of the environment. Reply JSON "
        '{"title": str, "domain_tags": [str], "environment": [{"label", "description"}], '
        '"inference": [{"label", "description"}], "constraints": [{"label", "description"}], '
        '"body": str, "confidence": 0..1, "supersedes_world_ids": [str]}.'
    ),
    "skill.crystallize": (
        "Crystallise this policy and its evidence into a callable skill. Tools must come from the "
        'evidence. Reply JSON {"name": snake_case (<=32), "display_title": str, "summary": str, '
        '"parameters": [str], "preconditions": [str], "steps": [str] (2-6), "examples": [str], '
        '"tools": [str], "decision_guidance": {"preference": [str], "anti_pattern": [str]}, '
        '"tags": [str]}.'
    ),
    "decision.repair": (
        "A tool keeps failing. From what worked (high value) and what failed (low value), write "
        'one line to prefer and one to avoid. Reply JSON {"preference": str, "anti_pattern": str, '
        '"severity": "info"|"warn", "confidence": 0..1}.'
    ),
}


def build(task: str, payload: Mapping[str, Any]) -> list[Message]:
    return [
        {"role": "system", "content": f"{TASK_MARKER}{task}\n{INSTRUCTIONS[task]}"},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False, default=str)},
    ]


def task_of(messages: Any) -> str | None:
    """The task name of a request body's messages (for logs and scripted servers)."""
    for m in messages or ():
        content = m.get("content") if isinstance(m, Mapping) else None
        if isinstance(content, str) and content.startswith(TASK_MARKER):
            return content[len(TASK_MARKER) :].split("\n", 1)[0].strip()
    return None


def _num(x: Any, lo: float, hi: float) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and lo <= float(x) <= hi


def _str_list(x: Any) -> bool:
    return isinstance(x, list) and all(isinstance(i, str) for i in x)


def valid_reflect(d: dict[str, Any]) -> bool:
    steps = d["steps"]
    return isinstance(steps, list) and all(
        isinstance(s, dict) and isinstance(s.get("index"), int) and _num(s.get("alpha"), -1e9, 1e9)
        for s in steps
    )


def valid_reward(d: dict[str, Any]) -> bool:
    return all(
        _num(d[k], -1, 1) for k in ("goal_achievement", "process_quality", "user_satisfaction")
    )


def valid_policy(d: dict[str, Any]) -> bool:
    procedure = d.get("procedure") or d.get("action")
    return (
        isinstance(d["title"], str)
        and bool(d["title"].strip())
        and isinstance(d["trigger"], str)
        and bool(d["trigger"].strip())
        and isinstance(procedure, str)
        and bool(procedure.strip())
    )


def valid_world_model(d: dict[str, Any]) -> bool:
    ok_entries = all(
        isinstance(d.get(k, []), list)
        and all(isinstance(e, dict) and isinstance(e.get("label"), str) for e in d.get(k, []))
        for k in ("environment", "inference", "constraints")
    )
    return isinstance(d["title"], str) and bool(d["title"].strip()) and ok_entries


def valid_skill(d: dict[str, Any]) -> bool:
    steps = d["steps"]
    return (
        isinstance(d["name"], str)
        and bool(d["name"].strip())
        and isinstance(d["summary"], str)
        and _str_list(steps)
        and 2 <= len(steps) <= 6
        and _str_list(d.get("tools", []))
    )


def valid_repair(d: dict[str, Any]) -> bool:
    return isinstance(d["preference"], str) and isinstance(d["anti_pattern"], str)
