"""Workspace memory (the Fusion memory backend contract): backends, layered files, recall, insights.

``WorkspaceMemory`` (service.py) is the API the gRPC service, the CLI and the tools call; a
``WorkspaceLayout`` (layout.py) says where a root keeps its files (Stratamem's or a host's).
"""

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
