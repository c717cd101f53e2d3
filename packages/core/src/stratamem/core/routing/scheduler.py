"""Injection scheduler of the composite turn start: which tiers to recall for this turn, or skip (§5.7.1)."""

from __future__ import annotations

from dataclasses import dataclass

from stratamem.core.routing.intent import Intent
from stratamem.core.routing.relation import Relation

ALL_TIERS: tuple[int, ...] = (1, 2, 3)


@dataclass(frozen=True, slots=True)
class Injection:
    tiers: tuple[int, ...]
    skip: bool
    reason: str


def schedule_injection(
    intent: Intent, relation: Relation | None = None, profile: str = "default"
) -> Injection:
    """Rules in order: chitchat, meta, memory probe, relation, unknown intent, task."""
    if intent.kind == "chitchat":
        if intent.confidence >= 0.6:
            return Injection((), True, "CHITCHAT")
        return Injection(ALL_TIERS, False, "UNKNOWN_SAFE")
    if intent.kind == "meta":
        return Injection((), True, "META")
    if intent.kind == "memory_probe":
        tiers = (2,) if profile == "personal_fact" else intent.tiers
        return Injection(tiers, False, "MEMORY_PROBE")
    if relation is not None and relation.kind == "new_task":
        return Injection(intent.tiers or ALL_TIERS, False, "NEW_TASK")
    if relation is not None and relation.kind in ("revision", "follow_up", "unknown"):
        return Injection(intent.tiers or ALL_TIERS, False, "FOLLOW_UP")
    if intent.kind == "unknown":
        return Injection(ALL_TIERS, False, "UNKNOWN_SAFE")
    return Injection(intent.tiers or ALL_TIERS, False, "TASK")
