"""What an LLM provider is to the core: ``async complete(messages) -> Completion`` with typed failures.

Every caller must survive ``None`` (no LLM) and ``llm_*`` errors with a deterministic fallback.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from stratamem.contract.errors import ErrorCode, StratamemError

Message = dict[str, str]


def usage_of(raw: Any) -> dict[str, int]:
    """``{prompt_tokens, completion_tokens, total_tokens}`` from an OpenAI-style usage block (or zeros)."""
    src = raw if isinstance(raw, Mapping) else {}
    out: dict[str, int] = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        try:
            out[key] = int(src.get(key) or 0)
        except (TypeError, ValueError):
            out[key] = 0
    if not out["total_tokens"]:
        out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
    return out


def check_messages(messages: Any) -> list[Message]:
    """A clean copy of chat ``messages``; anything else is ``invalid_argument``."""
    if not isinstance(messages, list) or not messages:
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, "messages must be a non-empty list")
    for i, m in enumerate(messages):
        if (
            not isinstance(m, Mapping)
            or not isinstance(m.get("role"), str)
            or not isinstance(m.get("content"), str)
        ):
            raise StratamemError(
                ErrorCode.INVALID_ARGUMENT,
                f"message {i} must be {{'role': str, 'content': str}}",
                {"index": i},
            )
    return [{"role": m["role"], "content": m["content"]} for m in messages]


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    usage: dict[str, int] = field(default_factory=lambda: usage_of(None))
    duration_ms: float = 0.0
    provider: str = ""


@runtime_checkable
class LlmProvider(Protocol):
    name: str
    model: str

    async def complete(
        self,
        messages: list[Message],
        *,
        json_mode: bool = False,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> Completion: ...


LlmFactory = Callable[[Mapping[str, Any]], "LlmProvider | None"]
