"""Chat completions over OpenAI-compatible HTTP: JSON mode, timeouts, jittered retries on 429/5xx,
a circuit breaker on terminal errors, and token/latency accounting in the ``llm`` log and spans."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.config.settings import Section
from stratamem.core.llm.base import Completion, Message, check_messages, usage_of
from stratamem.core.llm.breaker import DEFAULT_COOLDOWN_S, CircuitBreaker
from stratamem.core.llm.limits import ConcurrencyLimit
from stratamem.core.llm.transport import HttpError, join_url, post_json
from stratamem.core.telemetry import get_logger, span

log = get_logger("llm")


class OpenAICompatibleLlm:
    name = "openai_compatible"

    def __init__(
        self,
        endpoint: str,
        model: str,
        *,
        api_key: str = "",
        timeout_s: float = 45.0,
        max_retries: int = 3,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        limit: ConcurrencyLimit | None = None,
        base_backoff_s: float = 0.25,
    ) -> None:
        for key, value in (("llm.endpoint", endpoint), ("llm.model", model)):
            if not value:
                raise StratamemError(
                    ErrorCode.CONFIG_INVALID,
                    f"{key} is required for provider openai_compatible",
                    {"key": key},
                )
        if not 0 <= max_retries <= 10:
            raise StratamemError(
                ErrorCode.CONFIG_INVALID, "llm.max_retries must be 0–10", {"key": "llm.max_retries"}
            )
        self.model = model
        self.url = join_url(endpoint, "/chat/completions")
        self._api_key = api_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.breaker = CircuitBreaker(cooldown_s)
        self.limit = limit
        self.base_backoff_s = base_backoff_s

    async def complete(
        self,
        messages: list[Message],
        *,
        json_mode: bool = False,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> Completion:
        msgs = check_messages(messages)
        if self.breaker.is_open:
            raise StratamemError(
                ErrorCode.LLM_UNAVAILABLE,
                f"LLM circuit open after a terminal error ({self.breaker.reason}); "
                f"retrying in {self.breaker.remaining_s:.0f}s",
                {"breaker_open": True, "retry_in_s": round(self.breaker.remaining_s, 1)},
            )
        body: dict[str, Any] = {"model": self.model, "messages": msgs, "temperature": temperature}
        if max_tokens is not None:
            body["max_tokens"] = int(max_tokens)
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        budget = float(timeout_s) if timeout_s is not None else self.timeout_s
        if self.limit is not None:
            async with self.limit:
                return await self._call(body, budget, json_mode)
        return await self._call(body, budget, json_mode)

    async def _call(self, body: dict[str, Any], budget_s: float, json_mode: bool) -> Completion:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        started = time.perf_counter()
        deadline = time.monotonic() + budget_s
        with span("llm.complete", provider=self.name, model=self.model, json_mode=json_mode) as sp:
            try:
                res = await asyncio.to_thread(
                    post_json,
                    self.url,
                    body,
                    headers=headers,
                    timeout_s=budget_s,
                    max_retries=self.max_retries,
                    deadline=deadline,
                    base_backoff_s=self.base_backoff_s,
                )
            except HttpError as err:
                duration_ms = (time.perf_counter() - started) * 1000
                error = self._typed(err)
                sp.set_attribute("llm.error", error.code.value)
                sp.set_attribute("llm.attempts", err.attempts)
                log.warning(
                    "llm.call_failed",
                    provider=self.name,
                    model=self.model,
                    status=err.status,
                    code=error.code.value,
                    attempts=err.attempts,
                    duration_ms=round(duration_ms, 1),
                )
                raise error from err
            duration_ms = (time.perf_counter() - started) * 1000
            try:
                choice = res.data["choices"][0]
                text = choice["message"]["content"]
                if text is None:
                    text = ""
                if not isinstance(text, str):
                    raise TypeError("content is not a string")
            except (KeyError, IndexError, TypeError) as exc:
                raise StratamemError(
                    ErrorCode.LLM_OUTPUT_MALFORMED,
                    f"chat completion answer has no message content: {exc}",
                    {"url": self.url},
                ) from exc
            usage = usage_of(res.data.get("usage") if isinstance(res.data, Mapping) else None)
            model = str(res.data.get("model") or self.model)
            for k, v in usage.items():
                sp.set_attribute(f"llm.{k}", v)
            sp.set_attribute("llm.duration_ms", round(duration_ms, 1))
            sp.set_attribute("llm.attempts", res.attempts)
            log.info(
                "llm.call",
                provider=self.name,
                model=model,
                json_mode=json_mode,
                attempts=res.attempts,
                duration_ms=round(duration_ms, 1),
                **usage,
            )
        return Completion(text, model, usage, round(duration_ms, 1), self.name)

    def _typed(self, err: HttpError) -> StratamemError:
        details: dict[str, Any] = {
            "provider": self.name,
            "status": err.status,
            "attempts": err.attempts,
        }
        if err.terminal:
            self.breaker.trip(f"HTTP {err.status}" if err.status else "terminal error")
            details["breaker_open"] = True
            return StratamemError(
                ErrorCode.LLM_UNAVAILABLE,
                f"LLM refused the call (HTTP {err.status}); not retrying for {self.breaker.cooldown_s:.0f}s",
                details,
            )
        if err.timeout:
            return StratamemError(ErrorCode.LLM_TIMEOUT, str(err), details)
        if err.status == 429:
            return StratamemError(ErrorCode.LLM_RATE_LIMITED, str(err), details)
        return StratamemError(ErrorCode.LLM_UNAVAILABLE, str(err), details)


def create_openai_llm(config: Mapping[str, Any]) -> OpenAICompatibleLlm:
    llm = Section("llm", config)
    return OpenAICompatibleLlm(
        str(config.get("endpoint") or ""),
        str(config.get("model") or ""),
        api_key=str(config.get("api_key") or ""),
        timeout_s=float(config.get("timeout_ms") or llm["timeout_ms"]) / 1000.0,
        max_retries=llm.get_int("max_retries"),
        cooldown_s=llm.get_float("breaker_cooldown_s"),
    )
