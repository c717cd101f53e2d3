"""The optional LLM tie-break of routing and summaries, over a real HTTP stub of an OpenAI-compatible API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.core.capture import summarise
from stratamem.core.llm.openai_compatible import OpenAICompatibleLlm
from stratamem.core.routing import classify_intent_async, classify_relation_async

PREV = "Set up the billing database"


@pytest.fixture
def server() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer() as s:
        yield s


def llm(server: StubOpenAIServer) -> OpenAICompatibleLlm:
    return OpenAICompatibleLlm(server.url, "stub", api_key="k", timeout_s=3.0, max_retries=0)


async def test_no_llm_means_heuristics_only() -> None:
    r = await classify_relation_async("how many replicas?", PREV, "done", 1000)
    assert (r.kind, r.confidence) == ("follow_up", 0.5)
    assert (await classify_intent_async("odd weather")).kind == "unknown"
    assert await summarise("  user   text ", "agent") == "user text"


async def test_a_strong_heuristic_never_asks_the_llm(server: StubOpenAIServer) -> None:
    r = await classify_relation_async("wrong, redo it", PREV, "done", 1000, llm=llm(server))
    assert r.kind == "revision" and server.calls("chat") == []


async def test_the_llm_breaks_a_weak_tie(server: StubOpenAIServer) -> None:
    server.push("chat", StubAnswer(content='{"relation": "revision", "confidence": 0.7}'))
    r = await classify_relation_async("how many replicas?", PREV, "done", 1000, llm=llm(server))
    assert (r.kind, r.confidence, r.reason) == ("revision", 0.7, "llm")


async def test_an_unsure_new_task_verdict_is_arbitrated_towards_follow_up(
    server: StubOpenAIServer,
) -> None:
    server.push("chat", StubAnswer(content='{"relation": "new_task", "confidence": 0.6}'))
    server.push("chat", StubAnswer(content='{"relation": "follow_up"}'))
    r = await classify_relation_async("and the replicas?", PREV, "done", 1000, llm=llm(server))
    assert (r.kind, r.confidence) == ("follow_up", 0.55) and len(server.calls("chat")) == 2


async def test_malformed_or_failing_llm_falls_back_to_heuristics(server: StubOpenAIServer) -> None:
    server.push("chat", StubAnswer(content="not json at all"))
    server.push("chat", StubAnswer(content="still not json"))
    r = await classify_relation_async("how many replicas?", PREV, "done", 1000, llm=llm(server))
    assert (r.kind, r.confidence) == ("follow_up", 0.5)
    server.push("chat", StubAnswer(status=500, content="boom"))
    i = await classify_intent_async("odd weather today", llm=llm(server))
    assert (i.kind, i.confidence) == ("unknown", 0.4)


async def test_intent_llm_verdict_sets_the_tiers(server: StubOpenAIServer) -> None:
    server.push("chat", StubAnswer(content='{"intent": "memory_probe", "confidence": 0.8}'))
    i = await classify_intent_async("odd weather today", llm=llm(server))
    assert (i.kind, i.tiers) == ("memory_probe", (1, 2))


async def test_llm_summary_is_clamped_and_failure_uses_the_heuristic(
    server: StubOpenAIServer,
) -> None:
    server.push("chat", StubAnswer(content='{"summary": "' + "s" * 300 + '"}'))
    out = await summarise("user", "agent", llm=llm(server))
    assert len(out) == 140 and out.endswith("…")
    server.push("chat", StubAnswer(status=500, content="x"))
    assert await summarise("user asks", "agent", llm=llm(server)) == "user asks"
