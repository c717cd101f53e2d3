"""Read retrieval settings from the config mapping, falling back to the defaults table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stratamem.core.config.defaults import DEFAULTS
from stratamem.core.config.settings import lookup


def setting(config: Mapping[str, Any] | None, key: str, section: str = "retrieval") -> Any:
    """``config[section][key]`` when present, else the effective default (memos-core §6.2)."""
    return lookup(config, section, key)


def lightweight_of(config: Mapping[str, Any] | None) -> bool:
    algo = (config or {}).get("algorithm") or {}
    lw = algo.get("lightweight_memory") if isinstance(algo, Mapping) else None
    if isinstance(lw, Mapping) and "enabled" in lw:
        return bool(lw["enabled"])
    return bool(DEFAULTS["algorithm"]["lightweight_memory"]["enabled"])
