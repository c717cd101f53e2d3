"""Idle accounting on the wire: every kind of call (our unary calls, a streamed subscription, the
standard health service's registered methods, reflection) counts as activity, now that the
counting wraps each handler when it is registered instead of intercepting every call."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service
from stratamem.v1 import memory_pb2 as m
from stratamem.v1 import memory_pb2_grpc


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Service, grpc.aio.Channel]]:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    channel = grpc.aio.insecure_channel(f"unix:{svc.socket_path}")
    try:
        yield svc, channel
    finally:
        await channel.close()
        await svc.stop(1.0)
        await core.shutdown()


async def _until(done: Any, timeout_s: float = 30.0) -> None:
    """Poll ``done()`` (the server's bookkeeping runs on its own schedule) within a generous bound."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if done():
            return
        await asyncio.sleep(0.02)


async def _counts(svc: Service, call: Any) -> None:
    """``call`` ends with nothing in flight and moves the last-activity clock. A streamed call's
    client has its first message before the server's handler returns (reflection's handler is
    still draining the request stream then), so the server's count is awaited, bounded."""
    before = svc.activity.last
    await asyncio.sleep(0.01)  # the monotonic clock moves on
    await call()
    await _until(lambda: svc.activity.in_flight == 0)
    assert svc.activity.in_flight == 0
    assert svc.activity.last > before


async def test_unary_registered_and_reflection_calls_count_as_activity(served: Any) -> None:
    svc, channel = served
    memory = memory_pb2_grpc.MemoryServiceStub(channel)
    health = health_pb2_grpc.HealthStub(channel)
    refl = reflection_pb2_grpc.ServerReflectionStub(channel)

    async def reflect() -> None:
        req = reflection_pb2.ServerReflectionRequest(list_services="")
        async for _ in refl.ServerReflectionInfo(iter([req])):
            break

    await _counts(svc, lambda: memory.Health(m.HealthRequest(), timeout=30))
    await _counts(svc, lambda: health.Check(health_pb2.HealthCheckRequest(), timeout=30))
    await _counts(svc, reflect)


async def test_an_open_event_stream_is_in_flight_until_it_ends(served: Any) -> None:
    svc, channel = served
    memory = memory_pb2_grpc.MemoryServiceStub(channel)
    stream = memory.SubscribeEvents(m.SubscribeEventsRequest())
    await _until(lambda: svc.activity.in_flight > 0)
    assert svc.activity.in_flight == 1
    assert svc.activity.idle_for() == 0.0
    stream.cancel()
    await _until(lambda: svc.activity.in_flight == 0)
    assert svc.activity.in_flight == 0
