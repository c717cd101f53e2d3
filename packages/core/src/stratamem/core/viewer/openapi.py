"""The OpenAPI 3.1 document of the viewer's HTTP API, built from the route table, plus a small checker.

``check(schema, value)`` validates the subset we use (type, required, properties, items, $ref) so the
tests can hold every documented response of a running server against its schema without new deps.
"""

from __future__ import annotations

from typing import Any

from stratamem.core import __version__
from stratamem.core.viewer.routes import ROUTES


def _obj(required: tuple[str, ...], **props: Any) -> dict[str, Any]:
    return {"type": "object", "required": list(required), "properties": props}


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _list_of(name: str) -> dict[str, Any]:
    return _obj(("items",), items={"type": "array", "items": _ref(name)})


_S, _I, _N, _B = {"type": "string"}, {"type": "integer"}, {"type": "number"}, {"type": "boolean"}
_ANY_OBJ: dict[str, Any] = {"type": "object"}

SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": _obj(
        ("error",),
        error=_obj(("code", "message", "details"), code=_S, message=_S, details=_ANY_OBJ),
    ),
    "System": _obj(
        ("version", "namespaces"),
        version=_S,
        pid=_I,
        viewer_url=_S,
        paths=_obj(("home", "config", "logs"), home=_S, config=_S, logs=_S),
        health=_obj(("ok", "version", "counts"), ok=_B, version=_S, counts=_ANY_OBJ),
        access={"type": "array", "items": _S},
        namespaces={"type": "array", "items": _ref("NamespaceFigures")},
    ),
    "NamespaceFigures": _obj(
        ("namespace", "traces", "episodes", "last_ts"),
        namespace=_S,
        traces=_I,
        episodes=_I,
        last_ts=_I,
    ),
    "NamespaceList": _obj(
        ("items", "total", "limit", "offset"),
        items={"type": "array", "items": _ref("NamespaceFigures")},
        total=_I,
        limit=_I,
        offset=_I,
    ),
    "Event": _obj(("type", "ts", "seq", "payload"), type=_S, ts=_I, seq=_I, payload=_ANY_OBJ),
    "EventList": _list_of("Event"),
    "Metrics": _obj(
        ("memory_growth", "recall_latency"),
        memory_growth={"type": "array"},
        recall_latency={"type": "array"},
    ),
    "Config": _obj(("path", "config"), path=_S, config=_ANY_OBJ, restart_required=_B),
    "ConfigPatch": {
        "type": "object",
        "description": "nested keys of config.yaml; a masked secret (••••) keeps the stored value",
    },
    "Trace": _obj(
        ("id", "episode_id", "session_id", "ts", "value", "alpha", "priority", "tags"),
        id=_S,
        episode_id=_S,
        session_id=_S,
        ts=_I,
        summary={"type": ["string", "null"]},
        tags={"type": "array", "items": _S},
        value=_N,
        alpha=_N,
        r_human={"type": ["number", "null"]},
        priority=_N,
        owner=_ANY_OBJ,
    ),
    "TraceList": _list_of("Trace"),
    "TracePatch": _obj((), summary=_S, tags={"type": "array", "items": _S}),
    "Deleted": _obj(("deleted",), deleted=_I),
    "Policy": _obj(
        ("id", "title", "support", "gain", "status"),
        id=_S,
        title=_S,
        support=_I,
        gain=_N,
        status=_S,
    ),
    "PolicyList": _list_of("Policy"),
    "WorldModel": _obj(("id", "title", "confidence"), id=_S, title=_S, confidence=_N),
    "WorldModelList": _list_of("WorldModel"),
    "Skill": _obj(("id", "name", "status", "eta"), id=_S, name=_S, status=_S, eta=_N),
    "SkillList": _list_of("Skill"),
    "Episode": _obj(
        ("id", "session_id", "started_at", "status", "trace_ids"),
        id=_S,
        session_id=_S,
        started_at=_I,
        status=_S,
        trace_ids={"type": "array", "items": _S},
    ),
    "EpisodeList": _list_of("Episode"),
    "EpisodeDetail": _obj(
        ("episode", "timeline"),
        episode=_ref("Episode"),
        timeline={"type": "array", "items": _ref("Trace")},
    ),
    "FeedbackInput": _obj(
        ("polarity",),
        trace_id=_S,
        episode_id=_S,
        polarity={"type": "string", "enum": ["positive", "negative", "neutral"]},
        magnitude=_N,
        rationale=_S,
    ),
    "Feedback": _obj(("id", "ts", "polarity"), id=_S, ts=_I, polarity=_S, magnitude=_N),
    "RetrievalPreview": _obj(
        ("query", "reason", "namespace", "tiers", "hits", "injected_context", "tier_latency_ms"),
        query=_S,
        reason=_S,
        namespace=_S,
        tiers=_ANY_OBJ,
        hits=_I,
        injected_context=_S,
        tier_latency_ms=_ANY_OBJ,
        cut_off=_B,
    ),
    "LogList": _obj(("items", "limit"), items={"type": "array"}, limit=_I),
    "WorkspaceOverview": _obj(
        ("roots", "root", "memory", "files"),
        roots={"type": "array", "items": _S},
        root={"type": ["string", "null"]},
        memory={"type": ["object", "null"]},
        files={"type": "array"},
    ),
    "MemoryWrite": _obj(("content",), root=_S, content=_S),
    "FileWrite": _obj(("path", "content"), root=_S, path=_S, content=_S),
    "WriteResult": _obj(
        ("success", "path", "bytes_written"), success=_B, path=_S, bytes_written=_I
    ),
    "FileContent": _obj(("path", "content"), path=_S, content=_S),
    "RecallList": _obj(("mode", "hits"), mode=_S, hits={"type": "array"}),
    "OpenApi": _obj(("openapi", "paths"), openapi=_S, paths=_ANY_OBJ),
    "EventStream": {"type": "string", "description": "text/event-stream"},
}

_STATUS_TEXT = {
    400: "bad input",
    401: "token required",
    403: "forbidden",
    404: "not found",
    413: "body too large",
    415: "not JSON",
}


def document() -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for r in ROUTES:
        op: dict[str, Any] = {
            "operationId": r.handler.split(".")[-1],
            "summary": r.summary,
            "tags": list(r.tags),
            "parameters": [
                {
                    "name": p.name,
                    "in": p.where,
                    "required": p.required or p.where == "path",
                    "schema": {"type": p.type},
                    **({"description": p.description} if p.description else {}),
                }
                for p in r.params
            ],
        }
        media = "text/event-stream" if r.response == "EventStream" else "application/json"
        op["responses"] = {
            "200": {"description": "ok", "content": {media: {"schema": _ref(r.response)}}},
            **{
                str(code): {
                    "description": _STATUS_TEXT.get(code, "error"),
                    "content": {"application/json": {"schema": _ref("Error")}},
                }
                for code in sorted({*r.errors, 401, 403})
            },
        }
        if r.body:
            op["requestBody"] = {
                "required": True,
                "content": {"application/json": {"schema": _ref(r.body)}},
            }
        paths.setdefault(r.path, {})[r.method.lower()] = op
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Stratamem viewer API",
            "version": __version__,
            "description": "HTTP + SSE over the running core of one home (loopback by default).",
        },
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "paths": paths,
    }


_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def check(schema: dict[str, Any], value: Any, path: str = "$") -> list[str]:
    """Problems of ``value`` against ``schema`` (empty list = valid)."""
    if "$ref" in schema:
        return check(SCHEMAS[schema["$ref"].rsplit("/", 1)[1]], value, path)
    problems: list[str] = []
    kinds = schema.get("type")
    if kinds is not None:
        names = kinds if isinstance(kinds, list) else [kinds]
        ok = False
        for n in names:
            if isinstance(value, bool) and n in ("integer", "number"):
                continue
            if isinstance(value, _TYPES[n]):
                ok = True
        if not ok:
            return [f"{path}: expected {names}, got {type(value).__name__}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: {value!r} not in {schema['enum']}")
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                problems.append(f"{path}: missing {key!r}")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                problems += check(sub, value[key], f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value[:50]):
            problems += check(schema["items"], item, f"{path}[{i}]")
    return problems
