"""``llm.fallback_to_host``: when the configured provider fails or answers empty, ask a connected host.

With no host connected the original error stands, so callers take their deterministic fallback.
"""

from __future__ import annotations

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.llm.base import Completion, LlmProvider, Message
from stratamem.core.llm.host import HostLlmRegistry, host_llm_registry
from stratamem.core.telemetry import get_logger

log = get_logger("llm")


class HostFallbackLlm:
    def __init__(self, primary: LlmProvider, registry: HostLlmRegistry | None = None) -> None:
        self.primary = primary
        self.registry = registry or host_llm_registry()
        self.name = primary.name
        self.model = primary.model

    async def complete(
        self,
        messages: list[Message],
        *,
        json_mode: bool = False,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> Completion:
        try:
            done = await self.primary.complete(
                messages,
                json_mode=json_mode,
                temperature=temperature,
                max_tokens=max_tokens,
                timeout_s=timeout_s,
            )
        except StratamemError as err:
            if err.code == ErrorCode.INVALID_ARGUMENT or not self.registry.connected:
                raise
            log.warning("llm.fallback_to_host", provider=self.primary.name, reason=err.code.value)
            return await self._host(messages, json_mode, temperature, max_tokens, timeout_s)
        if done.text.strip() or not self.registry.connected:
            return done
        log.warning("llm.fallback_to_host", provider=self.primary.name, reason="empty_answer")
        return await self._host(messages, json_mode, temperature, max_tokens, timeout_s)

    async def _host(
        self,
        messages: list[Message],
        json_mode: bool,
        temperature: float,
        max_tokens: int | None,
        timeout_s: float | None,
    ) -> Completion:
        return await self.registry.complete(
            messages,
            json_mode=json_mode,
            temperature=temperature,
            max_tokens=max_tokens,
            timeout_s=timeout_s if timeout_s is not None else 60.0,
            connect_timeout_s=0.0,
        )
