"""Project settings in ``<root>/.stratamem/settings.json``: defaults, validation, null-as-delete.

Turning memory on bootstraps the layered files (non-fatal); unknown backend types persist as given.
Every layout keeps its settings here, a host's workspace included.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from stratamem.core.telemetry import get_logger
from stratamem.core.workspace.atomic import atomic_write_bytes
from stratamem.core.workspace.cron import parse_cron
from stratamem.core.workspace.errors import MemoryBackendError, invalid
from stratamem.core.workspace.layout import STRATAMEM_LAYOUT, WorkspaceLayout
from stratamem.core.workspace.paths import SETTINGS_PATH

DEFAULT_INSIGHT_SCHEDULE = "0 2 * * *"
DEFAULT_MIN_INTERVAL_MS = 86_400_000

DEFAULT_PROJECT_SETTINGS: dict[str, Any] = {
    "memory_enabled": True,
    "memory_backend_type": "lancedb",
    "insight_extraction_enabled": False,
    "insight_extraction_schedule": DEFAULT_INSIGHT_SCHEDULE,
    "insight_extraction_min_interval_ms": DEFAULT_MIN_INTERVAL_MS,
}


def _log() -> Any:
    return get_logger("workspace.settings")  # resolved per call: honours logging configured later


def settings_path(root: Path) -> Path:
    return root / SETTINGS_PATH


def load_stored_settings(root: Path) -> dict[str, Any]:
    """What the file holds (no defaults); a missing or unreadable file is ``{}``."""
    path = settings_path(root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        _log().warning(
            "project settings unreadable, using defaults", path=str(path), error=str(exc)
        )
        return {}
    return data if isinstance(data, dict) else {}


def effective_settings(stored: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults overlaid with the stored values (``None`` means unset)."""
    merged = dict(DEFAULT_PROJECT_SETTINGS)
    for key, value in (stored or {}).items():
        if value is not None:
            merged[key] = value
    return merged


def load_settings(root: Path) -> dict[str, Any]:
    return effective_settings(load_stored_settings(root))


def _validate(key: str, value: Any) -> None:
    if value is None:
        return
    if key in ("memory_enabled", "insight_extraction_enabled"):
        if not isinstance(value, bool):
            raise invalid(f"{key} must be a boolean", key=key)
    elif key == "memory_backend_type":
        if not isinstance(value, str) or not value.strip():
            raise invalid("memory_backend_type must be a non-empty string", key=key)
    elif key == "insight_extraction_schedule":
        parse_cron(value)
    elif key == "insight_extraction_min_interval_ms" and (
        isinstance(value, bool) or not isinstance(value, int) or value < 0
    ):
        raise invalid(f"{key} must be a non-negative integer", key=key)


def update_settings(
    root: Path, patch: Mapping[str, Any], layout: WorkspaceLayout = STRATAMEM_LAYOUT
) -> dict[str, Any]:
    """Merge ``patch`` into the stored settings (``None`` deletes a key) and return the effective ones.

    Everything is validated before anything is written. Turning ``memory_enabled`` back on
    bootstraps the layered files; a bootstrap failure is logged, never raised.
    """
    if not isinstance(patch, Mapping):
        raise invalid("settings patch must be an object")
    for key, value in patch.items():
        if not isinstance(key, str):
            raise invalid("settings keys must be strings")
        _validate(key, value)
    previous = load_stored_settings(root)
    stored = dict(previous)
    for key, value in patch.items():
        if value is None:
            stored.pop(key, None)
        else:
            stored[key] = value
    data = (json.dumps(stored, indent=2, sort_keys=True) + "\n").encode("utf-8")
    try:
        atomic_write_bytes(settings_path(root), data)
    except OSError as exc:
        raise MemoryBackendError("WRITE_FAILED", "settings", str(exc)) from exc
    before, after = effective_settings(previous), effective_settings(stored)
    if after["memory_enabled"] and not before["memory_enabled"]:
        bootstrap_memory(root, after, layout)
    return after


def bootstrap_memory(
    root: Path,
    settings: Mapping[str, Any] | None = None,
    layout: WorkspaceLayout = STRATAMEM_LAYOUT,
) -> list[str]:
    """Project init: create the layered files when memory is enabled. Never raises."""
    effective = effective_settings(settings if settings is not None else load_stored_settings(root))
    if effective["memory_enabled"] is False:
        return []
    from stratamem.core.workspace.layered import ensure_memory_files

    try:
        return ensure_memory_files(root, layout)
    except Exception as exc:
        _log().warning("memory bootstrap failed (non-fatal)", root=str(root), error=str(exc))
        return []
