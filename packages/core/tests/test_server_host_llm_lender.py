"""A host lends its model over the real ``HostLlm`` stream (the host kit's ``HostLlmLender``):
offered ``as_default``, it is the service's LLM while connected if the config names no provider."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.hostkit.host_llm import HostLlmLender
from stratamem.core import LocalCore
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[LocalCore, Service]]:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    try:
        yield core, svc
    finally:
        await svc.stop(1.0)
        await core.shutdown()


class HostModel:
    """The host's own model (a paid LLM in real use): records what the core asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[dict[str, str]], dict[str, Any]]] = []
        self.threads: set[str] = set()

    def __call__(self, messages: list[dict[str, str]], **kw: Any) -> dict[str, Any]:
        self.calls.append((messages, kw))
        self.threads.add(threading.current_thread().name)
        return {"text": "HOST: " + messages[-1]["content"], "model": "host-model", "usage": {}}


async def _until(check: Callable[[], bool], within_s: float = 30.0) -> bool:
    """Poll ``check`` (a generous bound: the machine is shared)."""
    for _ in range(int(within_s / 0.05)):
        if check():
            return True
        await asyncio.sleep(0.05)
    return check()


async def test_a_default_lender_is_the_llm_while_connected_and_only_then(
    served: tuple[LocalCore, Service],
) -> None:
    core, svc = served
    assert core.llm is None and (await core.health()).llm.provider == "none"
    model = HostModel()
    lender = HostLlmLender(
        lambda: f"unix:{svc.socket_path}", model, host="test-host", as_default=True
    ).start()
    try:
        assert await _until(lambda: core.llm is not None)
        assert (await core.health()).llm.provider == "host"
        done = await core.llm.complete(
            [{"role": "user", "content": "summarise: teal"}], json_mode=True, timeout_s=20
        )
        assert done.text == "HOST: summarise: teal" and done.model == "host-model"
        messages, kw = model.calls[-1]
        assert messages == [{"role": "user", "content": "summarise: teal"}]
        assert kw["json_mode"] is True and kw["timeout_ms"] == 20_000
        assert model.threads and all(t.startswith("llm-lend") for t in model.threads)
        assert lender.served == 1
    finally:
        lender.close()
    assert await _until(lambda: core.llm is None)
    assert (await core.health()).llm.provider == "none"


async def test_a_lender_that_does_not_offer_itself_as_default_leaves_the_core_without_an_llm(
    served: tuple[LocalCore, Service],
) -> None:
    core, svc = served
    lender = HostLlmLender(lambda: f"unix:{svc.socket_path}", HostModel(), host="h").start()
    try:
        assert lender.wait_streaming(30)
        assert await _until(lambda: svc.broker.connected)
        assert core.llm is None
    finally:
        lender.close()


async def test_a_failing_host_model_is_a_typed_llm_error_and_the_stream_stays_up(
    served: tuple[LocalCore, Service],
) -> None:
    from stratamem.contract.errors import ErrorCode, StratamemError

    core, svc = served

    def broken(messages: list[dict[str, str]], **kw: Any) -> Any:
        raise RuntimeError("the provider is down")

    lender = HostLlmLender(
        lambda: f"unix:{svc.socket_path}", broken, host="h", as_default=True
    ).start()
    try:
        assert await _until(lambda: core.llm is not None)
        for _ in range(2):
            with pytest.raises(StratamemError) as err:
                await core.llm.complete([{"role": "user", "content": "x"}], timeout_s=20)
            assert err.value.code == ErrorCode.LLM_UNAVAILABLE
            assert "the provider is down" in str(err.value)
    finally:
        lender.close()


async def test_the_lender_comes_back_when_the_service_restarts(tmp_path: Path) -> None:
    """The service leaves (drain, idle exit) and a new one takes the home: a lending host process
    connects again by itself, and the new service borrows its model as the old one did."""
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    first = await Service(core).start()
    socket = first.socket_path
    model = HostModel()
    lender = HostLlmLender(lambda: f"unix:{socket}", model, host="h", as_default=True).start()
    second: Service | None = None
    try:
        assert await _until(lambda: core.llm is not None)
        await first.stop(1.0)
        assert await _until(lambda: core.llm is None)  # the stream ended with the service
        second = await Service(core).start()
        assert second.socket_path == socket
        assert await _until(lambda: core.llm is not None)
        done = await core.llm.complete([{"role": "user", "content": "again"}], timeout_s=20)
        assert done.text == "HOST: again"
    finally:
        lender.close()
        if second is not None:
            await second.stop(1.0)
        await core.shutdown()
