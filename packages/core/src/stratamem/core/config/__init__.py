"""Configuration: one defaults table in code, ``config.yaml`` in the home merged over it."""

from stratamem.core.config.defaults import DEFAULTS, defaults
from stratamem.core.config.loader import (
    CONFIG_FILE,
    deep_merge,
    ensure_config_file,
    get_dotted,
    load_config,
    patch_config_file,
)

__all__ = [
    "CONFIG_FILE",
    "DEFAULTS",
    "deep_merge",
    "defaults",
    "ensure_config_file",
    "get_dotted",
    "load_config",
    "patch_config_file",
]
