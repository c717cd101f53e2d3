"""Stratamem core: the agent-agnostic memory engine (never imports an adapter)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from stratamem.core.blocking import BlockingCore
    from stratamem.core.local import LocalCore, open_core, open_local_core

__all__ = ["BlockingCore", "LocalCore", "__version__", "open_core", "open_local_core"]


def __getattr__(name: str) -> Any:
    # lazy: importing stratamem.core (e.g. for the CLI or plugins) must not load LanceDB
    if name in ("LocalCore", "open_core", "open_local_core"):
        from stratamem.core import local

        return getattr(local, name)
    if name == "BlockingCore":
        from stratamem.core.blocking import BlockingCore

        return BlockingCore
    raise AttributeError(name)
