"""Workspace memory (the Fusion memory backend contract): backends, layered files, recall, insights.

``WorkspaceMemory`` (service.py) is the API the gRPC service, the CLI and the tools call; a
``WorkspaceLayout`` (layout.py) says where a root keeps its files (Stratamem's or a host's).
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stratamem.core.workspace.errors import MemoryBackendError, MemoryBackendErrorCode
    from stratamem.core.workspace.insight_scheduler import InsightScheduler
    from stratamem.core.workspace.layout import (
        OPENCLAW_LAYOUT,
        STRATAMEM_LAYOUT,
        WorkspaceLayout,
        get_layout,
    )
    from stratamem.core.workspace.registry import (
        DEFAULT_MEMORY_BACKEND,
        get_memory_backend,
        list_memory_backend_types,
        register_memory_backend,
        resolve_memory_backend,
    )
    from stratamem.core.workspace.service import WorkspaceMemory
    from stratamem.core.workspace.tools import TOOL_DEFINITIONS, dispatch_tool

# lazy (PEP 562): registering the built-in plugins, or a thin client, must not load what
# these modules import (numpy, LanceDB, pyarrow, onnxruntime)
_LAZY: dict[str, str] = {
    "MemoryBackendError": "stratamem.core.workspace.errors",
    "MemoryBackendErrorCode": "stratamem.core.workspace.errors",
    "InsightScheduler": "stratamem.core.workspace.insight_scheduler",
    "OPENCLAW_LAYOUT": "stratamem.core.workspace.layout",
    "STRATAMEM_LAYOUT": "stratamem.core.workspace.layout",
    "WorkspaceLayout": "stratamem.core.workspace.layout",
    "get_layout": "stratamem.core.workspace.layout",
    "DEFAULT_MEMORY_BACKEND": "stratamem.core.workspace.registry",
    "get_memory_backend": "stratamem.core.workspace.registry",
    "list_memory_backend_types": "stratamem.core.workspace.registry",
    "register_memory_backend": "stratamem.core.workspace.registry",
    "resolve_memory_backend": "stratamem.core.workspace.registry",
    "WorkspaceMemory": "stratamem.core.workspace.service",
    "TOOL_DEFINITIONS": "stratamem.core.workspace.tools",
    "dispatch_tool": "stratamem.core.workspace.tools",
}

__all__ = [
    "DEFAULT_MEMORY_BACKEND",
    "OPENCLAW_LAYOUT",
    "STRATAMEM_LAYOUT",
    "TOOL_DEFINITIONS",
    "InsightScheduler",
    "MemoryBackendError",
    "MemoryBackendErrorCode",
    "WorkspaceLayout",
    "WorkspaceMemory",
    "dispatch_tool",
    "get_layout",
    "get_memory_backend",
    "list_memory_backend_types",
    "register_memory_backend",
    "resolve_memory_backend",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
