"""Ask for JSON and get a validated dict, or ``None`` after at most ``retries`` malformed answers.

``None`` (also on any provider failure) tells the caller to take its deterministic fallback.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.llm.base import LlmProvider, Message
from stratamem.core.telemetry import get_logger

log = get_logger("llm")

_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S | re.I)
_OBJECT = re.compile(r"\{.*\}", re.S)
RETRY_HINT = "Your previous answer was not a valid JSON object of the requested shape. Reply with only that JSON object."


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text`` (bare, fenced, or surrounded by prose), else ``None``."""
    s = text.strip()
    m = _FENCE.match(s)
    if m:
        s = m.group(1)
    for candidate in (s, *(x.group(0) for x in [_OBJECT.search(s)] if x)):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


async def complete_json(
    provider: LlmProvider | None,
    messages: list[Message],
    *,
    retries: int,
    validate: Callable[[dict[str, Any]], bool] | None = None,
    temperature: float = 0.0,
    max_tokens: int | None = None,
    timeout_s: float | None = None,
    raise_timeout: bool = False,
) -> dict[str, Any] | None:
    """At most ``1 + retries`` calls. ``validate`` returning False or raising ValueError/KeyError/
    TypeError marks an answer malformed. Provider errors end the attempt with ``None`` at once;
    with ``raise_timeout`` a provider timeout raises ``TimeoutError`` instead, so a caller racing a
    deadline sees the same outcome whichever of the two timers fires first."""
    if provider is None:
        return None
    convo = list(messages)
    for attempt in range(max(0, retries) + 1):
        try:
            done = await provider.complete(
                convo,
                json_mode=True,
                temperature=temperature,
                max_tokens=max_tokens,
                timeout_s=timeout_s,
            )
        except StratamemError as err:
            if raise_timeout and err.code == ErrorCode.LLM_TIMEOUT:
                raise TimeoutError(str(err)) from err
            log.info(
                "llm.json_failed", provider=provider.name, code=err.code.value, attempt=attempt + 1
            )
            return None
        data = parse_json_object(done.text)
        ok = data is not None
        if data is not None and validate is not None:
            try:
                ok = bool(validate(data))
            except (ValueError, KeyError, TypeError):
                ok = False
        if ok:
            return data
        log.info("llm.json_malformed", provider=provider.name, attempt=attempt + 1, retries=retries)
        convo = [
            *convo,
            {"role": "assistant", "content": done.text},
            {"role": "user", "content": RETRY_HINT},
        ]
    return None
