"""The OpenClaw host service inside the real ``stratamem serve`` assembly, called over its Unix socket."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from stratamem.core import LocalCore
from stratamem.core.server.app import ServeOptions, Service
from stratamem.hosts.openclaw.v1 import openclaw_pb2 as pb
from stratamem.hosts.openclaw.v1 import openclaw_pb2_grpc as pb_grpc


@pytest.fixture
async def stub(core: LocalCore) -> AsyncIterator[pb_grpc.OpenClawHostStub]:
    service = await Service(core, ServeOptions(drain_s=0.5)).start()
    try:
        async with grpc.aio.insecure_channel(f"unix:{service.socket_path}") as channel:
            yield pb_grpc.OpenClawHostStub(channel)
    finally:
        await service.stop(0.5)


def ctx(session_key: str, run_id: str) -> pb.HookContext:
    return pb.HookContext(
        run_id=run_id, agent_id="main", session_key=session_key, workspace_dir="/tmp/ws"
    )


def transcript(user: str, answer: str) -> str:
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": user}], "timestamp": 1},
        {"role": "assistant", "content": [{"type": "text", "text": answer}], "timestamp": 2},
    ]
    return json.dumps(msgs)


async def test_serve_exposes_the_host_service_and_recalls_across_sessions(
    stub: pb_grpc.OpenClawHostStub,
) -> None:
    text = "The staging database is called Marlinspike-7."
    await stub.MessageReceived(
        pb.MessageReceivedRequest(ctx=ctx("agent:main:a", "r1"), content=text)
    )
    first = await stub.BeforePromptBuild(
        pb.BeforePromptBuildRequest(ctx=ctx("agent:main:a", "r1"), prompt=text, messages_json="[]"),
        timeout=5,
    )
    assert first.episode_id
    end = await stub.AgentEnd(
        pb.AgentEndRequest(
            ctx=ctx("agent:main:a", "r1"), messages_json=transcript(text, "Noted."), success=True
        ),
        timeout=25,
    )
    assert end.captured and end.trace_id
    second = await stub.BeforePromptBuild(
        pb.BeforePromptBuildRequest(
            ctx=ctx("agent:main:b", "r2"),
            prompt="What is the staging database Marlinspike called?",
            messages_json="[]",
        ),
        timeout=5,
    )
    assert "<memos_context>" in second.prepend_context
    assert "Marlinspike-7" in second.prepend_context
    found = await stub.MemosSearch(
        pb.SearchRequest(ctx=ctx("agent:main:b", "r2"), query="staging database")
    )
    assert "Marlinspike-7" in found.text
    assert json.loads(found.details_json)["hits"]


async def test_bad_tool_parameters_are_invalid_argument_and_change_nothing(
    stub: pb_grpc.OpenClawHostStub,
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.MemosSearch(
            pb.SearchRequest(ctx=ctx("agent:main:a", "r"), query="x", max_results=99)
        )
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.MemosGet(pb.GetRequest(ctx=ctx("agent:main:a", "r"), id="t1", kind="banana"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await stub.AgentEnd(
            pb.AgentEndRequest(ctx=ctx("agent:main:a", "r"), messages_json="{not json")
        )
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_after_tool_call_reports_the_failure_streak(stub: pb_grpc.OpenClawHostStub) -> None:
    c = ctx("agent:main:t", "rt")
    counts = []
    for i in range(3):
        ack = await stub.AfterToolCall(
            pb.ToolCallEvent(ctx=c, tool_name="exec", tool_call_id=f"c{i}", error="exit 1")
        )
        counts.append(ack.consecutive_failures)
    assert counts == [1, 2, 3]
