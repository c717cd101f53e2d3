"""Ask the optional LLM for a small JSON verdict; any failure means "no verdict" (heuristics decide).

``llm`` follows ``stratamem.core.llm.LlmProvider``: ``async complete(messages, *, json_mode,
temperature, timeout_s) -> Completion`` (with ``.text``).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any, Protocol


class CompletionLLM(Protocol):
    async def complete(self, messages: list[Any], **kwargs: Any) -> Any: ...


async def complete_text(llm: CompletionLLM, prompt: str, *, timeout_s: float) -> str:
    """One JSON-mode completion of a single user message; the answer text."""
    done = await asyncio.wait_for(
        llm.complete(
            [{"role": "user", "content": prompt}],
            json_mode=True,
            temperature=0.0,
            timeout_s=timeout_s,
        ),
        timeout_s,
    )
    text = getattr(done, "text", done)
    return text if isinstance(text, str) else ""


_OBJ = re.compile(r"\{.*\}", re.S)


async def ask_json(
    llm: CompletionLLM | None, prompt: str, *, timeout_s: float, retries: int = 1
) -> dict[str, Any] | None:
    """The first JSON object in the LLM's answer, or ``None`` (no LLM, timeout, error, malformed)."""
    if llm is None:
        return None
    for _ in range(retries + 1):
        try:
            raw = await complete_text(llm, prompt, timeout_s=timeout_s)
        except Exception:
            return None
        m = _OBJ.search(raw or "")
        if not m:
            continue
        try:
            data = json.loads(m.group(0))
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


def clamp01(value: Any, default: float = 0.5) -> float:
    try:
        return max(0.0, min(1.0, float(value)))
    except (TypeError, ValueError):
        return default
