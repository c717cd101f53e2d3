"""The OpenAI-compatible LLM provider over real loopback HTTP with scripted answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.llm import (
    CircuitBreaker,
    ConcurrencyLimit,
    HostFallbackLlm,
    LimitedLlm,
    OpenAICompatibleLlm,
    llm_factories,
    load_llm,
)

MSGS = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "hi"}]


@pytest.fixture
def server() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer() as s:
        yield s


def make(server: StubOpenAIServer, **kw: object) -> OpenAICompatibleLlm:
    args: dict[str, object] = {
        "api_key": "sk-live-abc",
        "timeout_s": 3.0,
        "max_retries": 2,
        "base_backoff_s": 0.01,
    }
    args.update(kw)
    return OpenAICompatibleLlm(server.url, "stub-model", **args)  # type: ignore[arg-type]


async def test_completion_carries_text_model_usage_and_duration(server: StubOpenAIServer) -> None:
    server.push(
        "chat",
        StubAnswer(content='{"ok": true}', usage={"prompt_tokens": 5, "completion_tokens": 3}),
    )
    done = await make(server).complete(MSGS, json_mode=True, temperature=0.2, max_tokens=64)
    assert (
        done.text == '{"ok": true}'
        and done.model == "stub-model"
        and done.provider == "openai_compatible"
    )
    assert done.usage == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    assert done.duration_ms > 0
    req = server.calls("chat")[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["Authorization"] == "Bearer sk-live-abc"
    assert req.json["response_format"] == {"type": "json_object"}
    assert (
        req.json["messages"] == MSGS
        and req.json["temperature"] == 0.2
        and req.json["max_tokens"] == 64
    )


async def test_plain_mode_sends_no_response_format(server: StubOpenAIServer) -> None:
    await make(server).complete(MSGS)
    assert "response_format" not in server.calls("chat")[0].json


async def test_429_then_success_is_retried_with_backoff(server: StubOpenAIServer) -> None:
    server.push("chat", StubAnswer(status=429), StubAnswer(content="fine"))
    done = await make(server).complete(MSGS)
    assert done.text == "fine" and len(server.calls("chat")) == 2


async def test_5xx_retries_are_bounded_and_rate_limit_is_typed(server: StubOpenAIServer) -> None:
    server.push("chat", *[StubAnswer(status=429)] * 3)
    with pytest.raises(StratamemError) as exc:
        await make(server, max_retries=2).complete(MSGS)
    assert exc.value.code == ErrorCode.LLM_RATE_LIMITED
    assert len(server.calls("chat")) == 3
    server.push("chat", *[StubAnswer(status=502)] * 6)
    with pytest.raises(StratamemError) as exc2:
        await make(server, max_retries=0).complete(MSGS)
    assert exc2.value.code == ErrorCode.LLM_UNAVAILABLE
    assert len(server.calls("chat")) == 4


async def test_slow_answer_times_out_within_the_bound(server: StubOpenAIServer) -> None:
    server.push("chat", *[StubAnswer(content="late", delay_s=60.0)] * 10)
    t0 = time.monotonic()
    with pytest.raises(StratamemError) as exc:
        await make(server, max_retries=9).complete(MSGS, timeout_s=1.0)
    assert exc.value.code == ErrorCode.LLM_TIMEOUT
    # the budget covers every retry, not each one (that would be ≥ 10 s): a generous bound
    assert time.monotonic() - t0 < 6.0


async def test_401_opens_the_breaker_and_the_next_call_fails_fast(server: StubOpenAIServer) -> None:
    llm = make(server)
    server.push("chat", StubAnswer(status=401))
    with pytest.raises(StratamemError) as exc:
        await llm.complete(MSGS)
    assert exc.value.code == ErrorCode.LLM_UNAVAILABLE and exc.value.details["breaker_open"] is True
    assert len(server.calls("chat")) == 1  # terminal: not retried
    with pytest.raises(StratamemError) as exc2:
        await llm.complete(MSGS)
    assert exc2.value.details["breaker_open"] is True and exc2.value.details["retry_in_s"] > 0
    assert len(server.calls("chat")) == 1  # no request reached the server
    llm.breaker.reset()
    assert (await llm.complete(MSGS)).text == "{}"


@pytest.mark.parametrize("status", [402, 403])
async def test_other_terminal_statuses_open_the_breaker(
    server: StubOpenAIServer, status: int
) -> None:
    llm = make(server)
    server.push("chat", StubAnswer(status=status))
    with pytest.raises(StratamemError):
        await llm.complete(MSGS)
    assert llm.breaker.is_open


async def test_insufficient_balance_text_is_terminal(server: StubOpenAIServer) -> None:
    llm = make(server)
    server.push("chat", StubAnswer(status=400, body={"error": {"message": "Insufficient Balance"}}))
    with pytest.raises(StratamemError):
        await llm.complete(MSGS)
    assert llm.breaker.is_open


def test_breaker_closes_after_its_cooldown() -> None:
    now = [100.0]
    b = CircuitBreaker(cooldown_s=30.0, clock=lambda: now[0])
    b.trip("HTTP 401")
    assert b.is_open and b.remaining_s == pytest.approx(30.0)
    now[0] += 29.0
    assert b.is_open
    now[0] += 2.0
    assert not b.is_open


async def test_answer_without_content_is_malformed(server: StubOpenAIServer) -> None:
    server.push("chat", StubAnswer(body={"choices": []}))
    with pytest.raises(StratamemError) as exc:
        await make(server).complete(MSGS)
    assert exc.value.code == ErrorCode.LLM_OUTPUT_MALFORMED


async def test_bad_messages_are_rejected_before_any_request(server: StubOpenAIServer) -> None:
    llm = make(server)
    for bad in ([], [{"role": "user"}], "hi", [{"role": "user", "content": 3}]):
        with pytest.raises(StratamemError) as exc:
            await llm.complete(bad)  # type: ignore[arg-type]
        assert exc.value.code == ErrorCode.INVALID_ARGUMENT
    assert server.calls("chat") == []


async def test_shared_limit_caps_concurrent_background_calls(server: StubOpenAIServer) -> None:
    for _ in range(6):
        server.push("chat", StubAnswer(content="x", delay_s=0.15))
    limit = ConcurrencyLimit(2)
    llm = LimitedLlm(make(server), limit)
    other = LimitedLlm(make(server), limit)  # a second stage sharing the same limit
    results = await asyncio.gather(*[(llm if i % 2 else other).complete(MSGS) for i in range(6)])
    assert [r.text for r in results] == ["x"] * 6
    assert limit.peak == 2 and limit.in_use == 0


def test_load_llm_none_by_default_and_for_none() -> None:
    assert load_llm({}) is None
    assert load_llm({"provider": ""}) is None
    assert load_llm({"provider": "none"}) is None
    assert {"none", "openai_compatible", "host"} <= set(llm_factories())


def test_load_llm_openai_wraps_with_host_fallback_unless_disabled(server: StubOpenAIServer) -> None:
    cfg = {
        "provider": "openai_compatible",
        "endpoint": server.url,
        "model": "m",
        "api_key": "k",
        "timeout_ms": 5000,
    }
    wrapped = load_llm(cfg)
    assert isinstance(wrapped, HostFallbackLlm) and isinstance(wrapped.primary, OpenAICompatibleLlm)
    plain = load_llm({**cfg, "fallback_to_host": False})
    assert isinstance(plain, OpenAICompatibleLlm) and plain.timeout_s == 5.0


def test_load_llm_bad_config_is_config_invalid() -> None:
    with pytest.raises(StratamemError) as exc:
        load_llm({"provider": "gpt-magic"})
    assert exc.value.code == ErrorCode.CONFIG_INVALID and exc.value.details["key"] == "llm.provider"
    with pytest.raises(StratamemError) as exc2:
        load_llm({"provider": "openai_compatible", "model": "m"})
    assert exc2.value.details["key"] == "llm.endpoint"
    with pytest.raises(StratamemError) as exc3:
        load_llm(
            {
                "provider": "openai_compatible",
                "model": "m",
                "endpoint": "http://x",
                "max_retries": 99,
            }
        )
    assert exc3.value.details["key"] == "llm.max_retries"


def test_load_llm_accepts_the_whole_config(server: StubOpenAIServer) -> None:
    from stratamem.core.config.defaults import defaults

    cfg = defaults()
    assert load_llm(cfg) is None
    cfg["llm"].update(provider="openai_compatible", endpoint=server.url, model="m")
    assert isinstance(load_llm(cfg), HostFallbackLlm)
