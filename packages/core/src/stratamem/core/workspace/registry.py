"""Function-based backend registry and resolution (seed §3.4–§3.5, §4.3).

Built-ins arrive through the ``register_memory_backends`` hook exactly like third-party backends.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from stratamem.core.telemetry import get_logger
from stratamem.core.workspace.errors import invalid
from stratamem.core.workspace.models import MemoryBackend

DEFAULT_MEMORY_BACKEND = "lancedb"
MEMORY_BACKEND_SETTINGS_KEY = "memory_backend_type"

_backends: dict[str, MemoryBackend] = {}
_loaded = False
_lock = threading.RLock()


def _log() -> Any:
    return get_logger("workspace.registry")  # resolved per call: honours logging configured later


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        _loaded = True
        from stratamem.core.plugins import collect

        for args in collect("register_memory_backends"):
            try:
                register_memory_backend(args[0])
            except Exception as exc:  # a broken plugin must not take the built-ins down
                _log().warning("memory backend plugin rejected", error=str(exc))


def register_memory_backend(backend: Any) -> None:
    """Register (or replace) a backend under its ``type``; it must expose the contract's members."""
    for attr in ("type", "name", "capabilities", "read", "write"):
        if not hasattr(backend, attr):
            raise invalid("memory backend lacks a required member", member=attr)
    kind = backend.type
    if not isinstance(kind, str) or not kind:
        raise invalid("memory backend type must be a non-empty string")
    with _lock:
        _backends[kind] = backend


def get_memory_backend(kind: str) -> MemoryBackend | None:
    _ensure_loaded()
    with _lock:
        return _backends.get(kind)


def list_memory_backend_types() -> list[str]:
    _ensure_loaded()
    with _lock:
        return sorted(_backends)


def unregister_memory_backend(kind: str) -> bool:
    """Remove a backend (tests and plugin reloads); built-ins are re-added only on a fresh process."""
    with _lock:
        return _backends.pop(kind, None) is not None


def resolve_memory_backend(settings: Mapping[str, Any] | None = None) -> MemoryBackend:
    """The configured ``memory_backend_type`` if registered, else the default (``lancedb``)."""
    _ensure_loaded()
    configured = (settings or {}).get(MEMORY_BACKEND_SETTINGS_KEY)
    with _lock:
        if isinstance(configured, str) and configured in _backends:
            return _backends[configured]
        if configured is not None:
            _log().info("unknown memory backend, using default", configured=str(configured))
        backend = _backends.get(DEFAULT_MEMORY_BACKEND)
        if backend is None:  # the default plugin was blocked: the file backend is the last resort
            from stratamem.core.workspace.file_backend import FileMemoryBackend

            backend = _backends.setdefault("file", FileMemoryBackend())
        return backend
