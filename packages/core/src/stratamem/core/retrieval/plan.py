"""Retrieval plans per reason (memos-core §5.7.1): tiers, per-tier caps, total limit, low-value rows."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from stratamem.contract.dtos import TopK
from stratamem.core.retrieval.settings import setting


@dataclass(frozen=True, slots=True)
class Plan:
    tiers: tuple[int, ...]
    caps: dict[int, int]
    limit: int
    include_low_value: bool
    episodes: bool  # tier-2 episode roll-ups
    experiences: bool  # tier-2 feedback-derived policies
    guidance: bool  # decision guidance lines


def make_plan(
    reason: str,
    *,
    lightweight: bool,
    config: Mapping[str, Any] | None,
    top_k: TopK | None = None,
    tiers: Sequence[int] | None = None,
    profile: str = "default",
) -> Plan:
    caps = {
        1: int(setting(config, "tier1_top_k")),
        2: int(setting(config, "tier2_top_k")),
        3: int(setting(config, "tier3_top_k")),
    }
    if top_k is not None:
        for tier, value in ((1, top_k.tier1), (2, top_k.tier2), (3, top_k.tier3)):
            if value is not None:
                caps[tier] = max(0, int(value))
    low = bool(setting(config, "include_low_value"))
    base: tuple[int, ...]
    if reason == "tool_driven":
        base, limit = ((2,) if lightweight else (2, 3)), caps[2]
    elif reason == "skill_invoke":
        base, limit, low = (1, 2), caps[1] + 2, False
    elif reason == "sub_agent":
        base, limit, low = (2, 3), caps[2] + caps[3], False
    elif reason == "decision_repair":
        base, limit, low = (1, 2), caps[1] + caps[2], True
    else:  # turn_start
        base = (1, 2, 3)
        limit = sum(caps.values())
    chosen = tuple(t for t in base if (tiers is None or t in tiers) and caps[t] > 0)
    if reason == "turn_start":
        limit = sum(caps[t] for t in chosen)
    full = not lightweight
    return Plan(
        tiers=chosen,
        caps=caps,
        limit=max(0, limit),
        include_low_value=low,
        episodes=full,
        experiences=full and profile != "personal_fact",
        guidance=full and profile != "personal_fact",
    )
