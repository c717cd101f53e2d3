"""Hermes' wiring of the six memory tools (hosts.md §3.6); the tools live in the host kit.

Hermes wants OpenAI function schemas (no ``tier*topK``) and a JSON string from every call: the
answer, or ``{"error": {code, message, details}}``.
"""

from __future__ import annotations

import json
from typing import Any

from stratamem.contract.dtos import Namespace
from stratamem.contract.errors import StratamemError
from stratamem.contract.hostkit import tools as kit

AGENT = "hermes"
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {"name": t.name, "description": t.description, "parameters": t.parameters(kit.TIER_PARAMS)}
    for t in kit.TOOLS
]
TOOL_NAMES: frozenset[str] = frozenset(kit.TOOL_NAMES)
validate = kit.validate


def run(core: Any, name: str, args: dict[str, Any], namespace: Namespace, session_id: str) -> Any:
    """Execute a call on a blocking core (from a worker thread); returns a JSON-able value."""
    ctx = kit.ToolContext(agent=AGENT, namespace=namespace, session_id=session_id or None)
    return kit.call_tool_blocking(core, name, args, ctx).as_dict()


def error_json(exc: BaseException) -> str:
    if isinstance(exc, StratamemError):
        return json.dumps({"error": exc.to_dict()}, default=str)
    return json.dumps(
        {"error": {"code": "internal", "message": f"{type(exc).__name__}: {exc}", "details": {}}}
    )
