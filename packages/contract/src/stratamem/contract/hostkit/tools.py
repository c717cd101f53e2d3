"""The six memory tools, written once: their definitions, argument validation and core calls.

An adapter supplies the calling context (namespace, session, deadline) and shapes the answer for its
host: OpenClaw wants text + details, DSH a dict with ``text``, Hermes a JSON string. Bad arguments
raise ``StratamemError(invalid_argument)`` before the core is touched; an unknown tool raises
``unknown_method``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, SkillGetOptions, TopK
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.protocol import MemoryCore

#: the longest snippet or body a tool returns unless the host asks for another cap
RESULT_MAX_CHARS = 1200
NO_MEMORIES = "No relevant memories found."
TIER_PARAMS = ("tier1topK", "tier2topK", "tier3topK")
GET_KINDS = ("trace", "policy", "world_model")
SKILL_STATUSES = ("candidate", "active", "archived")


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    type: Literal["string", "integer", "boolean"]
    description: str = ""
    required: bool = False
    minimum: int | None = None
    maximum: int | None = None
    default: Any = None
    enum: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type}
        if self.type == "string" and self.required:
            out["minLength"] = 1
        for key, value in (("minimum", self.minimum), ("maximum", self.maximum)):
            if value is not None:
                out[key] = value
        if self.enum:
            out["enum"] = list(self.enum)
        if self.default is not None:
            out["default"] = self.default
        if self.description:
            out["description"] = self.description
        return out


@dataclass(frozen=True, slots=True)
class ToolSpec:
    name: str
    label: str
    description: str
    params: tuple[Param, ...]
    #: False when a call writes (``memos_skill_get`` records the use): hosts must not run it in parallel
    concurrency_safe: bool = True

    def parameters(self, omit: tuple[str, ...] = ()) -> dict[str, Any]:
        """The parameters as a JSON schema object (OpenAI function / TypeBox-compatible)."""
        kept = [p for p in self.params if p.name not in omit]
        return {
            "type": "object",
            "additionalProperties": False,
            "properties": {p.name: p.schema() for p in kept},
            "required": [p.name for p in kept if p.required],
        }

    def definition(self, omit: tuple[str, ...] = ()) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "description": self.description,
            "concurrencySafe": self.concurrency_safe,
            "parameters": self.parameters(omit),
        }


def _int(name: str, lo: int, hi: int, default: int | None = None, what: str = "") -> Param:
    return Param(name, "integer", what, minimum=lo, maximum=hi, default=default)


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "memos_search",
        "Search memory",
        "Search long-term memory (past tasks, experiences, skills, environment knowledge). "
        "Use 2-5 key words.",
        (
            Param("query", "string", "2-5 key words", required=True),
            _int("maxResults", 1, 50, None, "most results (per tier when no tier is set)"),
            _int("tier1topK", 0, 100, None, "skills to return"),
            _int("tier2topK", 0, 100, None, "traces and episodes to return"),
            _int("tier3topK", 0, 100, None, "world models to return"),
            Param("sessionScope", "boolean", "only this session's memories", default=False),
        ),
    ),
    ToolSpec(
        "memos_get",
        "Get a memory",
        "Fetch one memory by id (a trace, a policy or a world model).",
        (
            Param("id", "string", required=True),
            Param("kind", "string", enum=GET_KINDS, default="trace"),
        ),
    ),
    ToolSpec(
        "memos_timeline",
        "Episode timeline",
        "List the steps of one past episode in order.",
        (Param("episodeId", "string", required=True), _int("limit", 1, 100, 20)),
    ),
    ToolSpec(
        "memos_environment",
        "Environment knowledge",
        "What memory knows about the environment (world models), optionally filtered by a query.",
        (Param("query", "string"), _int("limit", 1, 30, 5)),
    ),
    ToolSpec(
        "memos_skill_list",
        "List skills",
        "List learned skills.",
        (Param("status", "string", enum=SKILL_STATUSES), _int("limit", 1, 50, 10)),
    ),
    ToolSpec(
        "memos_skill_get",
        "Get a skill",
        "Fetch one learned skill's invocation guide (records its use).",
        (Param("id", "string", required=True),),
        concurrency_safe=False,
    ),
)
SPECS: dict[str, ToolSpec] = {t.name: t for t in TOOLS}
TOOL_NAMES: tuple[str, ...] = tuple(SPECS)


def definitions(omit: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Every tool's definition (what the JS plugins ship as ``memory-tools.json``)."""
    return [t.definition(omit) for t in TOOLS]


def _bad(message: str, name: str) -> StratamemError:
    return StratamemError(ErrorCode.INVALID_ARGUMENT, message, {"field": name})


def _check(p: Param, value: Any) -> Any:
    if value is None:
        if p.required:
            raise _bad(f"{p.name} is required", p.name)
        return p.default
    if p.type == "string":
        if not isinstance(value, str) or (p.required and not value.strip()):
            raise _bad(f"{p.name} must be a non-empty string", p.name)
    elif p.type == "boolean":
        if not isinstance(value, bool):
            raise _bad(f"{p.name} must be a boolean", p.name)
    else:
        integral = isinstance(value, int | float) and not isinstance(value, bool)
        if not integral or int(value) != value:
            raise _bad(f"{p.name} must be an integer", p.name)
        value = int(value)
        if not (p.minimum or 0) <= value <= (p.maximum if p.maximum is not None else value):
            raise _bad(f"{p.name} must be an integer in {p.minimum}..{p.maximum}", p.name)
    if p.enum and value not in p.enum:
        raise _bad(f"{p.name} must be one of {', '.join(p.enum)}", p.name)
    return value


def validate(name: str, args: Any) -> dict[str, Any]:
    """Checked arguments with defaults filled; unknown keys are ignored."""
    spec = SPECS.get(name)
    if spec is None:
        raise StratamemError(ErrorCode.UNKNOWN_METHOD, f"unknown tool {name!r}", {"tool": name})
    if args is None:
        args = {}
    if not isinstance(args, Mapping):
        raise _bad("tool arguments must be a JSON object", "args")
    return {p.name: _check(p, args.get(p.name)) for p in spec.params}


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Who calls: the host's agent kind, the resolved namespace and session, and the host's limits."""

    agent: str
    namespace: Namespace
    session_id: str | None = None
    episode_id: str | None = None
    call_id: str | None = None
    #: absolute deadline (epoch ms) for ``memos_search`` (DSH: the recall budget)
    deadline_at: int | None = None
    llm_filter_malformed_retries: int | None = None
    max_chars: int = RESULT_MAX_CHARS


@dataclass(frozen=True, slots=True)
class ToolResult:
    """Text for the model, plus structured JSON-able details."""

    text: str
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, **self.details}


def parse_arguments(raw: Any) -> Any:
    """A tool call's arguments as a host reports them: JSON text decoded, anything else as it is."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def to_json(value: Any) -> Any:
    """DTOs (and containers of them) as plain JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: to_json(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def search_top_k(args: Mapping[str, Any]) -> TopK | None:
    """``maxResults`` fills every tier left unset; an unset tier is 0 when another one is set."""
    tiers = [args.get(t) for t in TIER_PARAMS]
    most = args.get("maxResults")
    if most is None and all(v is None for v in tiers):
        return None
    explicit = any(v is not None for v in tiers)
    fill = most if most is not None else (0 if explicit else None)
    return TopK(*(v if v is not None else fill for v in tiers))


async def _search(core: MemoryCore, a: dict[str, Any], ctx: ToolContext) -> ToolResult:
    scope = bool(a["sessionScope"]) and ctx.session_id is not None
    result = await core.search(
        RetrievalQuery(
            agent=ctx.agent,
            query=a["query"].strip(),
            namespace=ctx.namespace,
            session_id=ctx.session_id,
            reason="tool_driven",
            deadline_at=ctx.deadline_at,
            llm_filter_malformed_retries=ctx.llm_filter_malformed_retries,
            filters={"session_id": ctx.session_id} if scope else {},
            top_k=search_top_k(a),
        )
    )
    hits = [
        {
            "tier": h.tier,
            "refKind": h.ref_kind,
            "refId": h.ref_id,
            "score": round(h.score, 4),
            "snippet": clip(h.snippet, ctx.max_chars),
        }
        for h in result.hits[: a["maxResults"] or None]
    ]
    lat = result.tier_latency_ms
    details = {
        "hits": hits,
        "tierLatencyMs": {"tier1": lat.tier1, "tier2": lat.tier2, "tier3": lat.tier3},
    }
    if not hits:
        return ToolResult(NO_MEMORIES, details)
    lines = [f"Found {len(hits)} memories:"]
    lines += [
        f"{i}. [{h['refKind']} {h['refId']}] (score {h['score']}) {h['snippet']}"
        for i, h in enumerate(hits, 1)
    ]
    return ToolResult("\n".join(lines), details)


async def _get(core: MemoryCore, a: dict[str, Any], ctx: ToolContext) -> ToolResult:
    ref, kind = a["id"], a["kind"]
    item: Any
    if kind == "trace":
        item = await core.get_trace(ref, ctx.namespace)
        body = "" if item is None else f"User: {item.user_text}\nAgent: {item.agent_text}"
    elif kind == "policy":
        item = await core.get_policy(ref, ctx.namespace)
        body = "" if item is None else f"{item.title}\n{item.trigger}\n{item.procedure}"
    else:
        item = await core.get_world_model(ref, ctx.namespace)
        body = "" if item is None else f"{item.title}\n{item.body}"
    if item is None:
        return ToolResult(f"No {kind} with id {ref}.", {"found": False, "kind": kind, "id": ref})
    body = clip(body.strip(), ctx.max_chars)
    meta = {k: v for k, v in to_json(item).items() if isinstance(v, str | int | float | bool)}
    return ToolResult(body, {"found": True, "kind": kind, "id": ref, "body": body, "meta": meta})


async def _timeline(core: MemoryCore, a: dict[str, Any], ctx: ToolContext) -> ToolResult:
    episode = a["episodeId"]
    try:
        traces = (await core.timeline(episode, ctx.namespace))[: a["limit"]]
    except StratamemError as exc:
        if exc.code != ErrorCode.EPISODE_NOT_FOUND:
            raise
        traces = []  # an unknown episode is an empty timeline for the model, not a tool failure
    items = [
        {
            "id": t.id,
            "ts": t.ts,
            "userText": clip(t.user_text, ctx.max_chars),
            "agentText": clip(t.agent_text, ctx.max_chars),
        }
        for t in traces
    ]
    lines = [f"- [{i['id']}] user: {i['userText']} | agent: {i['agentText']}" for i in items]
    text = "\n".join([f"Episode {episode}: {len(items)} steps", *lines])
    return ToolResult(text, {"episodeId": episode, "traces": items})


async def _environment(core: MemoryCore, a: dict[str, Any], ctx: ToolContext) -> ToolResult:
    query = (a["query"] or "").strip() or None
    models = await core.list_world_models(
        ListQuery(limit=a["limit"], q=query, namespace=ctx.namespace)
    )
    items = [{"id": m.id, "title": m.title, "body": clip(m.body, ctx.max_chars)} for m in models]
    text = "\n".join(f"- [{i['id']}] {i['title']}: {i['body']}" for i in items)
    return ToolResult(text or "No environment knowledge found.", {"worldModels": items})


async def _skill_list(core: MemoryCore, a: dict[str, Any], ctx: ToolContext) -> ToolResult:
    skills = await core.list_skills(
        ListQuery(limit=a["limit"], status=a["status"], namespace=ctx.namespace)
    )
    items = [{"id": s.id, "name": s.name, "status": s.status, "eta": s.eta} for s in skills]
    text = "\n".join(f"- [{i['id']}] {i['name']} ({i['status']}, η={i['eta']:.2f})" for i in items)
    return ToolResult(text or "No skills found.", {"skills": items})


async def _skill_get(core: MemoryCore, a: dict[str, Any], ctx: ToolContext) -> ToolResult:
    ref = a["id"]
    skill = await core.get_skill(
        ref,
        SkillGetOptions(
            record_use=True,
            # a trial is resolved by its episode's reward: without an episode it would never be
            record_trial=ctx.episode_id is not None,
            session_id=ctx.session_id,
            episode_id=ctx.episode_id,
            tool_call_id=ctx.call_id or None,
        ),
        ctx.namespace,
    )
    if skill is None:
        return ToolResult(f"No skill with id {ref}.", {"found": False, "id": ref})
    return ToolResult(
        f"# {skill.name}\n{skill.invocation_guide}".strip(),
        {
            "found": True,
            "id": skill.id,
            "name": skill.name,
            "status": skill.status,
            "eta": skill.eta,
            "invocationGuide": skill.invocation_guide,
        },
    )


_RUNNERS = {
    "memos_search": _search,
    "memos_get": _get,
    "memos_timeline": _timeline,
    "memos_environment": _environment,
    "memos_skill_list": _skill_list,
    "memos_skill_get": _skill_get,
}


async def call_tool(core: MemoryCore, name: str, args: Any, ctx: ToolContext) -> ToolResult:
    """Validate, then run one tool against the core."""
    checked = validate(name, args)
    return await _RUNNERS[name](core, checked, ctx)


class _AsyncFace:
    """An awaitable face over a blocking core's methods (for hosts that call from a worker thread)."""

    def __init__(self, core: Any) -> None:
        self._core = core

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._core, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call


def call_tool_blocking(core: Any, name: str, args: Any, ctx: ToolContext) -> ToolResult:
    """``call_tool`` over a blocking core (Hermes); run it off any event loop's thread."""
    return asyncio.run(call_tool(cast(MemoryCore, _AsyncFace(core)), name, args, ctx))
