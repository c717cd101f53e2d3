"""DSH's wiring of the six memory tools (hosts.md §5.4); the tools themselves live in the host kit.

DSH resolves the namespace from the calling session, bounds ``memos_search`` by the recall budget
(``min(recallTimeoutMs, 3000)``) with zero malformed-output retries, and answers a dict with ``text``.
"""

from __future__ import annotations

import time
from typing import Any

from stratamem.contract.hostkit.tools import RESULT_MAX_CHARS, ToolContext, call_tool
from stratamem.contract.protocol import MemoryCore
from stratamem.dsh.host_api import AGENT
from stratamem.dsh.namespace import SessionInfo, resolve_namespace
from stratamem.dsh.recall import recall_budget_ms

TOOL_RESULT_MAX_CHARS = RESULT_MAX_CHARS


async def call_dsh_tool(
    core: MemoryCore,
    name: str,
    args: Any,
    info: SessionInfo,
    *,
    call_id: str = "",
    deadline_at: int | None = None,
    max_chars: int = TOOL_RESULT_MAX_CHARS,
    recall_timeout_ms: int | None = None,
    episode_id: str | None = None,
) -> dict[str, Any]:
    budget_at = int(time.time() * 1000) + recall_budget_ms(recall_timeout_ms)
    ctx = ToolContext(
        agent=AGENT,
        namespace=resolve_namespace(info),
        session_id=info.session_id,
        episode_id=episode_id,
        call_id=call_id or None,
        deadline_at=budget_at if not deadline_at else min(deadline_at, budget_at),
        llm_filter_malformed_retries=0,
        max_chars=max(128, max_chars or TOOL_RESULT_MAX_CHARS),
    )
    return (await call_tool(core, name, args, ctx)).as_dict()
