"""Separate LLM roles (memos-core §6.2): ``l3_llm`` drives L3 abstraction and ``skill_evolver`` skill
crystallisation; a role whose ``provider`` is blank uses the main ``llm``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stratamem.contract.errors import StratamemError
from stratamem.core.llm.base import LlmProvider
from stratamem.core.llm.loader import NO_LLM, load_llm
from stratamem.core.telemetry import get_logger

_log = get_logger("llm")

#: config section of each role -> the learning tasks it answers
ROLE_TASKS: dict[str, tuple[str, ...]] = {
    "l3_llm": ("l3.abstract",),
    "skill_evolver": ("skill.crystallize",),
}
#: main-llm keys a role section inherits when it does not set them
INHERITED = ("max_retries", "fallback_to_host")


def load_role_llm(
    config: Mapping[str, Any], role: str, main: LlmProvider | None
) -> LlmProvider | None:
    """The provider of ``role`` (a config section name), or ``main`` when its provider is blank."""
    section = config.get(role)
    sect: Mapping[str, Any] = section if isinstance(section, Mapping) else {}
    if str(sect.get("provider") or "").strip() in NO_LLM:
        return main
    base = config.get("llm")
    inherited = {k: base[k] for k in INHERITED if isinstance(base, Mapping) and k in base}
    merged: dict[str, Any] = {**inherited, **dict(sect)}
    try:
        return load_llm(merged)
    except StratamemError:
        raise  # a bad role section fails the open like a bad main llm section
    except Exception as exc:  # an optional provider must not keep learning from running
        _log.warning("llm.role_unavailable", role=role, error=str(exc))
        return main


def role_llms(config: Mapping[str, Any], main: LlmProvider | None) -> dict[str, LlmProvider | None]:
    """task name -> provider for every task that has its own role (others use the main LLM)."""
    out: dict[str, LlmProvider | None] = {}
    for role, tasks in ROLE_TASKS.items():
        llm = load_role_llm(config, role, main)
        for task in tasks:
            out[task] = llm
    return out
