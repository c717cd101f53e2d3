"""``LocalCore``: the in-process ``MemoryCore`` over one home (SQLite + LanceDB + capture journal).

A thin facade: it checks the core is alive, resolves the caller's namespace, and delegates to one
engine module per concern (``stratamem.core.engine``). Built by ``open_local_core``
(``stratamem.core.engine.assemble``); most callers use ``open_core`` (``stratamem.core.opening``).
asyncio-native: SQLite runs on one dedicated thread, CPU work (embedding) in a small bounded
executor, LanceDB through its async API.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from stratamem.contract.dtos import (
    Episode,
    Event,
    Feedback,
    FeedbackInput,
    FlushResult,
    Health,
    ListQuery,
    ModelHealth,
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
from stratamem.core import __version__
from stratamem.core.engine import (
    commit,
    layers,
    maintenance,
    overview,
    recall,
    sessions,
    traces,
    turns,
)
from stratamem.core.engine import feedback as feedback_engine
from stratamem.core.engine.services import EngineServices
from stratamem.core.events import EventBus, for_namespace
from stratamem.core.storage.lance import LanceStore
from stratamem.core.storage.lock import HomeLock
from stratamem.core.storage.ownership import Scope
from stratamem.core.storage.sqlite import Database
from stratamem.core.telemetry import get_logger

_log = get_logger("core")


def _shared(name: str) -> Any:
    """An attribute of the engine services, read and written through the facade."""
    return property(
        lambda self: getattr(self.services, name),
        lambda self, value: setattr(self.services, name, value),
    )


class LocalCore:
    """In-process implementation of ``stratamem.contract.MemoryCore``."""

    home: Path = _shared("home")
    config: dict[str, Any] = _shared("config")
    db: Database = _shared("db")
    store: LanceStore = _shared("store")
    embedder: Any = _shared("embedder")
    llm: Any = _shared("llm")
    bus: EventBus = _shared("bus")
    lightweight: bool = _shared("lightweight")
    learner: Any = _shared("learner")

    def __init__(
        self,
        home: Path,
        config: dict[str, Any],
        *,
        db: Database,
        store: LanceStore,
        lock: HomeLock,
        embedder: Any,
        llm: Any,
        bus: EventBus | None = None,
        owns_embedder: bool = True,
    ) -> None:
        self.services = EngineServices(
            home, config, db=db, store=store, embedder=embedder, llm=llm, bus=bus or EventBus()
        )
        self.lock = lock
        self.mode_reason = "algorithm.lightweight_memory.enabled"
        if not self.lightweight:
            from stratamem.core.learning import Learner

            self.learner = Learner(self.services)
        self._starts = turns.TurnStarts()
        self.services.on_session_closed.append(self._starts.forget)
        self._started_at = time.monotonic()
        self._maintenance: asyncio.Task[None] | None = None
        self._embed_health = ModelHealth(
            available=embedder is not None,
            provider=str(config["embedding"]["provider"] or "none"),
            model=str(getattr(embedder, "model", "")),
            dimension=int(getattr(embedder, "dimension", 0) or 0),
        )
        #: journal entries found unapplied at start-up (replayed by the writer)
        self.replayed = 0

    @property
    def journal(self) -> Any:
        return self.services.journal

    def _alive(self) -> None:
        self.services.alive()

    def _ns(self, ns: Namespace | None) -> Namespace:
        """The caller's namespace, else the home's configured default (never another caller's)."""
        return ns or self.services.default_namespace

    def _mode(self) -> str:
        return "lightweight" if self.lightweight else "full"

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        replayed = await self.journal.start()
        self.replayed = replayed
        if self.learner is not None:
            self.learner.start()
        await sessions.recover_open_episodes(self.services)
        self._maintenance = asyncio.create_task(
            maintenance.maintenance_loop(self.services), name="stratamem-maint"
        )
        self.bus.emit(
            "system.started",
            {"home": str(self.home), "mode": self._mode(), "version": __version__},
        )
        _log.info("core.started", home=str(self.home), replayed=replayed, mode=self._mode())

    async def shutdown(self) -> None:
        if self.services.shut:
            return
        self.services.shut = True
        if self.learner is not None:
            await self.learner.stop()
        try:
            await self.journal.stop(15.0)
        finally:
            if self._maintenance is not None:
                self._maintenance.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._maintenance
            self._starts.cancel_all()
            with contextlib.suppress(Exception):
                await self.services.vocab.close()
            with contextlib.suppress(Exception):  # a background FTS fold (storage/fts_cover.py)
                await self.store.fts.settle()
            with contextlib.suppress(Exception):
                self.bus.emit("system.shutdown", {"reason": "shutdown"})
            self.services.close()
            self.lock.release()

    async def flush(self, timeout_s: float | None = None) -> FlushResult:
        self._alive()
        try:
            applied = await self.journal.drain(timeout_s)
        except TimeoutError:
            applied = 0
        await self.services.vocab.settle(timeout_s)  # the stored memories' words (vocab/)
        if self.learner is not None:  # fire feedback windows, run reward/L2/L3/skills now
            await self.learner.flush(timeout_s)
        return FlushResult(applied=applied, backlog=self.journal.backlog())

    async def health(self) -> Health:
        self._alive()
        every = Scope.everything("health.counts")
        counts = {"traces": await self.store.count("traces", every)}
        # the same figures a scoped token's health counts over its namespaces (scoped_health)
        figures = await overview.namespaces(self.services)
        counts["episodes"] = sum(f.episodes for f in figures)
        for t in ("policies", "world_models", "skills"):
            counts[t] = await self.store.count(t, every)
        counts["journal_set_aside"] = self.journal.set_aside_total
        llm_health = ModelHealth(
            available=self.llm is not None,
            # a host's model borrowed while it is connected shows as provider "host"
            provider=str(self.config["llm"]["provider"] or getattr(self.llm, "name", "") or "none"),
            model=str(self.config["llm"]["model"]),
        )
        return Health(
            ok=not self.services.shut,
            version=__version__,
            uptime_ms=int((time.monotonic() - self._started_at) * 1000),
            mode=self._mode(),
            mode_reason=self.mode_reason,
            home=str(self.home),
            namespace=self.services.default_namespace,
            llm=llm_health,
            embedder=self._embed_health,
            journal_backlog=self.journal.backlog(),
            counts=counts,
            namespaces=overview.holding_episodes(figures),
        )

    async def scoped_health(self, allows: Callable[[Namespace], bool]) -> Health:
        """``health`` for a caller limited to some namespaces (a scoped token): their counts
        only, and no home path, journal backlog or set-aside count (the home's, not theirs); of the
        namespaces holding memories only those it may use."""
        full = await self.health()
        figures = await overview.namespaces(self.services, allows)
        counts = await overview.scoped_counts(self.services, allows, figures)
        return replace(
            full,
            home="",
            namespace=None,
            journal_backlog=0,
            counts=counts,
            namespaces=overview.holding_episodes(figures),
        )

    # ------------------------------------------------------------------ sessions / episodes
    async def open_session(
        self,
        agent: str,
        session_id: str | None = None,
        namespace: Namespace | None = None,
        meta: dict[str, object] | None = None,
    ) -> str:
        self._alive()
        ns = namespace or Namespace(agent_kind=agent)
        return await sessions.open_session(self.services, agent, session_id, ns, meta)

    async def close_session(self, session_id: str, reason: str = "client") -> None:
        self._alive()
        await sessions.close_session(self.services, session_id, reason)

    async def open_episode(
        self, session_id: str, user_message: str | None = None, episode_id: str | None = None
    ) -> str:
        self._alive()
        return await sessions.open_episode(self.services, session_id, user_message, episode_id)

    async def close_episode(self, episode_id: str) -> None:
        self._alive()
        await sessions.close_episode(self.services, episode_id)

    async def session_owner(self, session_id: str) -> Namespace | None:
        """The namespace owning ``session_id`` (the server checks scoped tokens against it)."""
        return await sessions.owner_of(self.services, "sessions", session_id)

    async def episode_owner(self, episode_id: str) -> Namespace | None:
        """The namespace owning ``episode_id``."""
        return await sessions.owner_of(self.services, "episodes", episode_id)

    async def list_episodes(self, query: ListQuery) -> list[Episode]:
        self._alive()
        return await sessions.list_episodes(self.services, query, self._ns(query.namespace))

    async def get_episode(
        self, episode_id: str, namespace: Namespace | None = None
    ) -> Episode | None:
        self._alive()
        return await sessions.get_episode(self.services, episode_id, self._ns(namespace))

    # ------------------------------------------------------------------ turns
    async def _session_ns(self, session_id: str, ns: Namespace | None, agent: str) -> Namespace:
        """The caller's namespace, checked against the session's owner (session-addressed calls)."""
        return await sessions.session_namespace(self.services, session_id, ns, agent)

    async def prepare_turn(self, turn: TurnInput) -> TurnRoute:
        self._alive()
        turns.check_turn_input(self.services, turn)
        ns = await self._session_ns(turn.session_id, turn.namespace, turn.agent)
        return await turns.prepare_turn(self.services, turn, ns)

    async def turn_start(self, turn: TurnInput) -> RetrievalResult:
        self._alive()
        turns.check_turn_input(self.services, turn)
        ns = await self._session_ns(turn.session_id, turn.namespace, turn.agent)
        return await turns.turn_start(self.services, self._starts, turn, ns)

    async def turn_end(self, result: TurnResult) -> TurnEndAck:
        """Durable before it returns: the turn is committed (fsync'd) to the SQLite journal."""
        self._alive()
        # the owner check runs inside the turn's one transaction (``commit.turn_end``)
        return await commit.turn_end(self.services, result, result.namespace)

    async def record_subagent_outcome(self, outcome: SubagentOutcome) -> TurnEndAck:
        self._alive()
        return await self.turn_end(commit.subagent_turn(self.services, outcome))

    async def record_tool_outcome(self, outcome: ToolOutcome) -> None:
        """Never throws; a no-op after shutdown and in lightweight mode (decision repair is full mode)."""
        commit.record_tool_outcome(self.services, outcome)

    # ------------------------------------------------------------------ retrieval
    async def search(self, query: RetrievalQuery) -> RetrievalResult:
        self._alive()
        return await recall.search(self.services, query, self._ns(query.namespace))

    async def wait_for_writes(self, deadline_at: int | None) -> list[dict[str, Any]]:
        """Read-your-writes: wait (within ~half the remaining budget) for every acknowledged turn to
        be applied; return the rows still pending so a reader can search them too."""
        return await self.services.wait_for_writes(deadline_at)

    async def embed_query(self, text: str) -> np.ndarray | None:
        return await self.services.embed_query(text)

    # ------------------------------------------------------------------ feedback
    async def submit_feedback(self, feedback: FeedbackInput) -> Feedback:
        self._alive()
        return await feedback_engine.submit_feedback(
            self.services, feedback, self._ns(feedback.namespace)
        )

    # ------------------------------------------------------------------ traces
    async def get_trace(self, trace_id: str, namespace: Namespace | None = None) -> Trace | None:
        self._alive()
        return await traces.get_trace(self.services, trace_id, self._ns(namespace))

    async def timeline(self, episode_id: str, namespace: Namespace | None = None) -> list[Trace]:
        """The episode's traces in order (≤500), from storage only: no embedding, no ranking."""
        self._alive()
        return await traces.timeline(self.services, episode_id, self._ns(namespace))

    async def list_traces(self, query: ListQuery) -> list[Trace]:
        self._alive()
        return await traces.list_traces(self.services, query, self._ns(query.namespace))

    async def update_trace(
        self, trace_id: str, patch: TracePatch, namespace: Namespace | None = None
    ) -> Trace | None:
        self._alive()
        return await traces.update_trace(self.services, trace_id, patch, self._ns(namespace))

    async def delete_traces(
        self, trace_ids: Sequence[str], namespace: Namespace | None = None
    ) -> int:
        """Hard delete, idempotent, owner namespace only (shared rows are not the reader's to delete)."""
        self._alive()
        return await traces.delete_traces(self.services, trace_ids, self._ns(namespace))

    # ------------------------------------------------------------------ policies / world models / skills
    async def get_policy(self, policy_id: str, namespace: Namespace | None = None) -> Policy | None:
        self._alive()
        return await layers.get_policy(self.services, policy_id, self._ns(namespace))

    async def list_policies(self, query: ListQuery) -> list[Policy]:
        self._alive()
        return await layers.list_policies(self.services, query, self._ns(query.namespace))

    async def set_policy_status(
        self, policy_id: str, status: str, namespace: Namespace | None = None
    ) -> Policy | None:
        self._alive()
        return await layers.set_policy_status(self.services, policy_id, status, self._ns(namespace))

    async def delete_policy(self, policy_id: str, namespace: Namespace | None = None) -> bool:
        self._alive()
        return await layers.delete_owned(self.services, "policies", policy_id, self._ns(namespace))

    async def get_world_model(
        self, world_model_id: str, namespace: Namespace | None = None
    ) -> WorldModel | None:
        self._alive()
        return await layers.get_world_model(self.services, world_model_id, self._ns(namespace))

    async def list_world_models(self, query: ListQuery) -> list[WorldModel]:
        self._alive()
        return await layers.list_world_models(self.services, query, self._ns(query.namespace))

    async def delete_world_model(
        self, world_model_id: str, namespace: Namespace | None = None
    ) -> bool:
        self._alive()
        return await layers.delete_owned(
            self.services, "world_models", world_model_id, self._ns(namespace)
        )

    async def get_skill(
        self,
        skill_id: str,
        options: SkillGetOptions | None = None,
        namespace: Namespace | None = None,
    ) -> Skill | None:
        self._alive()
        return await layers.get_skill(self.services, skill_id, options, self._ns(namespace))

    async def list_skills(self, query: ListQuery) -> list[Skill]:
        self._alive()
        return await layers.list_skills(self.services, query, self._ns(query.namespace))

    async def archive_skill(
        self, skill_id: str, reason: str = "manual", namespace: Namespace | None = None
    ) -> Skill:
        self._alive()
        return await layers.archive_skill(self.services, skill_id, reason, self._ns(namespace))

    async def delete_skill(self, skill_id: str, namespace: Namespace | None = None) -> bool:
        self._alive()
        return await layers.delete_owned(self.services, "skills", skill_id, self._ns(namespace))

    # ------------------------------------------------------------------ events
    def subscribe_events(
        self,
        since_seq: int | None = None,
        types: Sequence[str] = (),
        namespace: Namespace | None = None,
    ) -> AsyncIterator[Event]:
        """Events live (after ``since_seq``); naming a namespace gives that namespace's events only."""
        self._alive()
        accepts = for_namespace(namespace) if namespace is not None else None
        return self.bus.subscribe(since_seq, types, accepts)
