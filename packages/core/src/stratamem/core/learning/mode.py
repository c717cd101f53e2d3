"""Which memory mode runs (issue 6 item 11): full when ``config.yaml`` (or an override) configures an
LLM provider, lightweight otherwise; an explicit ``algorithm.lightweight_memory.enabled`` wins.

A host-lent LLM alone (provider ``host``) does not switch modes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

NO_PROVIDER = frozenset({"", "none", "host"})


def resolve_mode(user: Mapping[str, Any], effective: Mapping[str, Any]) -> tuple[bool, str]:
    """``(lightweight, reason)``. ``user`` is what config.yaml and overrides set (before defaults);
    the reason does not repeat the mode (``stratamem health`` prints ``mode: <mode> (<reason>)``)."""
    algo = user.get("algorithm")
    lw = algo.get("lightweight_memory") if isinstance(algo, Mapping) else None
    if isinstance(lw, Mapping) and isinstance(lw.get("enabled"), bool):
        on = bool(lw["enabled"])
        return on, f"algorithm.lightweight_memory.enabled={'true' if on else 'false'} in config"
    provider = str((effective.get("llm") or {}).get("provider") or "").strip()
    if provider not in NO_PROVIDER:
        return False, f"llm.provider={provider} configured"
    if provider == "host":
        return True, "llm.provider=host: a host-lent LLM alone does not switch modes"
    return True, "no LLM provider configured"
