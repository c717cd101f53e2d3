"""Workspace memory tools: defined once in the host kit (``stratamem.contract.hostkit.workspace_tools``)
and dispatched over the in-process ``WorkspaceMemory`` here or the ``RemoteWorkspace`` client there."""

from stratamem.contract.hostkit.workspace_tools import (
    TOOL_DEFINITIONS,
    dispatch_tool,
    dispatch_tool_async,
    validate_tool_arguments,
)

__all__ = ["TOOL_DEFINITIONS", "dispatch_tool", "dispatch_tool_async", "validate_tool_arguments"]
