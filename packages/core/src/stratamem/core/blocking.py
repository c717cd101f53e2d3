"""``BlockingCore``: a thread-safe synchronous facade over the home's core (owned, or reached over its
socket when another process owns it) on its own event-loop thread.

For synchronous hosts (Hermes): every ``MemoryCore`` method is mirrored as a plain call that may be
made from any thread; the core itself runs on one private asyncio loop.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Coroutine, Iterator, Sequence
from typing import Any, TypeVar

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
from stratamem.contract.protocol import MemoryCore
from stratamem.core.opening import open_core

T = TypeVar("T")


class BlockingCore:
    """Open with ``BlockingCore.open(home, **overrides)``; close with ``close()`` (or ``with``)."""

    def __init__(self, core: MemoryCore, loop: asyncio.AbstractEventLoop, thread: threading.Thread):
        self._core = core
        self._exit: Any = None
        self._loop = loop
        self._thread = thread
        self._closed = False

    @classmethod
    def open(
        cls,
        home: str | os.PathLike[str] | None = None,
        *,
        embedder: Any = None,
        host: str | None = None,
        **config_overrides: Any,
    ) -> BlockingCore:
        loop = asyncio.new_event_loop()
        ready: queue.Queue[tuple[Any, BaseException | None]] = queue.Queue()
        exits: list[Any] = []

        def run() -> None:
            asyncio.set_event_loop(loop)

            async def boot() -> bool:
                cm = open_core(home, embedder=embedder, host=host, **config_overrides)
                try:
                    core = await cm.__aenter__()
                except BaseException as exc:
                    ready.put((None, exc))
                    return False
                exits.append(cm)
                ready.put((core, None))
                return True

            # a failed open ends the thread here: a stop() sent from the caller could land
            # inside run_until_complete and be cleared by run_forever, which then never returned
            if loop.run_until_complete(boot()):
                loop.run_forever()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

        thread = threading.Thread(target=run, name="stratamem-core-loop", daemon=True)
        thread.start()
        core, err = ready.get()
        if err is not None or core is None:
            thread.join(10)
            raise err or StratamemError(ErrorCode.INTERNAL, "core failed to start")
        blocking = cls(core, loop, thread)
        blocking._exit = exits[0]
        return blocking

    @property
    def core(self) -> MemoryCore:
        """The underlying async core — a ``LocalCore`` (owner) or a ``RemoteCore`` (another process
        owns the home); only touch it from its own loop."""
        return self._core

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self._thread:
            coro.close()
            raise StratamemError(
                ErrorCode.INTERNAL, "BlockingCore called from its own event-loop thread"
            )
        if self._closed and not self._loop.is_running():
            coro.close()
            raise StratamemError(ErrorCode.ALREADY_SHUT_DOWN, "the core has been shut down")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    def close(self) -> None:
        """Shut the core down (drains the journal) and stop its loop thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._run(self._exit.__aexit__(None, None, None))
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)

    def __enter__(self) -> BlockingCore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def events(
        self, since_seq: int | None = None, types: Sequence[str] = (), timeout: float | None = None
    ) -> Iterator[Event]:
        """Blocking iterator over core events (ends when the core shuts down or ``timeout`` passes
        without an event)."""
        out: queue.Queue[Event | BaseException | None] = queue.Queue()

        async def pump() -> None:
            try:
                async for ev in self._core.subscribe_events(since_seq, types):
                    out.put(ev)
            except BaseException as exc:
                out.put(exc)
            finally:
                out.put(None)

        fut = asyncio.run_coroutine_threadsafe(pump(), self._loop)
        try:
            while True:
                try:
                    item = out.get(timeout=timeout)
                except queue.Empty:
                    return
                if item is None:
                    return
                if isinstance(item, BaseException):
                    if isinstance(item, asyncio.CancelledError):
                        return
                    raise item
                yield item
        finally:
            fut.cancel()

    # -- every MemoryCore method, mirrored ------------------------------------------------
    def health(self) -> Health:
        return self._run(self._core.health())

    def flush(self, timeout_s: float | None = None) -> FlushResult:
        return self._run(self._core.flush(timeout_s))

    def shutdown(self) -> None:
        self.close()

    def open_session(
        self,
        agent: str,
        session_id: str | None = None,
        namespace: Namespace | None = None,
        meta: dict[str, object] | None = None,
    ) -> str:
        return self._run(self._core.open_session(agent, session_id, namespace, meta))

    def close_session(self, session_id: str, reason: str = "client") -> None:
        return self._run(self._core.close_session(session_id, reason))

    def open_episode(
        self, session_id: str, user_message: str | None = None, episode_id: str | None = None
    ) -> str:
        return self._run(self._core.open_episode(session_id, user_message, episode_id))

    def close_episode(self, episode_id: str) -> None:
        return self._run(self._core.close_episode(episode_id))

    def list_episodes(self, query: ListQuery) -> list[Episode]:
        return self._run(self._core.list_episodes(query))

    def get_episode(self, episode_id: str, namespace: Namespace | None = None) -> Episode | None:
        return self._run(self._core.get_episode(episode_id, namespace))

    def turn_start(self, turn: TurnInput) -> RetrievalResult:
        return self._run(self._core.turn_start(turn))

    def prepare_turn(self, turn: TurnInput) -> TurnRoute:
        return self._run(self._core.prepare_turn(turn))

    def turn_end(self, result: TurnResult) -> TurnEndAck:
        return self._run(self._core.turn_end(result))

    def submit_feedback(self, feedback: FeedbackInput) -> Feedback:
        return self._run(self._core.submit_feedback(feedback))

    def record_tool_outcome(self, outcome: ToolOutcome) -> None:
        return self._run(self._core.record_tool_outcome(outcome))

    def record_subagent_outcome(self, outcome: SubagentOutcome) -> TurnEndAck:
        return self._run(self._core.record_subagent_outcome(outcome))

    def search(self, query: RetrievalQuery) -> RetrievalResult:
        return self._run(self._core.search(query))

    def timeline(self, episode_id: str, namespace: Namespace | None = None) -> list[Trace]:
        return self._run(self._core.timeline(episode_id, namespace))

    def get_trace(self, trace_id: str, namespace: Namespace | None = None) -> Trace | None:
        return self._run(self._core.get_trace(trace_id, namespace))

    def list_traces(self, query: ListQuery) -> list[Trace]:
        return self._run(self._core.list_traces(query))

    def update_trace(
        self, trace_id: str, patch: TracePatch, namespace: Namespace | None = None
    ) -> Trace | None:
        return self._run(self._core.update_trace(trace_id, patch, namespace))

    def delete_traces(self, trace_ids: Sequence[str], namespace: Namespace | None = None) -> int:
        return self._run(self._core.delete_traces(trace_ids, namespace))

    def get_policy(self, policy_id: str, namespace: Namespace | None = None) -> Policy | None:
        return self._run(self._core.get_policy(policy_id, namespace))

    def list_policies(self, query: ListQuery) -> list[Policy]:
        return self._run(self._core.list_policies(query))

    def set_policy_status(
        self, policy_id: str, status: str, namespace: Namespace | None = None
    ) -> Policy | None:
        return self._run(self._core.set_policy_status(policy_id, status, namespace))

    def delete_policy(self, policy_id: str, namespace: Namespace | None = None) -> bool:
        return self._run(self._core.delete_policy(policy_id, namespace))

    def get_world_model(
        self, world_model_id: str, namespace: Namespace | None = None
    ) -> WorldModel | None:
        return self._run(self._core.get_world_model(world_model_id, namespace))

    def list_world_models(self, query: ListQuery) -> list[WorldModel]:
        return self._run(self._core.list_world_models(query))

    def delete_world_model(self, world_model_id: str, namespace: Namespace | None = None) -> bool:
        return self._run(self._core.delete_world_model(world_model_id, namespace))

    def get_skill(
        self,
        skill_id: str,
        options: SkillGetOptions | None = None,
        namespace: Namespace | None = None,
    ) -> Skill | None:
        return self._run(self._core.get_skill(skill_id, options, namespace))

    def list_skills(self, query: ListQuery) -> list[Skill]:
        return self._run(self._core.list_skills(query))

    def archive_skill(
        self, skill_id: str, reason: str = "manual", namespace: Namespace | None = None
    ) -> Skill:
        return self._run(self._core.archive_skill(skill_id, reason, namespace))

    def delete_skill(self, skill_id: str, namespace: Namespace | None = None) -> bool:
        return self._run(self._core.delete_skill(skill_id, namespace))

    def subscribe_events(
        self, since_seq: int | None = None, types: Sequence[str] = ()
    ) -> Iterator[Event]:
        return self.events(since_seq, types)
