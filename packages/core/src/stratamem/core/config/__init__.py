"""Configuration: one defaults table in code, ``config.yaml`` in the home merged over it.

``defaults`` and ``settings`` depend on nothing else in the core (telemetry reads its section through
them); the loader logs, so it is imported on first use of its names here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stratamem.core.config.defaults import DEFAULTS, defaults
from stratamem.core.config.settings import Section, UnknownSetting, lookup, section

if TYPE_CHECKING:
    from stratamem.core.config.loader import (
        CONFIG_FILE,
        deep_merge,
        ensure_config_file,
        get_dotted,
        load_config,
        patch_config_file,
    )

_LOADER_NAMES = frozenset(
    {
        "CONFIG_FILE",
        "deep_merge",
        "ensure_config_file",
        "get_dotted",
        "load_config",
        "patch_config_file",
    }
)

__all__ = [
    "CONFIG_FILE",
    "DEFAULTS",
    "Section",
    "UnknownSetting",
    "deep_merge",
    "defaults",
    "ensure_config_file",
    "get_dotted",
    "load_config",
    "lookup",
    "patch_config_file",
    "section",
]


def __getattr__(name: str) -> Any:
    if name in _LOADER_NAMES:
        from stratamem.core.config import loader

        return getattr(loader, name)
    raise AttributeError(name)
