"""Events: every catalogue entry is emitted by some real scenario; subscribers see them live, in seq order."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from stratamem.contract.dtos import (
    FeedbackInput,
    Namespace,
    RetrievalQuery,
    TracePatch,
    TurnInput,
    TurnResult,
)
from stratamem.contract.events import EVENT_TYPES
from stratamem.core import open_core
from stratamem.core.events import EventBus
from stratamem.core.learning import LEARNING_EVENTS
from stratamem.core.storage.ownership import Scope

NS = Namespace(agent_kind="hermes")


def now() -> int:
    return int(time.time() * 1000)


async def _scenario(home: Path, bus: EventBus) -> None:
    async with open_core(home, embedding__provider="none") as core:
        core.bus = bus  # observe from the start of the facade calls
        core.journal.bus = bus
        t = now()
        await core.turn_start(
            TurnInput(agent="hermes", session_id="s", user_text="where is the otter den?", ts=t)
        )
        ack = await core.turn_end(
            TurnResult(agent="hermes", session_id="s", agent_text="by the north creek", ts=t + 1)
        )
        await core.flush(10)
        await core.turn_start(
            TurnInput(agent="hermes", session_id="s", user_text="where is the otter den?", ts=now())
        )
        await core.update_trace(ack.trace_id, TracePatch(summary="otter den location"), NS)
        await core.submit_feedback(
            FeedbackInput(trace_id=ack.trace_id, polarity="positive", magnitude=1.0, namespace=NS)
        )
        await core.search(RetrievalQuery(agent="hermes", query="otter", namespace=NS))
        await core.delete_traces([ack.trace_id], NS)
        await core.close_session("s")


async def _failing_embedder_scenario(home: Path, bus: EventBus) -> int:
    """A real remote embedder whose endpoint is down: the turn is still stored (null vector), the
    failure is reported as system.error and the embedding goes to the retry queue."""
    async with open_core(
        home,
        embedding__provider="openai_compatible",
        embedding__endpoint="http://127.0.0.1:9/v1",
        embedding__model="down",
        embedding__dimension=16,
        embedding__max_retries=0,
        embedding__timeout_ms=2000,
        embedding__cache__enabled=False,
    ) as core:
        core.bus = bus
        core.journal.bus = bus
        await core.turn_end(
            TurnResult(agent="hermes", session_id="s", user_text="q", agent_text="a", ts=now())
        )
        await core.flush(20)
        assert await core.store.count("traces", Scope.everything("test")) == 1
        return len(core.db.query("SELECT * FROM embedding_retry_queue WHERE status='pending'"))


async def test_every_catalogue_event_is_emitted_by_a_scenario(tmp_path: Path) -> None:
    bus = EventBus()
    await _scenario(tmp_path / "a", bus)
    queued = await _failing_embedder_scenario(tmp_path / "b", bus)
    assert queued == 1
    # system.started is emitted on open (before we swap buses): check it on a fresh core's own bus
    async with open_core(tmp_path / "c", embedding__provider="none") as core:
        assert "system.started" in core.bus.emitted_types
    # full-mode learning events are proved by the test_learning_* scenarios
    missing = EVENT_TYPES - bus.emitted_types - {"system.started"} - LEARNING_EVENTS
    assert not missing, f"catalogue entries never emitted: {sorted(missing)}"


async def test_subscribers_get_live_events_in_seq_order(tmp_path: Path) -> None:
    async with open_core(tmp_path, embedding__provider="none") as core:
        got: list[str] = []
        seqs: list[int] = []

        async def listen() -> None:
            async for ev in core.subscribe_events(types=("turn.captured", "trace.created")):
                got.append(ev.type)
                seqs.append(ev.seq)
                if len(got) == 2:
                    return

        task = asyncio.create_task(listen())
        await asyncio.sleep(0.01)
        await core.turn_end(
            TurnResult(agent="hermes", session_id="s", user_text="q", agent_text="a", ts=now())
        )
        await asyncio.wait_for(task, 10)
        assert got == ["turn.captured", "trace.created"] and seqs == sorted(seqs)
        replay = [e.type for e in core.bus.recent(since_seq=0)]
        assert replay[0] == "system.started"
