"""The viewer: an HTTP + SSE surface and a built web app served by ``stratamem serve`` over its core.

Loopback by default on the host's port; ``stratamem open`` prints the running viewer's URL.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stratamem.core.viewer.server import ViewerServer

# lazy (PEP 562): registering the built-in plugins, or a thin client, must not load what
# these modules import (numpy, LanceDB, pyarrow, onnxruntime)
_LAZY: dict[str, str] = {
    "ViewerServer": "stratamem.core.viewer.server",
}

__all__ = ["ViewerServer"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
