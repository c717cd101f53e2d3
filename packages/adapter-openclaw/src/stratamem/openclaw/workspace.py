"""Workspace memory over OpenClaw's own workspace, in place: ``<workspace>/MEMORY.md``,
``DREAMS.md`` and ``memory/YYYY-MM-DD.md`` (the ``openclaw`` layout), the recall store as tools, and
the ``### Recalled Context`` section for the turn.

A thin client like every other memory call: the home's service serves the files and the index
(``stratamem.contract.workspace``); the tool table and dispatcher are the host kit's. The service
opens each OpenClaw workspace on first use (``OpenRoot``, the home's owner only).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.log import get_logger
from stratamem.contract.hostkit.workspace_tools import TOOL_DEFINITIONS, dispatch_tool_async

log = get_logger("openclaw.workspace")

#: OpenClaw's bundled memory-core owns ``memory_search``/``memory_get``; ours carry a prefix
TOOL_PREFIX = "workspace_"
#: where OpenClaw keeps its files (the service's ``openclaw`` layout)
LAYOUT = "openclaw"
DAILY_PATH = "memory/YYYY-MM-DD.md"
#: how long the first call waits for the home's service (it runs in that service: it is there)
CONNECT_BUDGET_S = 5.0

Connector = Callable[[], Awaitable[Any]]


def _describe(text: str) -> str:
    """The core's wording, told where the files are in an OpenClaw workspace."""
    return (
        text.replace("YYYY-MM-DD.md", DAILY_PATH)
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
    """The home's workspace memory in the ``openclaw`` layout, reached through its service: the
    index and recall store live in the home, the files stay OpenClaw's. Connects on first use."""

    def __init__(self, home: Path | None, connect: Connector | None = None) -> None:
        self.home = home
        self._connect = connect or self._connect_home
        self._core: Any = None
        self._memory: Any = None
        self._lock: asyncio.Lock | None = None

    async def _connect_home(self) -> Any:
        from stratamem.contract.hostkit.client import connect

        if self.home is None:
            raise StratamemError(ErrorCode.UNSUPPORTED, "workspace memory needs the core's home")
        return await connect(self.home, CONNECT_BUDGET_S, start=False)

    async def memory(self) -> Any:
        """The ``RemoteWorkspace`` (connected once; later calls share it)."""
        if self._memory is None:
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                if self._memory is None:
                    self._core = await self._connect()
                    self._memory = self._core.workspace(LAYOUT, open_roots=True)
        return self._memory

    async def tool(self, workspace_dir: str, name: str, arguments: Any) -> dict[str, Any]:
        """``{"ok": …}`` from the host kit's dispatcher; errors stay typed in the answer."""
        bare = name[len(TOOL_PREFIX) :] if name.startswith(TOOL_PREFIX) else name
        if not workspace_dir:
            return {"ok": False, "error": {"code": "invalid_argument", "message": "no workspace"}}
        try:
            memory = await self.memory()
        except StratamemError as err:
            return {"ok": False, "error": err.to_dict()}
        return await dispatch_tool_async(memory, workspace_dir, bare, arguments)

    async def recalled_section(self, workspace_dir: str, query: str, timeout_s: float) -> str:
        """The ≤ 800-byte ``### Recalled Context`` section for ``query``, or ``""`` (fail-open)."""
        if not workspace_dir or not query.strip() or timeout_s <= 0:
            return ""
        try:

            async def section() -> str:
                memory = await self.memory()
                return str(await memory.recalled_context(workspace_dir, "", query))

            return await asyncio.wait_for(section(), timeout_s)
        except Exception as exc:
            log.warning("recalled_context_failed", error=str(exc))
            return ""

    async def aclose(self) -> None:
        """Close the channel (the service and its index keep running)."""
        core, self._core, self._memory = self._core, None, None
        if core is not None:
            await core.shutdown()


def answer_text(result: dict[str, Any]) -> str:
    return json.dumps(
        result.get("result") if result.get("ok") else result, default=str, ensure_ascii=False
    )
