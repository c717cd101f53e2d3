"""The viewer's JSON API over the running core: one method per route, typed errors, nothing cached.

Every read goes through the core's public calls and the engine's services (``engine.overview`` for
the namespaces and the growth figures: SQL aggregates, never a scan of traces), and shows what the
caller may see (``req.access``): the home owner every namespace (or the one ``namespace=`` names),
a scoped token its own namespaces only, under the same ownership rule as gRPC. Every listing pages
(``limit``/``offset``). A query that needs one namespace (retrieval preview, a scoped listing) takes
``namespace=agent/profile``, else the caller's newest namespace.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import (
    Event,
    FeedbackInput,
    ListQuery,
    Namespace,
    RetrievalQuery,
    TracePatch,
    episode_cursor,
    learned_cursor,
    trace_cursor,
)
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core import __version__
from stratamem.core.engine import overview
from stratamem.core.events import event_namespace
from stratamem.core.server.auth import Principal, authorize_namespace
from stratamem.core.telemetry import get_logger
from stratamem.core.validation import MAX_FILTER_CHARS
from stratamem.core.viewer import config_api, logs, workspace_api
from stratamem.core.viewer.http import HttpError, Request
from stratamem.core.viewer.metrics import Metrics

_log = get_logger("viewer")

PREVIEW_AGENT = "viewer"
#: the retrieval preview's query (retrieval clamps what it embeds to 1,500 characters itself)
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


def event_filter(access: Principal) -> Any:
    """Which core events ``access`` may see: all for the owner, else its namespaces' (system-wide
    events, which name no namespace, are the owner's)."""
    if access.unrestricted:
        return lambda e: True

    def shows(event: Event) -> bool:
        ns = event_namespace(event)
        return ns is not None and access.allows(ns)

    return shows


def _query_text(
    req: Request, name: str = "q", *, required: bool = True, max_chars: int = MAX_QUERY_CHARS
) -> str:
    text = req.query.get(name, "")
    if required and not text.strip():
        raise _bad(f"{name} is required", field=name)
    if len(text) > max_chars:
        raise _bad(f"{name} is too long (max {max_chars} characters)", field=name)
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
    @property
    def svc(self) -> Any:
        """The engine's shared services (database thread, store, journal) behind the core."""
        return self.core.services

    async def _spaces(self, access: Principal) -> list[overview.NamespaceFigures]:
        """The namespaces holding memories that ``access`` may see, newest activity first."""
        return await overview.namespaces(self.svc, None if access.unrestricted else access.allows)

    async def _acting(self, req: Request) -> Namespace | None:
        """The namespace a request acts in: ``namespace=`` when the caller may use it; else, for the
        owner, ``None`` (every namespace) and, for a scoped token, its newest namespace."""
        ns = parse_namespace(req.query.get("namespace"))
        if req.access.unrestricted or ns is not None:
            return authorize_namespace(req.access, ns)
        spaces = await self._spaces(req.access)
        if spaces:
            return spaces[0].namespace
        return authorize_namespace(req.access, None)  # its one namespace, or "name one"

    async def _row_namespace(self, req: Request, table: str, row_id: str) -> Namespace | None:
        """The namespace to read or change one row as: its owner when the caller may act there;
        else (a scoped token, a row shared with it) the caller's own, where the engine's
        visibility and ownership rules decide. ``None``: no such row for this caller."""
        owner = await overview.row_owner(self.svc, table, row_id)
        if owner is None:
            return None
        if req.access.allows(owner):
            return owner
        try:
            return await self._acting(req)
        except StratamemError:  # no namespace to act in: the row does not exist for this caller
            return None

    def _list_query(self, req: Request, ns: Namespace | None) -> ListQuery:
        # a listing's filter: the engine's bound, not the preview's
        q = _query_text(req, required=False, max_chars=MAX_FILTER_CHARS) or None
        return ListQuery(
            limit=_int(req, "limit", 50, 1, 500),
            offset=_int(req, "offset", 0, 0, 10**9),
            status=req.query.get("status") or None,
            session_id=req.query.get("session_id") or None,
            q=q,
            namespace=ns,
            include_all_namespaces=ns is None,
            after=req.query.get("after") or None,
        )

    async def _cursor_page(self, req: Request, lister: Any, cursor: Any) -> dict[str, Any]:
        """A keyset-paged listing: ``next`` is the ``after`` cursor of the following page (None
        when this page was not full)."""
        query = self._list_query(req, await self._acting(req))
        items = await lister(query)
        more = len(items) == query.limit
        return {
            "items": to_json(items),
            "limit": query.limit,
            "offset": query.offset,
            "next": cursor(items[-1]) if items and more else None,
        }

    async def namespaces_view(self, req: Request) -> dict[str, Any]:
        limit, offset = _int(req, "limit", 100, 1, 500), _int(req, "offset", 0, 0, 10**9)
        spaces = await self._spaces(req.access)
        return {
            "items": [_figures(f) for f in spaces[offset : offset + limit]],
            "total": len(spaces),
            "limit": limit,
            "offset": offset,
        }

    async def _default_namespace(self, req: Request) -> Namespace:
        acting = await self._acting(req)
        if acting is not None:
            return acting
        spaces = await self._spaces(req.access)
        if spaces:
            return spaces[0].namespace
        ns: Namespace = self.svc.default_namespace
        return ns

    # ------------------------------------------------------------------ system
    async def system(self, req: Request) -> dict[str, Any]:
        figures = await self._spaces(req.access)
        spaces = [_figures(f) for f in figures[:100]]
        health = await self.core.health()
        if not req.access.unrestricted:  # its namespaces' counts; no home paths, pid or backlog
            counts = await overview.scoped_counts(self.svc, req.access.allows)
            return {
                "version": __version__,
                "viewer_url": self.url,
                "started_at": self.started_at,
                "health": {
                    "ok": health.ok,
                    "version": health.version,
                    "mode": health.mode,
                    "counts": counts,
                },
                "access": list(req.access.namespaces),
                "namespaces": spaces,
            }
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
            "access": list(req.access.namespaces),
            "namespaces": spaces,
        }

    async def recent_events(self, req: Request) -> dict[str, Any]:
        limit = _int(req, "limit", 50, 1, 1000)
        shows = event_filter(req.access)
        events = [e for e in self.core.bus.recent() if shows(e)][-limit:]
        from stratamem.core.telemetry.redact import redact

        return {"items": [redact(to_json(e)) for e in reversed(events)]}

    async def metrics_view(self, req: Request) -> dict[str, Any]:
        """Growth of the traces the caller's namespaces own (``namespace=``: that one only) and
        the recall latencies measured in them."""
        ns = parse_namespace(req.query.get("namespace"))
        owners: list[Namespace] | None
        if ns is not None:
            owners = [authorize_namespace(req.access, ns) or ns]
        elif req.access.unrestricted:
            owners = None
        else:
            owners = [f.namespace for f in await self._spaces(req.access)]
        allowed = {f"{o.agent_kind}/{o.profile_id}" for o in owners} if owners is not None else None
        return {
            "memory_growth": await overview.growth(self.svc, owners),
            "recall_latency": self.metrics.latencies(allowed),
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
        """A page of traces, newest first; ``next`` is the ``after`` cursor of the following page."""
        return await self._cursor_page(req, self.core.list_traces, trace_cursor)

    async def get_trace(self, req: Request) -> dict[str, Any]:
        tid = req.params["id"]
        ns = await self._row_namespace(req, "traces", tid)
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
        ns = await self._row_namespace(req, "traces", tid)
        trace = await self.core.update_trace(tid, patch, ns) if ns is not None else None
        if trace is None:
            raise StratamemError(
                ErrorCode.TRACE_NOT_FOUND, f"trace {tid!r} not found", {"trace_id": tid}
            )
        return to_json(trace)  # type: ignore[no-any-return]

    async def delete_trace(self, req: Request) -> dict[str, Any]:
        tid = req.params["id"]
        ns = await self._row_namespace(req, "traces", tid)
        if ns is None or await self.core.get_trace(tid, ns) is None:  # not this caller's to see
            raise StratamemError(
                ErrorCode.TRACE_NOT_FOUND, f"trace {tid!r} not found", {"trace_id": tid}
            )
        deleted = await self.core.delete_traces([tid], ns)
        return {"deleted": int(deleted)}

    # ------------------------------------------------------------------ learning layers
    async def list_policies(self, req: Request) -> dict[str, Any]:
        return await self._cursor_page(req, self.core.list_policies, learned_cursor)

    async def get_policy(self, req: Request) -> dict[str, Any]:
        return await self._detail(req, "policies", self.core.get_policy, "policy")

    async def list_world_models(self, req: Request) -> dict[str, Any]:
        return await self._cursor_page(req, self.core.list_world_models, learned_cursor)

    async def get_world_model(self, req: Request) -> dict[str, Any]:
        return await self._detail(req, "world_models", self.core.get_world_model, "world_model")

    async def list_skills(self, req: Request) -> dict[str, Any]:
        return await self._cursor_page(req, self.core.list_skills, learned_cursor)

    async def get_skill(self, req: Request) -> dict[str, Any]:
        sid = req.params["id"]
        ns = await self._row_namespace(req, "skills", sid)
        skill = await self.core.get_skill(sid, None, ns) if ns is not None else None
        if skill is None:
            raise StratamemError(
                ErrorCode.SKILL_NOT_FOUND, f"skill {sid!r} not found", {"skill_id": sid}
            )
        return to_json(skill)  # type: ignore[no-any-return]

    async def _detail(self, req: Request, table: str, getter: Any, kind: str) -> dict[str, Any]:
        row_id = req.params["id"]
        ns = await self._row_namespace(req, table, row_id)
        item = await getter(row_id, ns) if ns is not None else None
        if item is None:
            code = {
                "policy": ErrorCode.POLICY_NOT_FOUND,
                "world_model": ErrorCode.WORLD_MODEL_NOT_FOUND,
            }[kind]
            raise StratamemError(code, f"{kind} {row_id!r} not found", {f"{kind}_id": row_id})
        return to_json(item)  # type: ignore[no-any-return]

    async def list_episodes(self, req: Request) -> dict[str, Any]:
        """A page of episodes, newest first; ``next`` is the ``after`` cursor of the following page."""
        return await self._cursor_page(req, self.core.list_episodes, episode_cursor)

    async def get_episode(self, req: Request) -> dict[str, Any]:
        eid = req.params["id"]
        ns = await self._row_namespace(req, "episodes", eid)
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
            ns = await self._row_namespace(req, "traces", trace_id)
            if ns is None:
                raise StratamemError(
                    ErrorCode.TRACE_NOT_FOUND,
                    f"trace {trace_id!r} not found",
                    {"trace_id": trace_id},
                )
        elif episode_id:
            ns = await self._row_namespace(req, "episodes", episode_id)
            if ns is None:
                raise StratamemError(
                    ErrorCode.EPISODE_NOT_FOUND,
                    f"episode {episode_id!r} not found",
                    {"episode_id": episode_id},
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
        ns = await self._default_namespace(req)
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


def _figures(f: overview.NamespaceFigures) -> dict[str, Any]:
    return {"namespace": f.key, "traces": f.traces, "episodes": f.episodes, "last_ts": f.last_ts}


def not_found(path: str) -> HttpError:
    return HttpError(404, ErrorCode.NOT_FOUND, f"no route {path!r}", {"path": path})
