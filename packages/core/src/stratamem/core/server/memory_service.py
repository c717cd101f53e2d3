"""``stratamem.v1.MemoryService``: one handler per ``MemoryCore`` method, decoded with the codec.

Every handler authorizes the namespaces it touches (tokens are namespace-scoped), turns the gRPC
deadline into the core's absolute ``deadline_at`` for turn start and search, and streams events.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import message_factory

from stratamem.contract import codec
from stratamem.contract.dtos import Event, ListQuery, Namespace
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.events import event_namespace
from stratamem.core.server.errors import OutOfRange
from stratamem.core.server.rpc import Call, Wrapper
from stratamem.v1 import memory_pb2 as m
from stratamem.v1 import types_pb2 as t


def _ns(msg: Any) -> Namespace | None:
    return codec.decode(msg.namespace, Namespace) if msg.HasField("namespace") else None


def _p(dto: Any) -> Any:
    """The wire message of a DTO (typed ``Any``: handlers return the concrete message types)."""
    return codec.to_proto(dto)


def _opt(msg: Any, name: str) -> Any:
    return getattr(msg, name) if msg.HasField(name) else None


def _json_object(text: str, field: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, f"{field} is not valid JSON", {"field": field}
        ) from exc
    if not isinstance(value, dict):
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, f"{field} must be a JSON object", {"field": field}
        )
    return value


def _decode(msg: Any) -> Any:
    try:
        return codec.from_proto(msg)
    except StratamemError:
        raise
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT,
            f"malformed {msg.DESCRIPTOR.name}: {exc}"[:300],
            {"message": msg.DESCRIPTOR.name},
        ) from exc


async def _owner_of(core: Any, table: str, row_id: str) -> Namespace | None:
    owner: Namespace | None = await (
        core.session_owner(row_id) if table == "sessions" else core.episode_owner(row_id)
    )
    return owner


class MemoryServicer:
    """Handlers bound to one core and one way of identifying callers."""

    def __init__(self, core: Any, wrapper: Wrapper, closing: asyncio.Event | None = None) -> None:
        self.core = core
        self.w = wrapper
        #: set when the server drains: open event streams end cleanly instead of holding the drain
        self.closing = closing or asyncio.Event()

    # -- access helpers
    async def _check_row(self, call: Call, table: str, row_id: str) -> None:
        """Session/episode-addressed calls: a scoped token may only touch rows of its namespaces."""
        if call.principal.unrestricted:
            return
        owner = await _owner_of(self.core, table, row_id)
        if owner is not None:
            call.namespace(owner)

    def _list_query(self, req: Any, call: Call) -> ListQuery:
        q: ListQuery = _decode(req)
        if not call.principal.unrestricted:
            if q.include_all_namespaces:
                raise StratamemError(
                    ErrorCode.PERMISSION_DENIED, "include_all_namespaces needs the owner"
                )
            q = replace(q, namespace=call.namespace(q.namespace))
        return q

    # -- lifecycle
    async def Health(self, req: m.HealthRequest, call: Call) -> Any:
        if not call.principal.unrestricted:  # its namespaces' figures, as the viewer answers it
            return _p(await self.core.scoped_health(call.principal.allows))
        return _p(await self.core.health())

    async def StorageStats(self, req: m.StorageStatsRequest, call: Call) -> Any:
        """``doctor``'s table statistics, read in the owning process (the only one with the store)."""
        if not call.principal.unrestricted:
            raise StratamemError(ErrorCode.PERMISSION_DENIED, "storage statistics need the owner")
        stats: dict[str, Any] = {"tables": None, "sqlite_bytes": None}
        store = getattr(self.core, "store", None)
        if store is not None:
            stats["tables"] = await store.stats()
        home = getattr(self.core, "home", None)
        if home is not None:
            data = Path(home) / "data"
            stats["sqlite_bytes"] = sum(p.stat().st_size for p in data.glob("stratamem.db*"))
        return m.StorageStatsResponse(stats_json=json.dumps(stats, default=str))

    async def Journal(self, req: m.JournalRequest, call: Call) -> Any:
        """``stratamem journal`` handled by the running writer (a retry is picked up at once)."""
        if not call.principal.unrestricted:
            raise StratamemError(ErrorCode.PERMISSION_DENIED, "the journal needs the owner")
        from stratamem.core.engine.maintenance import journal_action

        out = await journal_action(self.core.journal, req.action, list(req.seqs) or None)
        return m.JournalResponse(result_json=json.dumps(out, default=str))

    async def Flush(self, req: m.FlushRequest, call: Call) -> Any:
        timeout = _opt(req, "timeout_s")
        if timeout is not None and not 0 <= timeout <= 3600:
            raise StratamemError(ErrorCode.INVALID_ARGUMENT, "timeout_s must be in [0, 3600]")
        remaining = call.context.time_remaining()
        if remaining is not None:
            timeout = remaining if timeout is None else min(timeout, remaining)
        return _p(await self.core.flush(timeout))

    # -- sessions / episodes
    async def OpenSession(self, req: m.OpenSessionRequest, call: Call) -> m.OpenSessionResponse:
        ns = _ns(req)
        if not call.principal.unrestricted:
            ns = call.namespace(ns, Namespace(agent_kind=req.agent))
        sid = await self.core.open_session(
            req.agent, _opt(req, "session_id"), ns, _json_object(req.meta_json, "meta_json")
        )
        return m.OpenSessionResponse(session_id=sid)

    async def CloseSession(self, req: m.CloseSessionRequest, call: Call) -> m.CloseSessionResponse:
        await self._check_row(call, "sessions", req.session_id)
        await self.core.close_session(req.session_id, req.reason or "client")
        return m.CloseSessionResponse()

    async def OpenEpisode(self, req: m.OpenEpisodeRequest, call: Call) -> m.OpenEpisodeResponse:
        await self._check_row(call, "sessions", req.session_id)
        eid = await self.core.open_episode(
            req.session_id, _opt(req, "user_message"), _opt(req, "episode_id")
        )
        return m.OpenEpisodeResponse(episode_id=eid)

    async def CloseEpisode(self, req: m.CloseEpisodeRequest, call: Call) -> m.CloseEpisodeResponse:
        await self._check_row(call, "episodes", req.episode_id)
        await self.core.close_episode(req.episode_id)
        return m.CloseEpisodeResponse()

    async def ListEpisodes(self, req: t.ListQuery, call: Call) -> m.ListEpisodesResponse:
        items = await self.core.list_episodes(self._list_query(req, call))
        return m.ListEpisodesResponse(episodes=[_p(x) for x in items])

    async def GetEpisode(self, req: m.GetEpisodeRequest, call: Call) -> m.GetEpisodeResponse:
        ep = await self.core.get_episode(req.episode_id, call.namespace(_ns(req)))
        return m.GetEpisodeResponse(episode=_p(ep)) if ep else m.GetEpisodeResponse()

    # -- per-turn pipeline
    def _turn(self, req: Any, call: Call, deadline: bool) -> Any:
        dto = _decode(req)
        if not call.principal.unrestricted:
            dto = replace(
                dto, namespace=call.namespace(dto.namespace, Namespace(agent_kind=dto.agent))
            )
        if deadline:
            at = call.deadline_at(dto.deadline_at)
            if at != dto.deadline_at:  # a frozen copy only when the gRPC deadline is earlier
                dto = replace(dto, deadline_at=at)
        return dto

    async def _session_turn(self, req: Any, call: Call, deadline: bool) -> Any:
        """A session-addressed turn: a scoped token may not act inside another namespace's
        session (or episode), even naming its own namespace."""
        dto = self._turn(req, call, deadline)
        await self._check_row(call, "sessions", dto.session_id)
        if getattr(dto, "episode_id", None):
            await self._check_row(call, "episodes", dto.episode_id)
        return dto

    async def TurnStart(self, req: t.TurnInput, call: Call) -> Any:
        return _p(await self.core.turn_start(await self._session_turn(req, call, True)))

    async def PrepareTurn(self, req: t.TurnInput, call: Call) -> Any:
        return _p(await self.core.prepare_turn(await self._session_turn(req, call, False)))

    async def TurnEnd(self, req: t.TurnResult, call: Call) -> Any:
        return _p(await self.core.turn_end(await self._session_turn(req, call, False)))

    async def SubmitFeedback(self, req: t.FeedbackInput, call: Call) -> Any:
        dto = _decode(req)
        if not call.principal.unrestricted:
            dto = replace(dto, namespace=call.namespace(dto.namespace))
        return _p(await self.core.submit_feedback(dto))

    async def RecordToolOutcome(
        self, req: t.ToolOutcome, call: Call
    ) -> m.RecordToolOutcomeResponse:
        dto = _decode(req)
        await self._check_row(call, "sessions", dto.session_id)
        await self.core.record_tool_outcome(dto)
        return m.RecordToolOutcomeResponse()

    async def RecordSubagentOutcome(self, req: t.SubagentOutcome, call: Call) -> Any:
        return _p(
            await self.core.record_subagent_outcome(await self._session_turn(req, call, False))
        )

    # -- queries
    async def Search(self, req: t.RetrievalQuery, call: Call) -> Any:
        query = self._turn(req, call, True)
        if not query.reason:  # unset on the wire: the default the proto documents
            query = replace(query, reason="tool_driven")
        return _p(await self.core.search(query))

    async def Timeline(self, req: m.TimelineRequest, call: Call) -> m.TimelineResponse:
        items = await self.core.timeline(req.episode_id, call.namespace(_ns(req)))
        return m.TimelineResponse(traces=[_p(x) for x in items])

    # -- traces
    async def GetTrace(self, req: m.GetTraceRequest, call: Call) -> m.GetTraceResponse:
        tr = await self.core.get_trace(req.trace_id, call.namespace(_ns(req)))
        return m.GetTraceResponse(trace=_p(tr)) if tr else m.GetTraceResponse()

    async def ListTraces(self, req: t.ListQuery, call: Call) -> m.ListTracesResponse:
        items = await self.core.list_traces(self._list_query(req, call))
        return m.ListTracesResponse(traces=[_p(x) for x in items])

    async def UpdateTrace(self, req: m.UpdateTraceRequest, call: Call) -> m.UpdateTraceResponse:
        patch = _decode(req.patch)
        tr = await self.core.update_trace(req.trace_id, patch, call.namespace(_ns(req)))
        return m.UpdateTraceResponse(trace=_p(tr)) if tr else m.UpdateTraceResponse()

    async def DeleteTraces(self, req: m.DeleteTracesRequest, call: Call) -> m.DeleteTracesResponse:
        n = await self.core.delete_traces(list(req.trace_ids), call.namespace(_ns(req)))
        return m.DeleteTracesResponse(deleted=n)

    # -- policies
    async def GetPolicy(self, req: m.GetPolicyRequest, call: Call) -> m.GetPolicyResponse:
        p = await self.core.get_policy(req.policy_id, call.namespace(_ns(req)))
        return m.GetPolicyResponse(policy=_p(p)) if p else m.GetPolicyResponse()

    async def ListPolicies(self, req: t.ListQuery, call: Call) -> m.ListPoliciesResponse:
        items = await self.core.list_policies(self._list_query(req, call))
        return m.ListPoliciesResponse(policies=[_p(x) for x in items])

    async def SetPolicyStatus(
        self, req: m.SetPolicyStatusRequest, call: Call
    ) -> m.SetPolicyStatusResponse:
        p = await self.core.set_policy_status(req.policy_id, req.status, call.namespace(_ns(req)))
        return m.SetPolicyStatusResponse(policy=_p(p)) if p else m.SetPolicyStatusResponse()

    async def DeletePolicy(self, req: m.DeletePolicyRequest, call: Call) -> m.DeleteResponse:
        ok = await self.core.delete_policy(req.policy_id, call.namespace(_ns(req)))
        return m.DeleteResponse(deleted=ok)

    # -- world models
    async def GetWorldModel(
        self, req: m.GetWorldModelRequest, call: Call
    ) -> m.GetWorldModelResponse:
        wm = await self.core.get_world_model(req.world_model_id, call.namespace(_ns(req)))
        return m.GetWorldModelResponse(world_model=_p(wm)) if wm else m.GetWorldModelResponse()

    async def ListWorldModels(self, req: t.ListQuery, call: Call) -> m.ListWorldModelsResponse:
        items = await self.core.list_world_models(self._list_query(req, call))
        return m.ListWorldModelsResponse(world_models=[_p(x) for x in items])

    async def DeleteWorldModel(
        self, req: m.DeleteWorldModelRequest, call: Call
    ) -> m.DeleteResponse:
        ok = await self.core.delete_world_model(req.world_model_id, call.namespace(_ns(req)))
        return m.DeleteResponse(deleted=ok)

    # -- skills
    async def GetSkill(self, req: m.GetSkillRequest, call: Call) -> m.GetSkillResponse:
        options = _decode(req.options) if req.HasField("options") else None
        sk = await self.core.get_skill(req.skill_id, options, call.namespace(_ns(req)))
        return m.GetSkillResponse(skill=_p(sk)) if sk else m.GetSkillResponse()

    async def ListSkills(self, req: t.ListQuery, call: Call) -> m.ListSkillsResponse:
        items = await self.core.list_skills(self._list_query(req, call))
        return m.ListSkillsResponse(skills=[_p(x) for x in items])

    async def ArchiveSkill(self, req: m.ArchiveSkillRequest, call: Call) -> Any:
        sk = await self.core.archive_skill(
            req.skill_id, req.reason or "manual", call.namespace(_ns(req))
        )
        return _p(sk)

    async def DeleteSkill(self, req: m.DeleteSkillRequest, call: Call) -> m.DeleteResponse:
        ok = await self.core.delete_skill(req.skill_id, call.namespace(_ns(req)))
        return m.DeleteResponse(deleted=ok)

    # -- events
    async def SubscribeEvents(
        self, req: m.SubscribeEventsRequest, call: Call
    ) -> AsyncIterator[t.Event]:
        since = _opt(req, "since_seq")
        bus = getattr(self.core, "bus", None)
        if since is not None and bus is not None:
            epoch = _opt(req, "epoch")
            if epoch is not None and epoch != bus.epoch:
                raise OutOfRange(
                    f"epoch {epoch!r} is not the server's current epoch; resubscribe without a seq",
                    {"epoch": bus.epoch, "requested_epoch": epoch, "oldest_seq": bus.oldest_seq()},
                )
            newest = bus.recent()[-1].seq if bus.recent() else 0
            if since < 0 or since > newest or (since and since < bus.oldest_seq() - 1):
                raise OutOfRange(
                    f"seq {since} cannot be resumed (buffered {bus.oldest_seq()}..{newest})",
                    {"epoch": bus.epoch, "oldest_seq": bus.oldest_seq(), "newest_seq": newest},
                )
        principal = call.principal
        if principal.unrestricted:
            stream = self.core.subscribe_events(since, tuple(req.types))
        else:  # a scoped token gets the events of its own namespaces, nothing system-wide

            def allowed(event: Event) -> bool:
                ns = event_namespace(event)
                return ns is not None and principal.allows(ns)

            stream = self.core.bus.subscribe(since, tuple(req.types), allowed)
        closing = asyncio.ensure_future(self.closing.wait())
        try:
            while True:
                nxt = asyncio.ensure_future(anext(stream))
                done, _ = await asyncio.wait({nxt, closing}, return_when=asyncio.FIRST_COMPLETED)
                if nxt not in done:
                    nxt.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await nxt
                    return
                try:
                    event = nxt.result()
                except StopAsyncIteration:
                    return
                yield _p(event)
        finally:
            closing.cancel()
            with contextlib.suppress(Exception):
                await stream.aclose()

    # -- registration
    def add_to_server(self, server: grpc.aio.Server) -> None:
        server.add_generic_rpc_handlers((self.generic_handler(),))

    def generic_handler(self) -> grpc.GenericRpcHandler:
        """Handlers for every RPC of the service descriptor; requests are parsed by the wrapper."""
        service = m.DESCRIPTOR.services_by_name["MemoryService"]
        handlers: dict[str, grpc.RpcMethodHandler] = {}
        for method in service.methods:
            fn = getattr(self, method.name)
            req_cls = message_factory.GetMessageClass(method.input_type)
            path = f"MemoryService/{method.name}"
            if method.server_streaming:
                handlers[method.name] = grpc.unary_stream_rpc_method_handler(
                    self.w.stream(path, fn, req_cls),
                    response_serializer=_serialize,
                )
            else:
                handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                    self.w.unary(path, fn, req_cls),
                    response_serializer=_serialize,
                )
        return grpc.method_handlers_generic_handler(service.full_name, handlers)


def _serialize(msg: Any) -> bytes:
    data: bytes = msg.SerializeToString()
    return data
