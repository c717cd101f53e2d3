"""``complete_json``: malformed JSON is retried at most ``retries`` times, then ``None`` (zero allowed)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from stub_server import StubAnswer, StubOpenAIServer

from stratamem.core.llm import OpenAICompatibleLlm, complete_json, parse_json_object

MSGS = [{"role": "user", "content": "classify"}]


@pytest.fixture
def server() -> Iterator[StubOpenAIServer]:
    with StubOpenAIServer() as s:
        yield s


def llm(server: StubOpenAIServer) -> OpenAICompatibleLlm:
    return OpenAICompatibleLlm(server.url, "m", timeout_s=3.0, max_retries=0)


def has_label(d: dict[str, Any]) -> bool:
    return d["label"] in {"task", "chitchat"}


async def test_valid_json_is_returned_after_one_call(server: StubOpenAIServer) -> None:
    server.push("chat", StubAnswer(content='{"label": "task", "confidence": 0.9}'))
    out = await complete_json(llm(server), MSGS, retries=2, validate=has_label)
    assert out == {"label": "task", "confidence": 0.9}
    assert len(server.calls("chat")) == 1
    assert server.calls("chat")[0].json["response_format"] == {"type": "json_object"}


async def test_malformed_then_valid_succeeds_on_the_retry(server: StubOpenAIServer) -> None:
    server.push(
        "chat", StubAnswer(content="sure! label=task"), StubAnswer(content='{"label": "chitchat"}')
    )
    out = await complete_json(llm(server), MSGS, retries=1, validate=has_label)
    assert out == {"label": "chitchat"}
    second = server.calls("chat")[1].json["messages"]
    assert second[-2] == {"role": "assistant", "content": "sure! label=task"}
    assert "JSON" in second[-1]["content"]


async def test_zero_retries_means_exactly_one_call(server: StubOpenAIServer) -> None:
    server.push("chat", StubAnswer(content="not json"), StubAnswer(content='{"label": "task"}'))
    assert await complete_json(llm(server), MSGS, retries=0) is None
    assert len(server.calls("chat")) == 1


async def test_retries_are_bounded_then_none(server: StubOpenAIServer) -> None:
    server.push("chat", *[StubAnswer(content="{broken")] * 5)
    assert await complete_json(llm(server), MSGS, retries=2) is None
    assert len(server.calls("chat")) == 3


async def test_failed_validation_counts_as_malformed(server: StubOpenAIServer) -> None:
    server.push("chat", StubAnswer(content='{"label": "poem"}'), StubAnswer(content='{"other": 1}'))
    assert await complete_json(llm(server), MSGS, retries=1, validate=has_label) is None
    assert len(server.calls("chat")) == 2


async def test_provider_failure_or_no_provider_gives_none(server: StubOpenAIServer) -> None:
    assert await complete_json(None, MSGS, retries=3) is None
    server.push("chat", StubAnswer(status=500))
    assert await complete_json(llm(server), MSGS, retries=3) is None
    assert len(server.calls("chat")) == 1  # an unavailable provider is not hammered


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('Here you go: {"a": {"b": 2}} hope it helps', {"a": {"b": 2}}),
        ("[1, 2]", None),
        ("", None),
        ("{'a': 1}", None),
    ],
)
def test_json_objects_are_found_in_fences_and_prose(
    text: str, expected: dict[str, Any] | None
) -> None:
    assert parse_json_object(text) == expected
