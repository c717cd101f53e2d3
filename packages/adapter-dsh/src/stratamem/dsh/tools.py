"""The six model tools (hosts.md §5.4), argument checks first: bad input raises ``invalid_argument``.

Every tool resolves the namespace from the calling session; ``memos_search`` uses the recall deadline
and zero malformed-output retries.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from stratamem.contract.dtos import ListQuery, RetrievalQuery, SkillGetOptions, TopK
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.protocol import MemoryCore
from stratamem.dsh.host_api import AGENT
from stratamem.dsh.namespace import SessionInfo, resolve_namespace
from stratamem.dsh.recall import recall_budget_ms

TOOL_NAMES = (
    "memos_search",
    "memos_get",
    "memos_timeline",
    "memos_environment",
    "memos_skill_list",
    "memos_skill_get",
)
NO_MEMORIES = "No relevant memories found."
TOOL_RESULT_MAX_CHARS = 1200


def _bad(message: str, field: str) -> StratamemError:
    return StratamemError(ErrorCode.INVALID_ARGUMENT, message, {"field": field})


def _str(args: dict[str, Any], name: str, *, required: bool = False) -> str | None:
    value = args.get(name)
    if value is None:
        if required:
            raise _bad(f"{name} is required", name)
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise _bad(f"{name} must be a non-empty string", name)
    return value


def _int(args: dict[str, Any], name: str, lo: int, hi: int, default: int | None) -> int | None:
    value = args.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise _bad(f"{name} must be an integer in {lo}..{hi}", name)
    return value


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


class DshTools:
    def __init__(self, core: MemoryCore) -> None:
        self.core = core

    async def call(
        self,
        name: str,
        args: dict[str, Any],
        info: SessionInfo,
        *,
        call_id: str = "",
        deadline_at: int | None = None,
        max_chars: int = TOOL_RESULT_MAX_CHARS,
        recall_timeout_ms: int | None = None,
        episode_id: str | None = None,
    ) -> dict[str, Any]:
        if not isinstance(args, dict):
            raise _bad("tool arguments must be a JSON object", "args")
        handlers: dict[str, Callable[..., Awaitable[dict[str, Any]]]] = {
            "memos_search": self.search,
            "memos_get": self.get,
            "memos_timeline": self.timeline,
            "memos_environment": self.environment,
            "memos_skill_list": self.skill_list,
            "memos_skill_get": self.skill_get,
        }
        handler = handlers.get(name)
        if handler is None:
            raise StratamemError(ErrorCode.UNKNOWN_METHOD, f"unknown tool {name!r}", {"tool": name})
        limit = max(128, max_chars or TOOL_RESULT_MAX_CHARS)
        if name == "memos_search":
            budget_at = int(time.time() * 1000) + recall_budget_ms(recall_timeout_ms)
            deadline = budget_at if not deadline_at else min(deadline_at, budget_at)
            return await self.search(args, info, deadline_at=deadline, max_chars=limit)
        if name == "memos_skill_get":
            return await self.skill_get(args, info, call_id=call_id, episode_id=episode_id)
        return await handler(args, info, max_chars=limit)

    async def search(
        self, args: dict[str, Any], info: SessionInfo, *, deadline_at: int, max_chars: int
    ) -> dict[str, Any]:
        query = _str(args, "query", required=True) or ""
        max_results = _int(args, "maxResults", 1, 50, None)
        tiers = {t: _int(args, f"{t}topK", 0, 100, None) for t in ("tier1", "tier2", "tier3")}
        scope = args.get("sessionScope", False)
        if not isinstance(scope, bool):
            raise _bad("sessionScope must be a boolean", "sessionScope")
        top_k = None
        if max_results is not None or any(v is not None for v in tiers.values()):
            explicit = any(v is not None for v in tiers.values())
            fill = max_results if max_results is not None else (0 if explicit else None)
            top_k = TopK(**{t: (v if v is not None else fill) for t, v in tiers.items()})
        result = await self.core.search(
            RetrievalQuery(
                agent=AGENT,
                query=query,
                namespace=resolve_namespace(info),
                session_id=info.session_id,
                reason="tool_driven",
                deadline_at=deadline_at,
                llm_filter_malformed_retries=0,
                filters={"session_id": info.session_id} if scope else {},
                top_k=top_k,
            )
        )
        hits = [
            {
                "tier": h.tier,
                "refKind": h.ref_kind,
                "refId": h.ref_id,
                "score": round(h.score, 6),
                "snippet": _clip(h.snippet, max_chars),
            }
            for h in result.hits
        ]
        lat = result.tier_latency_ms
        return {
            "text": result.injected_context if hits and result.injected_context else NO_MEMORIES,
            "hits": hits,
            "tierLatencyMs": {"tier1": lat.tier1, "tier2": lat.tier2, "tier3": lat.tier3},
        }

    async def get(
        self, args: dict[str, Any], info: SessionInfo, *, max_chars: int
    ) -> dict[str, Any]:
        ref = _str(args, "id", required=True) or ""
        kind = _str(args, "kind") or "trace"
        ns = resolve_namespace(info)
        item: Any
        if kind == "trace":
            item = await self.core.get_trace(ref, ns)
            body = "" if item is None else f"User: {item.user_text}\nAgent: {item.agent_text}"
        elif kind == "policy":
            item = await self.core.get_policy(ref, ns)
            body = "" if item is None else f"{item.title}\n{item.trigger}\n{item.procedure}"
        elif kind == "world_model":
            item = await self.core.get_world_model(ref, ns)
            body = "" if item is None else f"{item.title}\n{item.body}"
        else:
            raise _bad("kind must be trace, policy or world_model", "kind")
        if item is None:
            return {"text": f"No {kind} {ref} found.", "found": False, "kind": kind, "id": ref}
        body = _clip(body.strip(), max_chars)
        meta = {k: v for k, v in asdict(item).items() if isinstance(v, str | int | float | bool)}
        return {"text": body, "found": True, "kind": kind, "id": ref, "body": body, "meta": meta}

    async def timeline(
        self, args: dict[str, Any], info: SessionInfo, *, max_chars: int
    ) -> dict[str, Any]:
        episode = _str(args, "episodeId", required=True) or ""
        limit = _int(args, "limit", 1, 100, 20) or 20
        try:
            traces = (await self.core.timeline(episode, resolve_namespace(info)))[:limit]
        except StratamemError as exc:
            if exc.code != ErrorCode.EPISODE_NOT_FOUND:
                raise
            traces = []  # an unknown episode is an empty timeline for the model, not a tool failure
        items = [
            {
                "id": t.id,
                "ts": t.ts,
                "userText": _clip(t.user_text, max_chars),
                "agentText": _clip(t.agent_text, max_chars),
            }
            for t in traces
        ]
        lines = [f"- [{i['id']}] {i['userText']} → {i['agentText']}" for i in items]
        return {
            "text": "\n".join(lines) or f"No traces in episode {episode}.",
            "episodeId": episode,
            "traces": items,
        }

    async def environment(
        self, args: dict[str, Any], info: SessionInfo, *, max_chars: int
    ) -> dict[str, Any]:
        q = _str(args, "query")
        limit = _int(args, "limit", 1, 30, 5) or 5
        models = await self.core.list_world_models(
            ListQuery(limit=limit, q=q or None, namespace=resolve_namespace(info))
        )
        items = [{"id": m.id, "title": m.title, "body": _clip(m.body, max_chars)} for m in models]
        text = "\n".join(f"- [{i['id']}] {i['title']}: {i['body']}" for i in items)
        return {"text": text or "No environment knowledge found.", "worldModels": items}

    async def skill_list(
        self, args: dict[str, Any], info: SessionInfo, *, max_chars: int
    ) -> dict[str, Any]:
        status = _str(args, "status")
        if status is not None and status not in ("candidate", "active", "archived"):
            raise _bad("status must be candidate, active or archived", "status")
        limit = _int(args, "limit", 1, 50, 10) or 10
        skills = await self.core.list_skills(
            ListQuery(limit=limit, status=status, namespace=resolve_namespace(info))
        )
        items = [{"id": s.id, "name": s.name, "status": s.status, "eta": s.eta} for s in skills]
        text = "\n".join(f"- [{i['id']}] {i['name']} ({i['status']})" for i in items)
        return {"text": text or "No skills found.", "skills": items}

    async def skill_get(
        self, args: dict[str, Any], info: SessionInfo, *, call_id: str, episode_id: str | None
    ) -> dict[str, Any]:
        ref = _str(args, "id", required=True) or ""
        skill = await self.core.get_skill(
            ref,
            SkillGetOptions(
                record_use=True,
                record_trial=True,
                session_id=info.session_id,
                episode_id=episode_id,
                tool_call_id=call_id or None,
            ),
            resolve_namespace(info),
        )
        if skill is None:
            return {"text": f"No skill {ref} found.", "found": False, "id": ref}
        return {
            "text": f"{skill.name}\n{skill.invocation_guide}".strip(),
            "found": True,
            "id": skill.id,
            "name": skill.name,
            "status": skill.status,
            "eta": skill.eta,
        }
