"""The wire edge: typed errors in trailers, explicit size/length limits, malformed bytes, event resume
rules and slow-subscriber dropping, deadlines, and the host-lent LLM stream."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from stratamem.contract.dtos import Namespace, TurnResult
from stratamem.contract.errors import ERROR_CODE_METADATA_KEY, ERROR_DETAILS_METADATA_KEY
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service
from stratamem.core.server.limits import MAX_REQUEST_BYTES, MAX_STRING_CHARS
from stratamem.v1 import host_llm_pb2 as h
from stratamem.v1 import host_llm_pb2_grpc
from stratamem.v1 import memory_pb2 as m
from stratamem.v1 import types_pb2 as t

NS = Namespace(agent_kind="hermes")


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[Any, Service, grpc.aio.Channel]]:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    channel = grpc.aio.insecure_channel(
        f"unix:{svc.socket_path}", options=[("grpc.max_send_message_length", 64 << 20)]
    )
    try:
        yield core, svc, channel
    finally:
        await channel.close()
        await svc.stop(1.0)
        await core.shutdown()


def _raw(channel: grpc.aio.Channel, method: str) -> Any:
    return channel.unary_unary(
        f"/stratamem.v1.MemoryService/{method}",
        request_serializer=lambda b: b,
        response_deserializer=lambda b: b,
    )


def _trailers(err: grpc.aio.AioRpcError) -> dict[str, str]:
    return {k: v for k, v in (err.trailing_metadata() or ()) if isinstance(v, str)}


async def test_a_typed_error_crosses_as_status_plus_stable_code_and_details(served: Any) -> None:
    _, _, channel = served
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await _raw(channel, "CloseSession")(
            m.CloseSessionRequest(session_id="nope").SerializeToString()
        )
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    tr = _trailers(err.value)
    assert tr[ERROR_CODE_METADATA_KEY] == "session_not_found"
    assert json.loads(tr[ERROR_DETAILS_METADATA_KEY]) == {"session_id": "nope"}


async def test_size_and_length_limits_and_malformed_bytes_are_invalid_argument(served: Any) -> None:
    core, _, channel = served
    long_text = "x" * (MAX_STRING_CHARS + 1)
    cases = [
        (
            "Search",
            t.RetrievalQuery(agent="hermes", query=long_text).SerializeToString(),
            "invalid_argument",
        ),
        ("TurnEnd", b"\n" + b"\xff" * 8, "protocol_error"),
        ("OpenSession", b"\x0a\x05\xff\xfe\xfd\xfc\xfb", "protocol_error"),  # invalid UTF-8
        (
            "TurnEnd",
            t.TurnResult(
                agent="a", session_id="s", agent_text="y" * (MAX_REQUEST_BYTES + 10)
            ).SerializeToString(),
            "invalid_argument",
        ),
    ]
    for method, payload, code in cases:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await _raw(channel, method)(payload)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, method
        assert _trailers(err.value)[ERROR_CODE_METADATA_KEY] == code, method
    assert (await core.health()).counts.get("traces", 0) == 0
    assert not core.journal.pending


async def _subscribe(channel: grpc.aio.Channel, **kw: Any) -> Any:
    stub = channel.unary_stream(
        "/stratamem.v1.MemoryService/SubscribeEvents",
        request_serializer=m.SubscribeEventsRequest.SerializeToString,
        response_deserializer=t.Event.FromString,
    )
    return stub(m.SubscribeEventsRequest(**kw))


async def test_event_resume_outside_the_epoch_or_buffer_is_out_of_range(served: Any) -> None:
    core, _, channel = served
    core.bus.emit("session.opened", {"session_id": "a", "agent": "x"})
    for kw in (
        {"since_seq": 1, "epoch": "some-other-epoch"},
        {"since_seq": 10_000, "epoch": core.bus.epoch},
        {"since_seq": -5},
    ):
        call = await _subscribe(channel, **kw)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await call.read()
        assert err.value.code() == grpc.StatusCode.OUT_OF_RANGE, kw
    ok = await _subscribe(channel, since_seq=0, epoch=core.bus.epoch)
    first = await asyncio.wait_for(ok.read(), 10)
    assert first.epoch == core.bus.epoch and first.seq >= 1
    ok.cancel()


async def test_a_slow_subscriber_is_dropped_with_a_clear_status_and_the_core_never_blocks(
    served: Any,
) -> None:
    core, _, channel = served
    call = await _subscribe(channel, types=["retrieval.empty"])
    await asyncio.sleep(0.3)  # subscribed; now never read while the core emits a flood
    started = time.perf_counter()
    for i in range(20_000):
        core.bus.emit(
            "retrieval.empty", {"reason": "tool_driven", "session_id": f"s{i}", "pad": "p" * 200}
        )
        if i % 500 == 0:
            await asyncio.sleep(0)
    emit_s = time.perf_counter() - started
    with pytest.raises(grpc.aio.AioRpcError) as err:
        while True:
            await asyncio.wait_for(call.read(), 10)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert _trailers(err.value)[ERROR_CODE_METADATA_KEY] == "quota_exceeded"
    assert "too slow" in (err.value.details() or "")
    assert emit_s < 30  # generous: emitting never waited on the subscriber


async def test_a_50ms_deadline_answers_cut_off_or_deadline_exceeded_within_deadline_plus_1s(
    served: Any,
) -> None:
    core, _, channel = served
    ts = int(time.time() * 1000)
    for i in range(300):
        await core.turn_end(
            TurnResult(
                agent="hermes",
                session_id=f"s{i % 7}",
                agent_text=f"answer {i} about deploys",
                user_text=f"how do I deploy service {i} to staging?",
                ts=ts + i,
                namespace=NS,
            )
        )
    search = channel.unary_unary(
        "/stratamem.v1.MemoryService/Search",
        request_serializer=t.RetrievalQuery.SerializeToString,
        response_deserializer=t.RetrievalResult.FromString,
    )
    query = t.RetrievalQuery(
        agent="hermes", query="deploy service to staging", reason="tool_driven"
    )
    for _ in range(3):
        started = time.perf_counter()
        try:
            res = await search(query, timeout=0.05)
            assert res.cut_off or time.perf_counter() - started <= 0.05 + 1.0
        except grpc.aio.AioRpcError as err:
            assert err.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert time.perf_counter() - started <= 0.05 + 1.0
    assert (await search(query, timeout=30)).query.query == query.query  # still serving


async def test_a_connected_host_lends_its_llm_and_a_disconnect_fails_over_cleanly(
    served: Any,
) -> None:
    from stratamem.core.llm.host import host_llm_registry

    _, _, channel = served
    stub = host_llm_pb2_grpc.HostLlmStub(channel)
    outbox: asyncio.Queue[h.HostLlmUpstream | None] = asyncio.Queue()
    await outbox.put(h.HostLlmUpstream(hello=h.HostLlmHello(host="test-host", model="tiny")))

    async def upstream() -> AsyncIterator[h.HostLlmUpstream]:
        while (item := await outbox.get()) is not None:
            yield item

    call = stub.Connect(upstream())

    async def host_loop() -> None:
        async for down in call:
            if down.WhichOneof("kind") == "request":
                text = " | ".join(x.content for x in down.request.messages).upper()
                await outbox.put(
                    h.HostLlmUpstream(
                        response=h.CompletionResponse(id=down.request.id, text=text, model="tiny")
                    )
                )

    loop_task = asyncio.create_task(host_loop())
    registry = host_llm_registry()
    done = await registry.complete([{"role": "user", "content": "hi there"}], timeout_s=10)
    assert done.text == "HI THERE" and done.model == "tiny"
    await outbox.put(None)
    call.cancel()
    loop_task.cancel()
    await asyncio.sleep(0.3)
    started = time.perf_counter()
    from stratamem.contract.errors import StratamemError

    with pytest.raises(StratamemError) as err:
        await registry.complete(
            [{"role": "user", "content": "anyone?"}], timeout_s=5, connect_timeout_s=0.2
        )
    assert err.value.code == "llm_unavailable"
    assert time.perf_counter() - started < 5


async def test_draining_ends_open_event_streams_instead_of_waiting_out_the_grace(
    tmp_path: Path,
) -> None:
    core = await open_local_core(tmp_path / "drain-home", embedding__provider="none")
    svc = await Service(core).start()
    channel = grpc.aio.insecure_channel(f"unix:{svc.socket_path}")
    try:
        call = await _subscribe(channel)
        await asyncio.sleep(0.3)
        core.bus.emit("session.opened", {"session_id": "x", "agent": "y"})
        assert (await asyncio.wait_for(call.read(), 10)).type == "session.opened"
        started = time.perf_counter()
        # Read while the drain runs: the stream's clean end (EOF) arrives before the transport
        # closes. Read after stop() returned, the client could see the closed socket
        # (UNAVAILABLE, broken pipe) before the trailers it already had.
        stopping = asyncio.create_task(svc.stop(10.0))
        assert await asyncio.wait_for(call.read(), 10) is grpc.aio.EOF
        await stopping
        assert time.perf_counter() - started < 5.0  # not the 10 s grace
    finally:
        await channel.close()
        await core.shutdown()


async def test_a_search_without_a_reason_is_tool_driven_as_the_proto_documents(served: Any) -> None:
    # proto3 sends an unset string as "": RetrievalQuery.reason documents "tool_driven" (default),
    # and a client that leaves it out (found in session 17's outside run) got invalid_argument
    core, _, channel = served
    ns = t.Namespace(agent_kind="hermes", profile_id="default")
    await core.turn_end(
        TurnResult(agent="hermes", session_id="s1", agent_text="Noted.", ts=1, namespace=NS,
                   user_text="The spare key is under the blue flowerpot.")
    )  # fmt: skip
    await core.flush()
    raw = await _raw(channel, "Search")(
        t.RetrievalQuery(
            agent="hermes", query="where is the spare key", namespace=ns
        ).SerializeToString()
    )
    result = t.RetrievalResult.FromString(raw)
    assert result.query.reason == "tool_driven"
    assert any("flowerpot" in h.snippet for h in result.hits)
