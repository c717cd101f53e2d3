"""Workspace memory over OpenClaw's own workspace, in place: ``<workspace>/MEMORY.md``,
``DREAMS.md`` and ``memory/YYYY-MM-DD.md`` through the core's backends (the ``openclaw`` layout),
the recall store as tools, and the ``### Recalled Context`` section for the turn.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from stratamem.contract.hostkit.log import get_logger
from stratamem.core.workspace import TOOL_DEFINITIONS, WorkspaceMemory, dispatch_tool
from stratamem.core.workspace.layout import OPENCLAW_LAYOUT

log = get_logger("openclaw.workspace")

#: OpenClaw's bundled memory-core owns ``memory_search``/``memory_get``; ours carry a prefix
TOOL_PREFIX = "workspace_"


def _describe(text: str) -> str:
    """The core's wording, told where the files are in an OpenClaw workspace."""
    return (
        text.replace("YYYY-MM-DD.md", OPENCLAW_LAYOUT.relpath("YYYY-MM-DD.md"))
        .replace("the project's", "the workspace's")
        .replace("project", "workspace")
    )


def tool_definitions() -> list[dict[str, Any]]:
    """``[{name, description, parameters}]`` with the OpenClaw-side (prefixed) names."""
    out = []
    for entry in TOOL_DEFINITIONS:
        fn = entry["function"]
        out.append(
            {
                "name": TOOL_PREFIX + fn["name"],
                "description": _describe(fn["description"]),
                "parameters": fn["parameters"],
            }
        )
    return out


def tool_names() -> list[str]:
    return [t["name"] for t in tool_definitions()]


class OpenClawWorkspace:
    """Lazily opened ``WorkspaceMemory`` (``openclaw`` layout) in the core's home: the index and
    recall store live in the home, the files stay OpenClaw's. Every call runs off the event loop."""

    def __init__(self, home: Path | None) -> None:
        self.home = home
        self._memory: WorkspaceMemory | None = None

    @property
    def memory(self) -> WorkspaceMemory:
        if self._memory is None:
            self._memory = WorkspaceMemory(self.home, layout=OPENCLAW_LAYOUT)
        return self._memory

    async def tool(self, workspace_dir: str, name: str, arguments: Any) -> dict[str, Any]:
        """``{"ok": …}`` from the Fusion dispatcher; errors stay typed in the answer."""
        bare = name[len(TOOL_PREFIX) :] if name.startswith(TOOL_PREFIX) else name
        if not workspace_dir:
            return {"ok": False, "error": {"code": "invalid_argument", "message": "no workspace"}}
        return await asyncio.to_thread(dispatch_tool, self.memory, workspace_dir, bare, arguments)

    async def recalled_section(self, workspace_dir: str, query: str, timeout_s: float) -> str:
        """The ≤ 800-byte ``### Recalled Context`` section for ``query``, or ``""`` (fail-open)."""
        if not workspace_dir or not query.strip() or timeout_s <= 0:
            return ""
        try:
            return await asyncio.wait_for(
                asyncio.to_thread(self.memory.recalled_context, workspace_dir, "", query),
                timeout_s,
            )
        except Exception as exc:
            log.warning("recalled_context_failed", error=str(exc))
            return ""

    def close(self, wait: bool = False) -> None:
        """Drop pending index refreshes (``wait=True`` lets them finish first)."""
        if self._memory is not None:
            self._memory.close(wait=wait)


def answer_text(result: dict[str, Any]) -> str:
    return json.dumps(
        result.get("result") if result.get("ok") else result, default=str, ensure_ascii=False
    )
