"""Stratamem core: the agent-agnostic memory engine (never imports an adapter).

Public names: ``open_core``, ``LocalCore``, ``BlockingCore``, ``open_local_core`` and ``hookimpl``, the
marker plugins decorate their hook implementations with (``from stratamem.core import hookimpl``). Each is
loaded on first use, so importing this package for a plugin's marker loads neither LanceDB nor the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stratamem.core import deferred_imports

__version__ = "0.1.0"

deferred_imports.install()  # before any module of the engine imports LanceDB

if TYPE_CHECKING:
    from stratamem.core.blocking import BlockingCore
    from stratamem.core.engine.assemble import open_local_core
    from stratamem.core.hookspecs import hookimpl
    from stratamem.core.local import LocalCore
    from stratamem.core.opening import open_core

__all__ = ["BlockingCore", "LocalCore", "__version__", "hookimpl", "open_core", "open_local_core"]


def __getattr__(name: str) -> Any:
    # lazy: importing stratamem.core (e.g. for the CLI or plugins) must not load LanceDB
    if name == "hookimpl":
        from stratamem.core.hookspecs import hookimpl

        return hookimpl
    if name == "LocalCore":
        from stratamem.core.local import LocalCore

        return LocalCore
    if name == "open_core":
        from stratamem.core.opening import open_core

        return open_core
    if name == "open_local_core":
        from stratamem.core.engine.assemble import open_local_core

        return open_local_core
    if name == "BlockingCore":
        from stratamem.core.blocking import BlockingCore

        return BlockingCore
    raise AttributeError(name)
