"""The ``MemoryCore`` protocol: the one seam adapters program against.

Two implementations exist: ``LocalCore`` (in-process, ``stratamem.core``) and ``RemoteCore``
(gRPC client, ``stratamem.contract.remote``). The same contract test suite runs against both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Protocol, runtime_checkable

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


@runtime_checkable
class MemoryCore(Protocol):
    """Async facade of the memory engine. Every method raises ``StratamemError`` on failure."""

    # lifecycle / status
    async def health(self) -> Health: ...
    async def flush(self, timeout_s: float | None = None) -> FlushResult: ...
    async def shutdown(self) -> None: ...

    # sessions / episodes
    async def open_session(
        self,
        agent: str,
        session_id: str | None = None,
        namespace: Namespace | None = None,
        meta: dict[str, object] | None = None,
    ) -> str: ...
    async def close_session(self, session_id: str, reason: str = "client") -> None: ...
    async def open_episode(
        self, session_id: str, user_message: str | None = None, episode_id: str | None = None
    ) -> str: ...
    async def close_episode(self, episode_id: str) -> None: ...
    async def list_episodes(self, query: ListQuery) -> list[Episode]: ...
    async def get_episode(
        self, episode_id: str, namespace: Namespace | None = None
    ) -> Episode | None: ...

    # per-turn pipeline
    async def turn_start(self, turn: TurnInput) -> RetrievalResult: ...
    async def prepare_turn(self, turn: TurnInput) -> TurnRoute: ...
    async def turn_end(self, result: TurnResult) -> TurnEndAck: ...
    async def submit_feedback(self, feedback: FeedbackInput) -> Feedback: ...
    async def record_tool_outcome(self, outcome: ToolOutcome) -> None: ...
    async def record_subagent_outcome(self, outcome: SubagentOutcome) -> TurnEndAck: ...

    # queries
    async def search(self, query: RetrievalQuery) -> RetrievalResult: ...
    async def timeline(
        self, episode_id: str, namespace: Namespace | None = None
    ) -> list[Trace]: ...

    # traces
    async def get_trace(
        self, trace_id: str, namespace: Namespace | None = None
    ) -> Trace | None: ...
    async def list_traces(self, query: ListQuery) -> list[Trace]: ...
    async def update_trace(
        self, trace_id: str, patch: TracePatch, namespace: Namespace | None = None
    ) -> Trace | None: ...
    async def delete_traces(
        self, trace_ids: Sequence[str], namespace: Namespace | None = None
    ) -> int: ...

    # policies
    async def get_policy(
        self, policy_id: str, namespace: Namespace | None = None
    ) -> Policy | None: ...
    async def list_policies(self, query: ListQuery) -> list[Policy]: ...
    async def set_policy_status(
        self, policy_id: str, status: str, namespace: Namespace | None = None
    ) -> Policy | None: ...
    async def delete_policy(self, policy_id: str, namespace: Namespace | None = None) -> bool: ...

    # world models
    async def get_world_model(
        self, world_model_id: str, namespace: Namespace | None = None
    ) -> WorldModel | None: ...
    async def list_world_models(self, query: ListQuery) -> list[WorldModel]: ...
    async def delete_world_model(
        self, world_model_id: str, namespace: Namespace | None = None
    ) -> bool: ...

    # skills
    async def get_skill(
        self,
        skill_id: str,
        options: SkillGetOptions | None = None,
        namespace: Namespace | None = None,
    ) -> Skill | None: ...
    async def list_skills(self, query: ListQuery) -> list[Skill]: ...
    async def archive_skill(
        self, skill_id: str, reason: str = "manual", namespace: Namespace | None = None
    ) -> Skill: ...
    async def delete_skill(self, skill_id: str, namespace: Namespace | None = None) -> bool: ...

    # events
    def subscribe_events(
        self, since_seq: int | None = None, types: Sequence[str] = ()
    ) -> AsyncIterator[Event]: ...
