"""A cancelled call starts no further stage: a search cancelled while it waits for pending writes never
reaches retrieval (no retrieval result event), while the same search left alone does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from stratamem.contract.dtos import Event, Namespace, TurnResult
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service
from stratamem.v1 import types_pb2 as t

NS = Namespace(agent_kind="hermes")


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Any, Any]]:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    channel = grpc.aio.insecure_channel(f"unix:{svc.socket_path}")
    search = channel.unary_unary(
        "/stratamem.v1.MemoryService/Search",
        request_serializer=t.RetrievalQuery.SerializeToString,
        response_deserializer=t.RetrievalResult.FromString,
    )
    try:
        yield core, search
    finally:
        await channel.close()
        await svc.stop(1.0)
        await core.shutdown()


async def _search_with_writes_held(core: Any, search: Any, session: str, cancel: bool) -> list[str]:
    seen: list[Event] = []
    core.bus.add_observer(seen.append)
    async with core.journal.write_lock:  # the writer cannot apply: the search waits for the write
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id="w",
                agent_text="a",
                user_text="pending turn",
                ts=int(time.time() * 1000),
                namespace=NS,
            )
        )
        call = search(
            t.RetrievalQuery(  # in the write's namespace: a reader waits for what it can see
                agent="hermes",
                query="pending",
                session_id=session,
                reason="tool_driven",
                namespace=t.Namespace(agent_kind=NS.agent_kind),
            )
        )
        for _ in range(600):  # the server holds the call (waiting for the write) before we cancel
            if any(
                e.type == "retrieval.triggered" and e.payload.get("session_id") == session
                for e in seen
            ):
                break
            await asyncio.sleep(0.05)
        if cancel:
            call.cancel()
        await asyncio.sleep(0.5)
    with pytest.raises(asyncio.CancelledError) if cancel else _nothing():
        await asyncio.wait_for(call, 10)
    await asyncio.sleep(1.0)
    return [e.type for e in seen if e.payload.get("session_id") == session]


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return False


async def test_a_search_left_alone_reaches_retrieval(served: Any) -> None:
    core, search = served
    types = await _search_with_writes_held(core, search, "kept", cancel=False)
    assert "retrieval.triggered" in types
    assert {"retrieval.hit", "retrieval.empty"} & set(types)


async def test_a_cancelled_search_starts_no_further_stage(served: Any) -> None:
    core, search = served
    types = await _search_with_writes_held(core, search, "cancelled", cancel=True)
    assert "retrieval.triggered" in types
    assert not ({"retrieval.hit", "retrieval.empty"} & set(types))
