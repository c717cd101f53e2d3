"""The viewer's JSON API over the running core: one method per route, typed errors, nothing cached.

Reads span every namespace of the home (the viewer is the owner's console); a query that needs a
namespace (retrieval preview) takes ``namespace=agent/profile``, else the newest trace's owner.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import (
    FeedbackInput,
    ListQuery,
    Namespace,
    RetrievalQuery,
    TracePatch,
)
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core import __version__
from stratamem.core.storage.ownership import Scope
from stratamem.core.telemetry import get_logger
from stratamem.core.viewer import config_api, logs, workspace_api
from stratamem.core.viewer.http import HttpError, Request
from stratamem.core.viewer.metrics import Metrics

_log = get_logger("viewer")

PREVIEW_AGENT = "viewer"
MAX_QUERY_CHARS = 2000


def to_json(value: Any) -> Any:
    """DTO (frozen dataclass) -> plain JSON-able data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def _bad(message: str, **details: Any) -> StratamemError:
    return StratamemError(ErrorCode.INVALID_ARGUMENT, message, details)


def _int(req: Request, name: str, default: int, lo: int, hi: int) -> int:
    raw = req.query.get(name)
    if raw in (None, ""):
        return default
    assert raw is not None
    try:
        value = int(raw)
    except ValueError:
        raise _bad(f"{name} must be an integer", field=name) from None
    if not lo <= value <= hi:
        raise _bad(f"{name} must be between {lo} and {hi}", field=name)
    return value


def parse_namespace(raw: str | None) -> Namespace | None:
    if not raw:
        return None
    agent, sep, profile = raw.partition("/")
    if not agent.strip() or "/" in profile or (sep and not profile.strip()):
        raise _bad(f"namespace must be AGENT/PROFILE, got {raw!r}", field="namespace")
    return Namespace(agent_kind=agent.strip(), profile_id=profile.strip() or "default")


def _ns_of(row: dict[str, Any]) -> Namespace:
    return Namespace(
        agent_kind=str(row.get("owner_agent_kind") or "unknown"),
        profile_id=str(row.get("owner_profile_id") or "default"),
        workspace_id=row.get("owner_workspace_id"),
    )


def _query_text(req: Request, name: str = "q", *, required: bool = True) -> str:
    text = req.query.get(name, "")
    if required and not text.strip():
        raise _bad(f"{name} is required", field=name)
    if len(text) > MAX_QUERY_CHARS:
        raise _bad(f"{name} is too long (max {MAX_QUERY_CHARS} characters)", field=name)
    return text


class ViewerApi:
    """Route handlers bound to one open core (``LocalCore``)."""

    def __init__(self, core: Any, *, hub: logs.LogHub, metrics: Metrics, url: str = "") -> None:
        self.core = core
        self.home = Path(core.home)
        self.hub = hub
        self.metrics = metrics
        self.url = url
        self.started_at = int(time.time() * 1000)
        self.workspace = workspace_api.WorkspaceApi(core)

    # ------------------------------------------------------------------ helpers
    async def _owner(self, table: str, row_id: str) -> Namespace | None:
        """The owner namespace of a row (any namespace), or None if it does not exist."""
        if table == "episodes":
            rows = await self.core.services.run_db(
                lambda: self.core.db.query(
                    "SELECT owner_agent_kind, owner_profile_id, owner_workspace_id "
                    "FROM episodes WHERE id=?",
                    (row_id,),
                )
            )
            return _ns_of(dict(rows[0])) if rows else None
        if table == "traces":
            for r in self.core.journal.pending_rows("trace"):
                if r.get("id") == row_id:
                    return _ns_of(r)
        rows = await self.core.store.get_rows(table, [row_id], Scope.everything("viewer.owner_of"))
        return _ns_of(rows[0]) if rows else None

    def _list_query(self, req: Request) -> ListQuery:
        ns = parse_namespace(req.query.get("namespace"))
        q = _query_text(req, required=False) or None
        return ListQuery(
            limit=_int(req, "limit", 50, 1, 500),
            offset=_int(req, "offset", 0, 0, 10**9),
            status=req.query.get("status") or None,
            session_id=req.query.get("session_id") or None,
            q=q,
            namespace=ns,
            include_all_namespaces=ns is None,
        )

    async def namespaces(self) -> list[dict[str, Any]]:
        rows = await self.core.store.scan(
            "traces",
            Scope.everything("viewer.namespaces"),
            None,
            10**6,
            columns=["owner_agent_kind", "owner_profile_id", "ts"],
        )
        rows += [
            {k: r.get(k) for k in ("owner_agent_kind", "owner_profile_id", "ts")}
            for r in self.core.journal.pending_rows("trace")
        ]
        found: dict[str, dict[str, Any]] = {}
        for r in rows:
            key = (
                f"{r.get('owner_agent_kind') or 'unknown'}/{r.get('owner_profile_id') or 'default'}"
            )
            cur = found.setdefault(key, {"namespace": key, "traces": 0, "last_ts": 0})
            cur["traces"] += 1
            cur["last_ts"] = max(cur["last_ts"], int(r.get("ts") or 0))
        return sorted(found.values(), key=lambda d: -int(d["last_ts"]))

    async def _default_namespace(self) -> Namespace:
        spaces = await self.namespaces()
        if spaces:
            parsed = parse_namespace(str(spaces[0]["namespace"]))
            assert parsed is not None
            return parsed
        ns: Namespace = self.core.services.default_namespace
        return ns

    # ------------------------------------------------------------------ system
    async def system(self, req: Request) -> dict[str, Any]:
        health = await self.core.health()
        home = self.home
        return {
            "version": __version__,
            "pid": os.getpid(),
            "viewer_url": self.url,
            "started_at": self.started_at,
            "paths": {
                "home": str(home),
                "config": str(home / "config.yaml"),
                "db": str(home / "data" / "stratamem.db"),
                "lance": str(home / "data" / "lance"),
                "logs": str(home / "logs"),
            },
            "health": to_json(health),
            "namespaces": await self.namespaces(),
        }

    async def recent_events(self, req: Request) -> dict[str, Any]:
        limit = _int(req, "limit", 50, 1, 1000)
        events = self.core.bus.recent()[-limit:]
        from stratamem.core.telemetry.redact import redact

        return {"items": [redact(to_json(e)) for e in reversed(events)]}

    async def metrics_view(self, req: Request) -> dict[str, Any]:
        every = Scope.everything("viewer.metrics")
        rows = await self.core.store.scan("traces", every, None, 10**6, columns=["ts"])
        stamps = [int(r["ts"]) for r in rows] + [
            int(r.get("ts") or 0) for r in self.core.journal.pending_rows("trace")
        ]
        return {
            "memory_growth": Metrics.growth(stamps),
            "recall_latency": self.metrics.latencies(),
        }

    # ------------------------------------------------------------------ config
    async def get_config(self, req: Request) -> dict[str, Any]:
        return await asyncio.to_thread(config_api.read, self.home)

    async def patch_config(self, req: Request) -> dict[str, Any]:
        body = req.json_object()
        out = await asyncio.to_thread(config_api.patch, self.home, body)
        _log.info("config.patched", keys=sorted(body))
        return out

    # ------------------------------------------------------------------ traces
    async def list_traces(self, req: Request) -> dict[str, Any]:
        query = self._list_query(req)
        items = await self.core.list_traces(query)
        return {"items": to_json(items), "limit": query.limit, "offset": query.offset}

    async def get_trace(self, req: Request) -> dict[str, Any]:
        tid = req.params["id"]
        ns = await self._owner("traces", tid)
        trace = await self.core.get_trace(tid, ns) if ns is not None else None
        if trace is None:
            raise StratamemError(
                ErrorCode.TRACE_NOT_FOUND, f"trace {tid!r} not found", {"trace_id": tid}
            )
        return to_json(trace)  # type: ignore[no-any-return]

    async def patch_trace(self, req: Request) -> dict[str, Any]:
        tid = req.params["id"]
        body = req.json_object()
        unknown = sorted(set(body) - {"summary", "tags", "user_text", "agent_text"})
        if unknown:
            raise _bad(f"unknown field {unknown[0]!r} (editable: summary, tags)", field=unknown[0])
        tags = body.get("tags")
        if tags is not None and (
            not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)
        ):
            raise _bad("tags must be a list of strings", field="tags")
        for name in ("summary", "user_text", "agent_text"):
            if body.get(name) is not None and not isinstance(body[name], str):
                raise _bad(f"{name} must be a string", field=name)
        patch = TracePatch(
            summary=body.get("summary"),
            user_text=body.get("user_text"),
            agent_text=body.get("agent_text"),
            tags=tuple(t.strip() for t in tags if t.strip()) if tags is not None else None,
        )
        ns = await self._owner("traces", tid)
        trace = await self.core.update_trace(tid, patch, ns) if ns is not None else None
        if trace is None:
            raise StratamemError(
                ErrorCode.TRACE_NOT_FOUND, f"trace {tid!r} not found", {"trace_id": tid}
            )
        return to_json(trace)  # type: ignore[no-any-return]

    async def delete_trace(self, req: Request) -> dict[str, Any]:
        tid = req.params["id"]
        ns = await self._owner("traces", tid)
        if ns is None:
            raise StratamemError(
                ErrorCode.TRACE_NOT_FOUND, f"trace {tid!r} not found", {"trace_id": tid}
            )
        deleted = await self.core.delete_traces([tid], ns)
        return {"deleted": int(deleted)}

    # ------------------------------------------------------------------ learning layers
    async def list_policies(self, req: Request) -> dict[str, Any]:
        query = self._list_query(req)
        return {"items": to_json(await self.core.list_policies(query)), "limit": query.limit}

    async def get_policy(self, req: Request) -> dict[str, Any]:
        return await self._detail("policies", req.params["id"], self.core.get_policy, "policy")

    async def list_world_models(self, req: Request) -> dict[str, Any]:
        query = self._list_query(req)
        return {"items": to_json(await self.core.list_world_models(query)), "limit": query.limit}

    async def get_world_model(self, req: Request) -> dict[str, Any]:
        return await self._detail(
            "world_models", req.params["id"], self.core.get_world_model, "world_model"
        )

    async def list_skills(self, req: Request) -> dict[str, Any]:
        query = self._list_query(req)
        return {"items": to_json(await self.core.list_skills(query)), "limit": query.limit}

    async def get_skill(self, req: Request) -> dict[str, Any]:
        sid = req.params["id"]
        ns = await self._owner("skills", sid)
        skill = await self.core.get_skill(sid, None, ns) if ns is not None else None
        if skill is None:
            raise StratamemError(
                ErrorCode.SKILL_NOT_FOUND, f"skill {sid!r} not found", {"skill_id": sid}
            )
        return to_json(skill)  # type: ignore[no-any-return]

    async def _detail(self, table: str, row_id: str, getter: Any, kind: str) -> dict[str, Any]:
        ns = await self._owner(table, row_id)
        item = await getter(row_id, ns) if ns is not None else None
        if item is None:
            code = {
                "policy": ErrorCode.POLICY_NOT_FOUND,
                "world_model": ErrorCode.WORLD_MODEL_NOT_FOUND,
            }[kind]
            raise StratamemError(code, f"{kind} {row_id!r} not found", {f"{kind}_id": row_id})
        return to_json(item)  # type: ignore[no-any-return]

    async def list_episodes(self, req: Request) -> dict[str, Any]:
        query = self._list_query(req)
        return {"items": to_json(await self.core.list_episodes(query)), "limit": query.limit}

    async def get_episode(self, req: Request) -> dict[str, Any]:
        eid = req.params["id"]
        ns = await self._owner("episodes", eid)
        episode = await self.core.get_episode(eid, ns) if ns is not None else None
        if episode is None:
            raise StratamemError(
                ErrorCode.EPISODE_NOT_FOUND, f"episode {eid!r} not found", {"episode_id": eid}
            )
        traces = await self.core.timeline(eid, ns)
        return {"episode": to_json(episode), "timeline": to_json(traces)}

    # ------------------------------------------------------------------ feedback / retrieval
    async def feedback(self, req: Request) -> dict[str, Any]:
        body = req.json_object()
        allowed = {"trace_id", "episode_id", "polarity", "magnitude", "rationale"}
        unknown = sorted(set(body) - allowed)
        if unknown:
            raise _bad(f"unknown field {unknown[0]!r}", field=unknown[0])
        polarity = body.get("polarity", "neutral")
        if polarity not in ("positive", "negative", "neutral"):
            raise _bad("polarity must be positive, negative or neutral", field="polarity")
        magnitude = body.get("magnitude", 1.0)
        if isinstance(magnitude, bool) or not isinstance(magnitude, int | float):
            raise _bad("magnitude must be a number", field="magnitude")
        if not 0 <= float(magnitude) <= 1:
            raise _bad("magnitude must be between 0 and 1", field="magnitude")
        trace_id, episode_id = body.get("trace_id"), body.get("episode_id")
        if not trace_id and not episode_id:
            raise _bad("name a trace_id or an episode_id", field="trace_id")
        for name, value in (("trace_id", trace_id), ("episode_id", episode_id)):
            if value is not None and not isinstance(value, str):
                raise _bad(f"{name} must be a string", field=name)
        rationale = body.get("rationale")
        if rationale is not None and not isinstance(rationale, str):
            raise _bad("rationale must be a string", field="rationale")
        ns = None
        if trace_id:
            ns = await self._owner("traces", trace_id)
            if ns is None:
                raise StratamemError(
                    ErrorCode.TRACE_NOT_FOUND,
                    f"trace {trace_id!r} not found",
                    {"trace_id": trace_id},
                )
        fb = await self.core.submit_feedback(
            FeedbackInput(
                channel="explicit",
                polarity=polarity,
                magnitude=float(magnitude),
                trace_id=trace_id,
                episode_id=episode_id,
                rationale=rationale,
                raw={"source": "viewer"},
                namespace=ns,
            )
        )
        return to_json(fb)  # type: ignore[no-any-return]

    async def retrieval_preview(self, req: Request) -> dict[str, Any]:
        """What turn_start would inject for ``q`` (the same engine, no session or episode writes)."""
        q = _query_text(req)
        reason = req.query.get("reason", "turn_start")
        if reason not in ("turn_start", "tool_driven"):
            raise _bad("reason must be turn_start or tool_driven", field="reason")
        ns = parse_namespace(req.query.get("namespace")) or await self._default_namespace()
        started = time.perf_counter()
        result = await self.core.search(
            RetrievalQuery(agent=PREVIEW_AGENT, query=q, namespace=ns, reason=reason)
        )
        took = (time.perf_counter() - started) * 1000
        tiers: dict[str, list[Any]] = {"1": [], "2": [], "3": []}
        for rank, hit in enumerate(sorted(result.hits, key=lambda h: -h.score), 1):
            tiers.setdefault(str(hit.tier), []).append({"rank": rank, **to_json(hit)})
        return {
            "query": q,
            "reason": reason,
            "namespace": f"{ns.agent_kind}/{ns.profile_id}",
            "tiers": tiers,
            "hits": len(result.hits),
            "injected_context": result.injected_context,
            "tier_latency_ms": to_json(result.tier_latency_ms),
            "cut_off": result.cut_off,
            "took_ms": round(took, 1),
        }

    # ------------------------------------------------------------------ logs
    async def logs_tail(self, req: Request) -> dict[str, Any]:
        level = logs.check_level(req.query.get("level"))
        channel = req.query.get("channel") or None
        limit = _int(req, "limit", 200, 1, logs.MAX_TAIL)
        items = await asyncio.to_thread(
            logs.tail, self.home / "logs", level, channel, limit, list(self.hub.ring)
        )
        return {"items": items, "level": level, "channel": channel, "limit": limit}


def not_found(path: str) -> HttpError:
    return HttpError(404, ErrorCode.NOT_FOUND, f"no route {path!r}", {"path": path})
