"""The workspace memory tools (JSON-schema function specs), their validation and one dispatcher.

Written once for the in-process ``WorkspaceMemory`` (the core) and the ``RemoteWorkspace`` client
(adapters): both offer the same method names, so ``dispatch_tool`` runs over the first and
``dispatch_tool_async`` over the second. Arguments are validated before anything is touched.
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from collections.abc import Callable
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError


def _invalid(message: str, **details: Any) -> StratamemError:
    return StratamemError(ErrorCode.INVALID_ARGUMENT, message, details)


_STR = {"type": "string"}
_INT = {"type": "integer", "minimum": 1}
_STRS = {"type": "array", "items": {"type": "string"}}
_KIND = {"type": "string", "enum": ["decision", "preference", "solution"]}


def _tool(
    name: str, description: str, props: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": props,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


TOOL_DEFINITIONS: list[dict[str, Any]] = [
    _tool("memory_read", "Read the project's long-term memory (MEMORY.md).", {}, []),
    _tool(
        "memory_write",
        "Replace the project's long-term memory (MEMORY.md) with new content.",
        {"content": _STR},
        ["content"],
    ),
    _tool(
        "memory_get",
        "Read lines of one memory file (MEMORY.md, DREAMS.md or YYYY-MM-DD.md).",
        {"path": _STR, "start_line": _INT, "line_count": _INT},
        ["path"],
    ),
    _tool(
        "memory_search",
        "Search the project's memory files; returns snippets with file, lines and score.",
        {"query": _STR, "limit": {"type": "integer", "minimum": 1, "maximum": 50}},
        ["query"],
    ),
    _tool("memory_list_files", "List the project's memory files.", {}, []),
    _tool(
        "memory_write_file",
        "Replace one memory file (MEMORY.md, DREAMS.md or YYYY-MM-DD.md).",
        {"path": _STR, "content": _STR},
        ["path", "content"],
    ),
    _tool(
        "recall_append",
        "Record a durable decision, preference or solution (near-duplicates are rejected).",
        {
            "kind": _KIND,
            "content": _STR,
            "tags": _STRS,
            "task_id": _STR,
            "agent_id": _STR,
            "session_id": _STR,
        },
        ["kind", "content"],
    ),
    _tool(
        "recall_search",
        "Search recorded decisions, preferences and solutions.",
        {
            "query": _STR,
            "kinds": {"type": "array", "items": _KIND},
            "tags": _STRS,
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        [],
    ),
]

_BY_NAME = {t["function"]["name"]: t["function"]["parameters"] for t in TOOL_DEFINITIONS}


def _check(value: Any, schema: dict[str, Any], name: str) -> None:
    kind = schema.get("type")
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "array": isinstance(value, list),
    }.get(str(kind), True)
    if not ok:
        raise _invalid(f"argument {name!r} must be of type {kind}", argument=name)
    if "enum" in schema and value not in schema["enum"]:
        raise _invalid(f"argument {name!r} must be one of {schema['enum']}", argument=name)
    if kind == "integer" and (
        value < schema.get("minimum", value) or value > schema.get("maximum", value)
    ):
        raise _invalid(f"argument {name!r} is out of range", argument=name)
    if kind == "array":
        for item in value:
            _check(item, schema["items"], name)


def validate_tool_arguments(name: str, arguments: Any) -> dict[str, Any]:
    schema = _BY_NAME.get(name)
    if schema is None:
        raise _invalid("unknown memory tool", tool=str(name))
    if not isinstance(arguments, dict):
        raise _invalid("tool arguments must be an object", tool=name)
    extra = set(arguments) - set(schema["properties"])
    if extra:
        raise _invalid("unknown tool arguments", tool=name, arguments=sorted(extra))
    for req in schema["required"]:
        if req not in arguments:
            raise _invalid(f"missing required argument {req!r}", tool=name)
    for key, value in arguments.items():
        _check(value, schema["properties"][key], key)
    return arguments


def plain_result(value: Any) -> Any:
    """A tool result (a dataclass, a generated message, lists of them) as plain JSON-able data."""
    from google.protobuf.message import Message

    if isinstance(value, Message):
        from stratamem.contract.workspace import plain

        return plain(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain_result(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [plain_result(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_result(v) for k, v in value.items()}
    return value


def _handlers(
    memory: Any, root: str | os.PathLike[str], args: dict[str, Any]
) -> dict[str, Callable[[], Any]]:
    return {
        "memory_read": lambda: memory.read(root),
        "memory_write": lambda: memory.write(root, args["content"]),
        "memory_get": lambda: memory.get(
            root, args["path"], args.get("start_line"), args.get("line_count")
        ),
        "memory_search": lambda: memory.search(root, args["query"], args.get("limit")),
        "memory_list_files": lambda: memory.list_files(root),
        "memory_write_file": lambda: memory.write_file(root, args["path"], args["content"]),
        "recall_append": lambda: memory.append_recall(
            root,
            args["kind"],
            args["content"],
            tags=args.get("tags"),
            source={k: args[k] for k in ("task_id", "agent_id", "session_id") if k in args}
            | {"origin": "tool"},
        ),
        "recall_search": lambda: memory.search_recall(
            root,
            args.get("query", ""),
            kinds=args.get("kinds"),
            tags=args.get("tags"),
            limit=args.get("limit"),
        ),
    }


def dispatch_tool(
    memory: Any, root: str | os.PathLike[str], name: str, arguments: Any
) -> dict[str, Any]:
    """Run one tool call over a blocking memory: ``{"ok": true, "result": ...}`` or
    ``{"ok": false, "error": {code, ...}}``."""
    try:
        args = validate_tool_arguments(name, arguments)
        return {"ok": True, "result": plain_result(_handlers(memory, root, args)[name]())}
    except StratamemError as err:
        return {"ok": False, "error": err.to_dict()}


async def dispatch_tool_async(
    memory: Any, root: str | os.PathLike[str], name: str, arguments: Any
) -> dict[str, Any]:
    """``dispatch_tool`` over a memory whose methods are coroutines (``RemoteWorkspace``)."""
    try:
        args = validate_tool_arguments(name, arguments)
        value = _handlers(memory, root, args)[name]()
        if inspect.isawaitable(value):
            value = await value
        return {"ok": True, "result": plain_result(value)}
    except StratamemError as err:
        return {"ok": False, "error": err.to_dict()}
