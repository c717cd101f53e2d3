"""``/api/config``: the effective config with secrets masked, and validated patches written to config.yaml.

A masked value sent back unchanged keeps the stored secret; unknown keys are refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.config.defaults import DEFAULTS
from stratamem.core.config.loader import CONFIG_FILE, load_config, patch_config_file
from stratamem.core.telemetry.redact import Redactor

MASK = "••••"
_secrets = Redactor()


def is_secret(key: str) -> bool:
    return _secrets.is_secret_key(key) and key != "redact_keys"


def mask(cfg: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if is_secret(str(key)) and value not in (None, "", {}, []):
            out[key] = MASK
        elif isinstance(value, Mapping):
            out[key] = mask(value)
        else:
            out[key] = value
    return out


def _strip_masks(patch: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in patch.items():
        if value == MASK:
            continue
        out[key] = _strip_masks(value) if isinstance(value, Mapping) else value
    return {k: v for k, v in out.items() if v != {} or not isinstance(patch.get(k), Mapping)}


def _check_keys(patch: Mapping[str, Any], ref: Mapping[str, Any], prefix: str = "") -> None:
    for key, value in patch.items():
        path = f"{prefix}{key}"
        if not isinstance(key, str) or key not in ref:
            raise StratamemError(
                ErrorCode.CONFIG_INVALID, f"config key {path!r}: unknown key", {"key": path}
            )
        default = ref[key]
        if isinstance(value, Mapping) and isinstance(default, dict) and default:
            _check_keys(value, default, path + ".")


def read(home: Path) -> dict[str, Any]:
    cfg = load_config(home)
    return {"path": str(home / CONFIG_FILE), "config": mask(cfg)}


def patch(home: Path, body: Mapping[str, Any]) -> dict[str, Any]:
    """Validate first (nothing is written on error), then write comment-preservingly."""
    if not body:
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, "the patch is empty")
    _check_keys(body, DEFAULTS)
    cleaned = _strip_masks(body)
    cfg = patch_config_file(home, cleaned) if cleaned else load_config(home)
    return {
        "path": str(home / CONFIG_FILE),
        "config": mask(cfg),
        "restart_required": bool(cleaned),
    }
