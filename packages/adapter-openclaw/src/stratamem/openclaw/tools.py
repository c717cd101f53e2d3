"""The six memory tools OpenClaw's model can call, with the parameter rules of hosts.md §2.4.

Bad parameters raise ``StratamemError(invalid_argument)`` before the core is touched.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from stratamem.contract.dtos import ListQuery, Namespace, RetrievalQuery, TopK
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.protocol import MemoryCore
from stratamem.openclaw.identity import AGENT_KIND

TOOL_NAMES: tuple[str, ...] = (
    "memos_search",
    "memos_get",
    "memos_timeline",
    "memos_environment",
    "memos_skill_list",
    "memos_skill_get",
)
SNIPPET_CHARS = 1200
GET_KINDS = ("trace", "policy", "world_model")
SKILL_STATUSES = ("candidate", "active", "archived")


@dataclass(frozen=True, slots=True)
class ToolAnswer:
    """What a tool returns to the model: text, plus structured details."""

    text: str
    details: dict[str, Any]

    def details_json(self) -> str:
        return json.dumps(self.details, default=str, ensure_ascii=False)


def _bad(message: str, field: str) -> StratamemError:
    return StratamemError(ErrorCode.INVALID_ARGUMENT, message, {"field": field})


def _int(value: int | None, field: str, lo: int, hi: int, default: int | None) -> int | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise _bad(f"{field} must be an integer between {lo} and {hi}", field)
    return value


def _text(value: Any, field: str, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise _bad(f"{field} must be a non-empty string", field)
    return value.strip()


def _jsonable(obj: Any) -> Any:
    return asdict(obj) if hasattr(obj, "__dataclass_fields__") else obj


async def memos_search(
    core: MemoryCore,
    namespace: Namespace,
    session_id: str,
    query: str,
    max_results: int | None = None,
    tier1_top_k: int | None = None,
    tier2_top_k: int | None = None,
    tier3_top_k: int | None = None,
    session_scope: bool = False,
) -> ToolAnswer:
    text = _text(query, "query")
    limit = _int(max_results, "maxResults", 1, 50, 10)
    top_k = TopK(
        tier1=_int(tier1_top_k, "tier1TopK", 0, 100, None),
        tier2=_int(tier2_top_k, "tier2TopK", 0, 100, None),
        tier3=_int(tier3_top_k, "tier3TopK", 0, 100, None),
    )
    result = await core.search(
        RetrievalQuery(
            agent=AGENT_KIND,
            query=text,
            namespace=namespace,
            session_id=session_id if session_scope else None,
            reason="tool_driven",
            top_k=top_k
            if any(v is not None for v in (top_k.tier1, top_k.tier2, top_k.tier3))
            else None,
        )
    )
    hits = [
        {
            "tier": h.tier,
            "refKind": h.ref_kind,
            "refId": h.ref_id,
            "score": round(h.score, 4),
            "snippet": h.snippet[:SNIPPET_CHARS],
        }
        for h in result.hits[: limit or 10]
    ]
    if not hits:
        return ToolAnswer("Found 0 memories.", {"hits": []})
    lines = [f"Found {len(hits)} memories:"]
    for i, h in enumerate(hits, 1):
        lines.append(f"{i}. [{h['refKind']} {h['refId']}] (score {h['score']}) {h['snippet']}")
    return ToolAnswer("\n".join(lines), {"hits": hits})


async def memos_get(core: MemoryCore, namespace: Namespace, id: str, kind: str = "") -> ToolAnswer:
    ref = _text(id, "id")
    kind = kind or "trace"
    if kind not in GET_KINDS:
        raise _bad(f"kind must be one of {', '.join(GET_KINDS)}", "kind")
    found: Any
    if kind == "trace":
        found = await core.get_trace(ref, namespace)
    elif kind == "policy":
        found = await core.get_policy(ref, namespace)
    else:
        found = await core.get_world_model(ref, namespace)
    if found is None:
        return ToolAnswer(f"No {kind} with id {ref}.", {"found": False})
    data = _jsonable(found)
    return ToolAnswer(
        json.dumps(data, default=str, ensure_ascii=False, indent=1), {"found": True, kind: data}
    )


async def memos_timeline(
    core: MemoryCore, namespace: Namespace, episode_id: str, limit: int | None = None
) -> ToolAnswer:
    episode = _text(episode_id, "episodeId")
    n = _int(limit, "limit", 1, 100, 20) or 20
    traces = (await core.timeline(episode, namespace))[:n]
    lines = [f"Episode {episode}: {len(traces)} steps"]
    for t in traces:
        lines.append(f"- [{t.id}] user: {t.user_text[:200]} | agent: {t.agent_text[:200]}")
    return ToolAnswer("\n".join(lines), {"traces": [_jsonable(t) for t in traces]})


async def memos_environment(
    core: MemoryCore, namespace: Namespace, query: str | None = None, limit: int | None = None
) -> ToolAnswer:
    text = _text(query, "query", required=False)
    n = _int(limit, "limit", 1, 30, 5) or 5
    if not text:
        models = await core.list_world_models(ListQuery(limit=n, namespace=namespace))
        if not models:
            return ToolAnswer("No environment knowledge yet.", {"worldModels": []})
        lines = [f"- [{m.id}] {m.title}: {m.body[:400]}" for m in models]
        return ToolAnswer("\n".join(lines), {"worldModels": [_jsonable(m) for m in models]})
    result = await core.search(
        RetrievalQuery(
            agent=AGENT_KIND,
            query=text,
            namespace=namespace,
            reason="tool_driven",
            top_k=TopK(0, 0, n),
        )
    )
    hits = [h for h in result.hits if h.ref_kind == "world_model"][:n]
    lines = [f"- [{h.ref_id}] {h.snippet[:SNIPPET_CHARS]}" for h in hits]
    return ToolAnswer(
        "\n".join(lines) or "No environment knowledge matches.",
        {"hits": [_jsonable(h) for h in hits]},
    )


async def memos_skill_list(
    core: MemoryCore, namespace: Namespace, status: str | None = None, limit: int | None = None
) -> ToolAnswer:
    if status and status not in SKILL_STATUSES:
        raise _bad(f"status must be one of {', '.join(SKILL_STATUSES)}", "status")
    n = _int(limit, "limit", 1, 50, 10) or 10
    skills = await core.list_skills(ListQuery(limit=n, status=status or None, namespace=namespace))
    if not skills:
        return ToolAnswer("No skills yet.", {"skills": []})
    lines = [f"- [{s.id}] {s.name} ({s.status}, η={s.eta:.2f})" for s in skills]
    return ToolAnswer("\n".join(lines), {"skills": [_jsonable(s) for s in skills]})


async def memos_skill_get(core: MemoryCore, namespace: Namespace, id: str) -> ToolAnswer:
    ref = _text(id, "id")
    skill = await core.get_skill(ref, None, namespace)
    if skill is None:
        return ToolAnswer(f"No skill with id {ref}.", {"found": False})
    return ToolAnswer(
        f"# {skill.name}\n{skill.invocation_guide}", {"found": True, "skill": _jsonable(skill)}
    )
