"""The six memory tools Hermes offers the model (OpenAI function format) and their dispatch.

``handle`` always returns a JSON string; bad arguments give ``{"error": {code, message, details}}``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, SkillGetOptions
from stratamem.contract.errors import ErrorCode, StratamemError

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": "memos_search",
        "description": "Search long-term memory (past tasks, experiences, environment knowledge).",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "maxResults": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                "sessionScope": {
                    "type": "boolean",
                    "default": False,
                    "description": "only this session's memories",
                },
            },
            "required": ["query"],
        },
    },
    {
        "name": "memos_get",
        "description": "Fetch one memory by id (a trace, an experience/policy or a world model).",
        "parameters": {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "kind": {
                    "type": "string",
                    "enum": ["trace", "policy", "world_model"],
                    "default": "trace",
                },
            },
            "required": ["id"],
        },
    },
    {
        "name": "memos_timeline",
        "description": "List the steps of one past episode in order.",
        "parameters": {
            "type": "object",
            "properties": {
                "episodeId": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
            },
            "required": ["episodeId"],
        },
    },
    {
        "name": "memos_skill_list",
        "description": "List learned skills.",
        "parameters": {
            "type": "object",
            "properties": {
                "status": {"type": "string", "enum": ["candidate", "active", "archived"]},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
            },
            "required": [],
        },
    },
    {
        "name": "memos_environment",
        "description": "Environment knowledge (world models) learned from past work.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 30, "default": 5},
            },
            "required": [],
        },
    },
    {
        "name": "memos_skill_get",
        "description": "Get a skill's invocation guide by id.",
        "parameters": {
            "type": "object",
            "properties": {"id": {"type": "string"}},
            "required": ["id"],
        },
    },
]

TOOL_NAMES: frozenset[str] = frozenset(s["name"] for s in TOOL_SCHEMAS)


def _bad(message: str, **details: Any) -> StratamemError:
    return StratamemError(ErrorCode.INVALID_ARGUMENT, message, details)


def _str(args: Mapping[str, Any], key: str, *, required: bool) -> str | None:
    value = args.get(key)
    if value is None:
        if required:
            raise _bad(f"`{key}` is required", field=key)
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise _bad(f"`{key}` must be a non-empty string", field=key)
    return value


def _int(args: Mapping[str, Any], key: str, default: int, low: int, high: int) -> int:
    value = args.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or int(value) != value:
        raise _bad(f"`{key}` must be an integer", field=key)
    if not low <= int(value) <= high:
        raise _bad(f"`{key}` must be between {low} and {high}", field=key)
    return int(value)


def _enum(
    args: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str | None
) -> str | None:
    value = args.get(key, default)
    if value is None:
        return None
    if value not in allowed:
        raise _bad(f"`{key}` must be one of {', '.join(allowed)}", field=key)
    return str(value)


def to_json(value: Any) -> Any:
    """Dataclass DTOs (and lists of them) as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: to_json(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def _not_found(kind: str, ident: str) -> StratamemError:
    codes = {
        "trace": ErrorCode.TRACE_NOT_FOUND,
        "policy": ErrorCode.POLICY_NOT_FOUND,
        "world_model": ErrorCode.WORLD_MODEL_NOT_FOUND,
        "skill": ErrorCode.SKILL_NOT_FOUND,
    }
    return StratamemError(codes[kind], f"no {kind} with id {ident}", {"id": ident})


def validate(name: str, args: Any) -> dict[str, Any]:
    """Check a call before anything reaches the core; raises ``invalid_argument``."""
    if name not in TOOL_NAMES:
        raise StratamemError(ErrorCode.UNKNOWN_METHOD, f"unknown tool {name!r}", {"tool": name})
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise _bad("tool arguments must be an object")
    out: dict[str, Any] = {}
    if name == "memos_search":
        out["query"] = _str(args, "query", required=True)
        out["maxResults"] = _int(args, "maxResults", 10, 1, 50)
        scope = args.get("sessionScope", False)
        if not isinstance(scope, bool):
            raise _bad("`sessionScope` must be a boolean", field="sessionScope")
        out["sessionScope"] = scope
    elif name == "memos_get":
        out["id"] = _str(args, "id", required=True)
        out["kind"] = _enum(args, "kind", ("trace", "policy", "world_model"), "trace")
    elif name == "memos_timeline":
        out["episodeId"] = _str(args, "episodeId", required=True)
        out["limit"] = _int(args, "limit", 20, 1, 100)
    elif name == "memos_skill_list":
        out["status"] = _enum(args, "status", ("candidate", "active", "archived"), None)
        out["limit"] = _int(args, "limit", 10, 1, 50)
    elif name == "memos_environment":
        out["query"] = _str(args, "query", required=False)
        out["limit"] = _int(args, "limit", 5, 1, 30)
    else:
        out["id"] = _str(args, "id", required=True)
    return out


def run(core: Any, name: str, args: dict[str, Any], namespace: Namespace, session_id: str) -> Any:
    """Execute a validated call on a blocking core; returns a JSON-able value."""
    if name == "memos_search":
        result = core.search(
            RetrievalQuery(
                agent="hermes",
                query=args["query"],
                namespace=namespace,
                session_id=session_id if args["sessionScope"] else None,
                reason="tool_driven",
                filters={"session_id": session_id} if args["sessionScope"] else {},
            )
        )
        hits = [to_json(h) for h in result.hits[: args["maxResults"]]]
        return {"count": len(hits), "hits": hits}
    if name == "memos_get":
        kind = args["kind"]
        getter = {
            "trace": core.get_trace,
            "policy": core.get_policy,
            "world_model": core.get_world_model,
        }[kind]
        item = getter(args["id"], namespace=namespace)
        if item is None:
            raise _not_found(kind, args["id"])
        return {"kind": kind, "item": to_json(item)}
    if name == "memos_timeline":
        traces = core.timeline(args["episodeId"], namespace=namespace)
        return {"episodeId": args["episodeId"], "traces": to_json(list(traces)[: args["limit"]])}
    if name == "memos_skill_list":
        skills = core.list_skills(
            ListQuery(limit=args["limit"], status=args["status"], namespace=namespace)
        )
        return {"count": len(skills), "skills": to_json(list(skills))}
    if name == "memos_environment":
        models = core.list_world_models(
            ListQuery(limit=args["limit"], q=args["query"], namespace=namespace)
        )
        return {"count": len(models), "world_models": to_json(list(models))}
    skill = core.get_skill(
        args["id"], options=SkillGetOptions(record_use=True), namespace=namespace
    )
    if skill is None:
        raise _not_found("skill", args["id"])
    return {"skill": to_json(skill)}


def error_json(exc: BaseException) -> str:
    if isinstance(exc, StratamemError):
        return json.dumps({"error": exc.to_dict()}, default=str)
    return json.dumps(
        {"error": {"code": "internal", "message": f"{type(exc).__name__}: {exc}", "details": {}}}
    )
