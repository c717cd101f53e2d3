"""``RemoteCore``: the ``MemoryCore`` protocol over gRPC, plus a thread-safe blocking facade.

Errors come back as the same ``StratamemError`` (the code travels in trailing metadata); the
channel, its cap on calls in flight and the way back to a service that went away live in
``stratamem.contract.reconnect``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

import grpc

from stratamem.contract import codec
from stratamem.contract.dtos import (
    Episode,
    Event,
    Feedback,
    FeedbackInput,
    FlushResult,
    Health,
    ListQuery,
    Namespace,
    Policy,
    RetrievalQuery,
    RetrievalResult,
    Skill,
    SkillGetOptions,
    SubagentOutcome,
    ToolOutcome,
    Trace,
    TracePatch,
    TurnEndAck,
    TurnInput,
    TurnResult,
    TurnRoute,
    WorldModel,
)
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.reconnect import (
    CHANNEL_OPTIONS,
    DEADLINE_GRACE_S,
    DEFAULT_MAX_IN_FLIGHT,
    DEFAULT_RECONNECT_S,
    ReconnectingClient,
    error_from_rpc,
)
from stratamem.v1 import memory_pb2 as m

if TYPE_CHECKING:
    from stratamem.contract.workspace import RemoteWorkspace

T = TypeVar("T")

#: How a turn key that ``RemoteCore.turn_end`` gave a key-less turn starts.
AUTO_TURN_KEY_PREFIX = "rc-"
#: How long an event stream keeps resubscribing while no service answers (a restart takes seconds).
DEFAULT_EVENTS_RESUME_S = 120.0

__all__ = [
    "AUTO_TURN_KEY_PREFIX",
    "CHANNEL_OPTIONS",
    "DEADLINE_GRACE_S",
    "DEFAULT_EVENTS_RESUME_S",
    "DEFAULT_MAX_IN_FLIGHT",
    "DEFAULT_RECONNECT_S",
    "BlockingRemoteCore",
    "RemoteCore",
    "error_from_rpc",
]


def _ns_field(namespace: Namespace | None) -> dict[str, Any]:
    return {"namespace": codec.to_proto(namespace)} if namespace is not None else {}


def _cut_off(query: RetrievalQuery) -> RetrievalResult:
    """What a recall whose deadline passed while no service answered (the owner handed over)
    returns: the core's own answer to a deadline that passed before it started (an empty safe
    cut-off; nothing routed, nothing stored)."""
    return RetrievalResult(query=query, cut_off=True, packet_id=f"empty-{int(time.time() * 1000)}")


def _recall_of(turn: TurnInput) -> RetrievalQuery:
    """The recall a turn start echoes (as the core builds it from the turn)."""
    return RetrievalQuery(
        agent=turn.agent,
        query=turn.user_text,
        namespace=turn.namespace,
        session_id=turn.session_id,
        episode_id=turn.episode_id,
        reason="turn_start",
        context_hints=dict(turn.context_hints),
        deadline_at=turn.deadline_at,
        llm_filter_malformed_retries=turn.llm_filter_malformed_retries,
    )


class RemoteCore(ReconnectingClient):
    """``MemoryCore`` over a gRPC channel (``unix:/path`` or ``host:port``). Use from one event loop."""

    def __init__(
        self,
        target: str,
        *,
        token: str | None = None,
        root_certificates: bytes | None = None,
        tls: bool = False,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        reconnect_s: float = DEFAULT_RECONNECT_S,
        reconnect: Callable[[], Awaitable[str]] | None = None,
        events_resume_s: float = DEFAULT_EVENTS_RESUME_S,
    ) -> None:
        super().__init__(
            target,
            token=token,
            root_certificates=root_certificates,
            tls=tls,
            max_in_flight=max_in_flight,
            reconnect_s=reconnect_s,
            reconnect=reconnect,
        )
        self.epoch: str | None = None
        #: how long an event stream keeps resubscribing while no service answers
        self.events_resume_s = events_resume_s

    def workspace(self, layout: str = "", *, open_roots: bool = False) -> RemoteWorkspace:
        """The home's workspace memory (``WorkspaceMemoryService``) on this channel, for roots kept
        in ``layout`` ("" = Stratamem's own, ``openclaw`` = an OpenClaw workspace in place);
        ``open_roots`` opens each root first (a host's own workspace; the home's owner only)."""
        from stratamem.contract.workspace import RemoteWorkspace

        return RemoteWorkspace(self, layout, open_roots=open_roots)

    async def __aenter__(self) -> RemoteCore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    # ------------------------------------------------------------------ lifecycle
    async def health(self) -> Health:
        return codec.decode(await self._call("Health", m.HealthRequest()), Health)

    async def storage_stats(self) -> dict[str, Any]:
        """The owner's storage figures (``stratamem doctor``); the home's owner only."""
        res = await self._call("StorageStats", m.StorageStatsRequest())
        data: dict[str, Any] = json.loads(res.stats_json or "{}")
        return data

    async def journal_admin(self, action: str, seqs: list[int] | None = None) -> dict[str, Any]:
        """``stratamem journal list|retry|discard`` in the owning service (the home's owner only):
        a retried entry goes straight back to the running writer."""
        res = await self._call("Journal", m.JournalRequest(action=action, seqs=seqs or []))
        data: dict[str, Any] = json.loads(res.result_json or "{}")
        return data

    async def flush(self, timeout_s: float | None = None) -> FlushResult:
        req = m.FlushRequest() if timeout_s is None else m.FlushRequest(timeout_s=timeout_s)
        timeout = None if timeout_s is None else timeout_s + 5.0
        return codec.decode(await self._call("Flush", req, timeout), FlushResult)

    async def shutdown(self) -> None:
        """Close the channel (the server and its core keep running for other clients)."""
        if self._closed:
            return
        self._closed = True
        await self._channel.close()

    # ------------------------------------------------------------------ sessions / episodes
    async def open_session(
        self,
        agent: str,
        session_id: str | None = None,
        namespace: Namespace | None = None,
        meta: dict[str, object] | None = None,
    ) -> str:
        req = m.OpenSessionRequest(
            agent=agent, meta_json=codec.encode_json(meta) if meta else "", **_ns_field(namespace)
        )
        if session_id is not None:
            req.session_id = session_id
        resp = await self._call("OpenSession", req)
        return str(resp.session_id)

    async def close_session(self, session_id: str, reason: str = "client") -> None:
        await self._call(
            "CloseSession", m.CloseSessionRequest(session_id=session_id, reason=reason)
        )

    async def open_episode(
        self, session_id: str, user_message: str | None = None, episode_id: str | None = None
    ) -> str:
        req = m.OpenEpisodeRequest(session_id=session_id)
        if user_message is not None:
            req.user_message = user_message
        if episode_id is not None:
            req.episode_id = episode_id
        resp = await self._call("OpenEpisode", req)
        return str(resp.episode_id)

    async def close_episode(self, episode_id: str) -> None:
        await self._call("CloseEpisode", m.CloseEpisodeRequest(episode_id=episode_id))

    async def list_episodes(self, query: ListQuery) -> list[Episode]:
        resp = await self._call("ListEpisodes", codec.to_proto(query))
        return [codec.decode(x, Episode) for x in resp.episodes]

    async def get_episode(
        self, episode_id: str, namespace: Namespace | None = None
    ) -> Episode | None:
        resp = await self._call(
            "GetEpisode", m.GetEpisodeRequest(episode_id=episode_id, **_ns_field(namespace))
        )
        return codec.decode(resp.episode, Episode) if resp.HasField("episode") else None

    # ------------------------------------------------------------------ per-turn pipeline
    async def turn_start(self, turn: TurnInput) -> RetrievalResult:
        resp = await self._call(
            "TurnStart",
            codec.to_proto(turn),
            self._timeout_for(turn.deadline_at),
            cut_off=lambda: _cut_off(_recall_of(turn)),
        )
        return resp if isinstance(resp, RetrievalResult) else codec.decode(resp, RetrievalResult)

    async def prepare_turn(self, turn: TurnInput) -> TurnRoute:
        return codec.decode(await self._call("PrepareTurn", codec.to_proto(turn)), TurnRoute)

    async def turn_end(self, result: TurnResult) -> TurnEndAck:
        """A turn without a turn key gets one here, before its first send: a resend after the
        service went away (it may have journaled the turn first) then answers the first
        acknowledgement instead of storing the turn twice. Each call is its own turn, so the
        same content sent twice is still two turns."""
        if result.turn_key is None:
            result = replace(result, turn_key=f"{AUTO_TURN_KEY_PREFIX}{uuid.uuid4().hex}")
        return codec.decode(await self._call("TurnEnd", codec.to_proto(result)), TurnEndAck)

    async def submit_feedback(self, feedback: FeedbackInput) -> Feedback:
        return codec.decode(await self._call("SubmitFeedback", codec.to_proto(feedback)), Feedback)

    async def record_tool_outcome(self, outcome: ToolOutcome) -> None:
        await self._call("RecordToolOutcome", codec.to_proto(outcome))

    async def record_subagent_outcome(self, outcome: SubagentOutcome) -> TurnEndAck:
        """Keyed before its first send, as :meth:`turn_end`: it is a turn of the parent session."""
        if outcome.turn_key is None:
            outcome = replace(outcome, turn_key=f"{AUTO_TURN_KEY_PREFIX}{uuid.uuid4().hex}")
        resp = await self._call("RecordSubagentOutcome", codec.to_proto(outcome))
        return codec.decode(resp, TurnEndAck)

    # ------------------------------------------------------------------ queries
    async def search(self, query: RetrievalQuery) -> RetrievalResult:
        resp = await self._call(
            "Search",
            codec.to_proto(query),
            self._timeout_for(query.deadline_at),
            cut_off=lambda: _cut_off(query),
        )
        return resp if isinstance(resp, RetrievalResult) else codec.decode(resp, RetrievalResult)

    async def timeline(self, episode_id: str, namespace: Namespace | None = None) -> list[Trace]:
        resp = await self._call(
            "Timeline", m.TimelineRequest(episode_id=episode_id, **_ns_field(namespace))
        )
        return [codec.decode(x, Trace) for x in resp.traces]

    # ------------------------------------------------------------------ traces
    async def get_trace(self, trace_id: str, namespace: Namespace | None = None) -> Trace | None:
        resp = await self._call(
            "GetTrace", m.GetTraceRequest(trace_id=trace_id, **_ns_field(namespace))
        )
        return codec.decode(resp.trace, Trace) if resp.HasField("trace") else None

    async def list_traces(self, query: ListQuery) -> list[Trace]:
        resp = await self._call("ListTraces", codec.to_proto(query))
        return [codec.decode(x, Trace) for x in resp.traces]

    async def update_trace(
        self, trace_id: str, patch: TracePatch, namespace: Namespace | None = None
    ) -> Trace | None:
        req = m.UpdateTraceRequest(trace_id=trace_id, **_ns_field(namespace))
        req.patch.MergeFromString(codec.to_bytes(patch))
        resp = await self._call("UpdateTrace", req)
        return codec.decode(resp.trace, Trace) if resp.HasField("trace") else None

    async def delete_traces(
        self, trace_ids: Sequence[str], namespace: Namespace | None = None
    ) -> int:
        req = m.DeleteTracesRequest(trace_ids=list(trace_ids), **_ns_field(namespace))
        resp = await self._call("DeleteTraces", req)
        return int(resp.deleted)

    # ------------------------------------------------------------------ policies
    async def get_policy(self, policy_id: str, namespace: Namespace | None = None) -> Policy | None:
        resp = await self._call(
            "GetPolicy", m.GetPolicyRequest(policy_id=policy_id, **_ns_field(namespace))
        )
        return codec.decode(resp.policy, Policy) if resp.HasField("policy") else None

    async def list_policies(self, query: ListQuery) -> list[Policy]:
        resp = await self._call("ListPolicies", codec.to_proto(query))
        return [codec.decode(x, Policy) for x in resp.policies]

    async def set_policy_status(
        self, policy_id: str, status: str, namespace: Namespace | None = None
    ) -> Policy | None:
        req = m.SetPolicyStatusRequest(policy_id=policy_id, status=status, **_ns_field(namespace))
        resp = await self._call("SetPolicyStatus", req)
        return codec.decode(resp.policy, Policy) if resp.HasField("policy") else None

    async def delete_policy(self, policy_id: str, namespace: Namespace | None = None) -> bool:
        req = m.DeletePolicyRequest(policy_id=policy_id, **_ns_field(namespace))
        return bool((await self._call("DeletePolicy", req)).deleted)

    # ------------------------------------------------------------------ world models
    async def get_world_model(
        self, world_model_id: str, namespace: Namespace | None = None
    ) -> WorldModel | None:
        req = m.GetWorldModelRequest(world_model_id=world_model_id, **_ns_field(namespace))
        resp = await self._call("GetWorldModel", req)
        return codec.decode(resp.world_model, WorldModel) if resp.HasField("world_model") else None

    async def list_world_models(self, query: ListQuery) -> list[WorldModel]:
        resp = await self._call("ListWorldModels", codec.to_proto(query))
        return [codec.decode(x, WorldModel) for x in resp.world_models]

    async def delete_world_model(
        self, world_model_id: str, namespace: Namespace | None = None
    ) -> bool:
        req = m.DeleteWorldModelRequest(world_model_id=world_model_id, **_ns_field(namespace))
        return bool((await self._call("DeleteWorldModel", req)).deleted)

    # ------------------------------------------------------------------ skills
    async def get_skill(
        self,
        skill_id: str,
        options: SkillGetOptions | None = None,
        namespace: Namespace | None = None,
    ) -> Skill | None:
        req = m.GetSkillRequest(skill_id=skill_id, **_ns_field(namespace))
        if options is not None:
            req.options.MergeFromString(codec.to_bytes(options))
        resp = await self._call("GetSkill", req)
        return codec.decode(resp.skill, Skill) if resp.HasField("skill") else None

    async def list_skills(self, query: ListQuery) -> list[Skill]:
        resp = await self._call("ListSkills", codec.to_proto(query))
        return [codec.decode(x, Skill) for x in resp.skills]

    async def archive_skill(
        self, skill_id: str, reason: str = "manual", namespace: Namespace | None = None
    ) -> Skill:
        req = m.ArchiveSkillRequest(skill_id=skill_id, reason=reason, **_ns_field(namespace))
        return codec.decode(await self._call("ArchiveSkill", req), Skill)

    async def delete_skill(self, skill_id: str, namespace: Namespace | None = None) -> bool:
        req = m.DeleteSkillRequest(skill_id=skill_id, **_ns_field(namespace))
        return bool((await self._call("DeleteSkill", req)).deleted)

    # ------------------------------------------------------------------ events
    def subscribe_events(
        self, since_seq: int | None = None, types: Sequence[str] = ()
    ) -> AsyncIterator[Event]:
        """Events as they happen (after ``since_seq`` first, while the service still buffers it).

        The stream survives the service going away: it resubscribes with back-off (through
        ``reconnect`` when given, which finds or starts the home's service) and goes on from the
        last event it delivered — nothing twice, nothing skipped in between. Across a restart the
        ``epoch`` changes and the stream goes on from the new service's first event; what the old
        process emitted but never delivered went with it (the bus lives in memory), and the epoch
        change is the mark of that. When the new service no longer buffers its own first events,
        or no service answers for ``events_resume_s``, the stream ends with a typed error."""
        return self._events(since_seq, types)

    async def _events(self, since_seq: int | None, types: Sequence[str]) -> AsyncIterator[Event]:
        last = since_seq
        epoch = self.epoch if since_seq is not None else None
        failing_since: float | None = None
        attempt = 0
        while not self._closed:
            generation = self._generation
            unreachable = (
                False  # set when the service did not answer (not when it ended the stream)
            )
            req = m.SubscribeEventsRequest(types=list(types))
            if last is not None:
                req.since_seq = last
                if epoch is not None:
                    req.epoch = epoch
            call = self._stub.SubscribeEvents(req, metadata=self._metadata)
            try:
                async for msg in call:
                    event = codec.decode(msg, Event)
                    if event.epoch == epoch and last is not None and event.seq <= last:
                        continue  # already delivered (a resumed replay overlapping)
                    last, epoch = event.seq, event.epoch or epoch
                    self.epoch = epoch
                    failing_since, attempt = None, 0
                    yield event
                # the stream ended without an error: the service is stopping
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is None or task.cancelling():
                    raise  # our consumer cancels
                if self._closed:
                    return  # shutdown closed the channel: the stream ends with the client
                # grpc cancelled the call locally: its channel was closed (replaced by a recovery)
            except grpc.aio.AioRpcError as exc:
                if self._closed:
                    return
                err = error_from_rpc(exc)
                moved = err.details.get("requested_epoch") is not None and err.details.get("epoch")
                if moved:  # the service restarted: go on from the new epoch's first event
                    if int(err.details.get("oldest_seq") or 0) > 1:
                        raise StratamemError(
                            ErrorCode.INVALID_ARGUMENT,
                            "the service restarted and no longer buffers the start of its new "
                            f"epoch (oldest seq {err.details.get('oldest_seq')}): events were "
                            "lost; resubscribe without a seq",
                            {**err.details, "last_seq": last, "last_epoch": epoch},
                        ) from None
                    last, epoch = 0, str(err.details["epoch"])
                    continue
                if exc.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED) or (
                    exc.trailing_metadata() or ()
                ):
                    raise err from None
                unreachable = True
            finally:
                call.cancel()
            if self._closed:
                return
            now = time.monotonic()
            failing_since = failing_since or now
            if now - failing_since > self.events_resume_s:
                raise StratamemError(
                    ErrorCode.TRANSPORT_CLOSED,
                    f"event stream: no service answered for {self.events_resume_s:.0f}s",
                    {"last_seq": last, "epoch": epoch},
                )
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
            attempt += 1
            # a stopping service ends the stream first: its channel stays until it stops answering
            # (replacing it would cut the calls it is still draining)
            if unreachable and self._reconnect is not None:
                try:
                    await self._recover(generation)
                except StratamemError as err:
                    if err.code is not ErrorCode.TRANSPORT_CLOSED:
                        raise  # e.g. another version now owns the home
                    # not back yet: the next round retries within events_resume_s
            if last is None:
                last = 0  # nothing delivered yet: everything the service buffers is new to us


class BlockingRemoteCore:
    """Synchronous facade over ``RemoteCore`` for threaded hosts: a private event-loop thread.

    Every ``MemoryCore`` method is available with the same name and arguments, returning the result
    (or raising the same ``StratamemError``); safe to call from any thread.
    """

    def __init__(self, target: str, **options: Any) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="stratamem-remote", daemon=True
        )
        self._thread.start()
        self.remote: RemoteCore = self._run(self._make(target, options))

    @staticmethod
    async def _make(target: str, options: dict[str, Any]) -> RemoteCore:
        return RemoteCore(target, **options)

    def _run(self, coro: Awaitable[T], timeout: float | None = None) -> T:
        try:
            fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, self._loop)  # type: ignore[arg-type]
        except RuntimeError:  # the loop is closed: a call racing close() (a host shutting down)
            close = getattr(coro, "close", None)
            if callable(close):
                close()  # never awaited, never warned about
            # typed, so a caller hands the work over (a spool) instead of losing it to a RuntimeError
            raise StratamemError(
                ErrorCode.ALREADY_SHUT_DOWN, "stratamem client is closed"
            ) from None
        return fut.result(timeout)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        attr = getattr(self.remote, name)
        if name.startswith("_") or not callable(attr) or name == "subscribe_events":
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._run(attr(*args, **kwargs))

        return call

    def workspace(self, layout: str = "", *, open_roots: bool = False) -> Any:
        """``RemoteCore.workspace`` with blocking methods (any thread may call them)."""
        from stratamem.contract.workspace import BlockingWorkspace

        return BlockingWorkspace(self.remote.workspace(layout, open_roots=open_roots), self._run)

    def subscribe_events(
        self, since_seq: int | None = None, types: Sequence[str] = (), timeout: float | None = None
    ) -> Iterator[Event]:
        """Blocking iterator over events (``timeout`` bounds the wait for each one)."""
        agen = self.remote.subscribe_events(since_seq, types)
        try:
            while True:
                try:
                    yield self._run(anext(agen), timeout)
                except StopAsyncIteration:
                    return
        finally:
            self._run(agen.aclose())  # type: ignore[attr-defined]

    def close(self) -> None:
        if self._loop.is_closed():
            return
        self._run(self.remote.shutdown())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()

    shutdown = close

    def __enter__(self) -> BlockingRemoteCore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
