"""OpenClaw's wiring of the six memory tools (hosts.md §2.4); the tools live in the host kit.

The JS plugin sends one typed request per tool; this turns it into the kit's arguments, runs the tool
in the calling session's namespace and answers text + details. Bad parameters raise
``StratamemError(invalid_argument)`` before the core is touched.
"""

from __future__ import annotations

import json
from typing import Any

from stratamem.contract.hostkit.tools import ToolContext, ToolResult, call_tool
from stratamem.contract.protocol import MemoryCore
from stratamem.hosts.openclaw.v1 import openclaw_pb2 as pb
from stratamem.openclaw.identity import AGENT_KIND, namespace_for, session_id_for


def _opt(msg: Any, name: str) -> int | None:
    return int(getattr(msg, name)) if msg.HasField(name) else None


def arguments(name: str, req: Any) -> dict[str, Any]:
    """The tool's arguments from its request message (``""`` means an optional string is unset)."""
    if name == "memos_search":
        return {
            "query": req.query,
            "maxResults": _opt(req, "max_results"),
            "tier1topK": _opt(req, "tier1_top_k"),
            "tier2topK": _opt(req, "tier2_top_k"),
            "tier3topK": _opt(req, "tier3_top_k"),
            "sessionScope": req.session_scope,
        }
    if name == "memos_get":
        return {"id": req.id, "kind": req.kind or None}
    if name == "memos_timeline":
        return {"episodeId": req.episode_id, "limit": _opt(req, "limit")}
    if name == "memos_environment":
        return {"query": req.query or None, "limit": _opt(req, "limit")}
    if name == "memos_skill_list":
        return {"status": req.status or None, "limit": _opt(req, "limit")}
    return {"id": req.id}


def context(ctx: pb.HookContext) -> ToolContext:
    return ToolContext(
        agent=AGENT_KIND,
        namespace=namespace_for(ctx.agent_id or "main", ctx.workspace_dir, ctx.session_key),
        session_id=session_id_for(ctx.agent_id, ctx.session_key),
    )


def response(result: ToolResult) -> pb.ToolResponse:
    details = json.dumps(result.details, default=str, ensure_ascii=False)
    return pb.ToolResponse(text=result.text, details_json=details)


async def answer(core: MemoryCore, name: str, req: Any) -> pb.ToolResponse:
    return response(await call_tool(core, name, arguments(name, req), context(req.ctx)))
