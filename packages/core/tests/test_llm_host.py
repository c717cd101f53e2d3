"""The ``host`` provider and ``llm.fallback_to_host``: a connected host lends its LLM to the core."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.llm import (
    Completion,
    HostFallbackLlm,
    HostLlmProvider,
    HostLlmRegistry,
    OpenAICompatibleLlm,
    host_llm_registry,
    load_llm,
    register_host_llm,
)

MSGS = [{"role": "user", "content": "summarise"}]


@pytest.fixture
def server() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer() as s:
        yield s


async def test_no_host_connected_times_out_with_llm_unavailable() -> None:
    provider = HostLlmProvider(HostLlmRegistry(), connect_timeout_s=0.2)
    t0 = time.monotonic()
    with pytest.raises(StratamemError) as exc:
        await provider.complete(MSGS)
    assert exc.value.code == ErrorCode.LLM_UNAVAILABLE
    assert 0.15 <= time.monotonic() - t0 < 10  # no host ever connects: a generous bound


async def test_async_callable_answers_and_gets_the_options() -> None:
    reg = HostLlmRegistry()
    seen: dict[str, Any] = {}

    async def lend(messages: list[dict[str, str]], **kw: Any) -> dict[str, Any]:
        seen.update(kw, messages=messages)
        return {
            "text": "from host",
            "model": "host-model",
            "usage": {"prompt_tokens": 4, "completion_tokens": 2},
        }

    reg.register(lend, name="adapter")
    done = await HostLlmProvider(reg).complete(MSGS, json_mode=True, max_tokens=50, timeout_s=5)
    assert done == Completion(
        "from host",
        "host-model",
        {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
        done.duration_ms,
        "host",
    )
    assert seen["json_mode"] is True and seen["max_tokens"] == 50 and seen["timeout_ms"] == 5000
    assert seen["messages"] == MSGS


async def test_sync_callable_runs_off_the_event_loop() -> None:
    reg = HostLlmRegistry()
    loop_thread = threading.get_ident()
    ran_on: list[int] = []

    def lend(messages: list[dict[str, str]], **kw: Any) -> str:
        ran_on.append(threading.get_ident())
        return "sync answer"

    reg.register(lend)
    assert (await HostLlmProvider(reg).complete(MSGS)).text == "sync answer"
    assert ran_on and ran_on[0] != loop_thread


async def test_host_that_connects_while_waiting_is_used() -> None:
    reg = HostLlmRegistry()

    async def connect_later() -> None:
        await asyncio.sleep(0.1)
        reg.register(lambda messages, **kw: "late host")

    task = asyncio.create_task(connect_later())
    done = await HostLlmProvider(reg, connect_timeout_s=2.0).complete(MSGS)
    await task
    assert done.text == "late host"


async def test_slow_host_times_out_and_unregistered_host_is_gone() -> None:
    reg = HostLlmRegistry()

    async def slow(messages: list[dict[str, str]], **kw: Any) -> str:
        await asyncio.sleep(5)
        return "never"

    unregister = reg.register(slow)
    with pytest.raises(StratamemError) as exc:
        await HostLlmProvider(reg).complete(MSGS, timeout_s=0.3)
    assert exc.value.code == ErrorCode.LLM_TIMEOUT
    unregister()
    assert not reg.connected


async def test_a_disconnected_transport_is_skipped() -> None:
    reg = HostLlmRegistry()

    class Broker:
        connected = False

        async def complete(self, messages: list[dict[str, str]], **kw: Any) -> dict[str, Any]:
            return {"text": "broker"}

    broker = Broker()
    reg.register(broker, name="grpc")
    assert not reg.connected
    broker.connected = True
    assert (await HostLlmProvider(reg).complete(MSGS)).text == "broker"


async def test_transport_living_on_another_loop_is_called_there() -> None:
    other = asyncio.new_event_loop()
    thread = threading.Thread(target=other.run_forever, daemon=True)
    thread.start()
    try:

        class Broker:
            connected = True
            loop = other

            async def complete(self, messages: list[dict[str, str]], **kw: Any) -> str:
                assert asyncio.get_running_loop() is other
                return "answered on the server loop"

        reg = HostLlmRegistry()
        reg.register(Broker())
        assert (await HostLlmProvider(reg).complete(MSGS)).text == "answered on the server loop"
    finally:
        other.call_soon_threadsafe(other.stop)
        thread.join(timeout=5)
        other.close()


async def test_host_errors_are_typed() -> None:
    reg = HostLlmRegistry()

    def broken(messages: list[dict[str, str]], **kw: Any) -> str:
        raise RuntimeError("model crashed")

    reg.register(broken)
    with pytest.raises(StratamemError) as exc:
        await HostLlmProvider(reg).complete(MSGS)
    assert exc.value.code == ErrorCode.LLM_UNAVAILABLE and "model crashed" in exc.value.message
    reg.clear()
    reg.register(lambda messages, **kw: 42)
    with pytest.raises(StratamemError) as exc2:
        await HostLlmProvider(reg).complete(MSGS)
    assert exc2.value.code == ErrorCode.LLM_OUTPUT_MALFORMED


async def test_failing_provider_falls_back_to_a_connected_host(server: StubOpenAIServer) -> None:
    reg = HostLlmRegistry()
    reg.register(lambda messages, **kw: "host saved the day")
    primary = OpenAICompatibleLlm(server.url, "m", max_retries=0)
    llm = HostFallbackLlm(primary, reg)
    server.push("chat", StubAnswer(status=503))
    assert (await llm.complete(MSGS)).text == "host saved the day"
    server.push("chat", StubAnswer(content="   "))
    assert (await llm.complete(MSGS)).text == "host saved the day"  # empty answer
    server.push("chat", StubAnswer(content="primary"))
    assert (await llm.complete(MSGS)).text == "primary"


async def test_without_a_host_the_providers_error_stands(server: StubOpenAIServer) -> None:
    llm = HostFallbackLlm(OpenAICompatibleLlm(server.url, "m", max_retries=0), HostLlmRegistry())
    server.push("chat", StubAnswer(status=503))
    with pytest.raises(StratamemError) as exc:
        await llm.complete(MSGS)
    assert exc.value.code == ErrorCode.LLM_UNAVAILABLE
    server.push("chat", StubAnswer(content=""))
    assert (await llm.complete(MSGS)).text == ""


async def test_in_process_adapter_registers_on_the_shared_registry() -> None:
    provider = load_llm({"provider": "host", "host_connect_timeout_ms": 100})
    assert isinstance(provider, HostLlmProvider) and provider.registry is host_llm_registry()
    unregister = register_host_llm(lambda messages, **kw: "shared")
    try:
        assert (await provider.complete(MSGS)).text == "shared"
    finally:
        unregister()
    with pytest.raises(StratamemError):
        await provider.complete(MSGS)
