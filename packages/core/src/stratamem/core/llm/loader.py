"""Turn the ``llm`` config section into a provider (or ``None``: no LLM, deterministic fallbacks)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.config.settings import Section
from stratamem.core.llm.base import Completion, LlmFactory, LlmProvider, Message
from stratamem.core.llm.fallback import HostFallbackLlm
from stratamem.core.llm.host import HostLlmRegistry
from stratamem.core.llm.limits import ConcurrencyLimit, background_limit
from stratamem.core.plugins import collect

NO_LLM = frozenset({"", "none"})


def llm_factories() -> dict[str, LlmFactory]:
    return {str(item[0]): item[1] for item in collect("register_llm_providers")}


def load_llm(
    config: Mapping[str, Any] | None = None, *, host_registry: HostLlmRegistry | None = None
) -> LlmProvider | None:
    """``config`` is the ``llm`` section (or the whole config). ``None`` when ``provider`` is empty or
    ``none``; else the registered provider, wrapped so that a
    failure falls back to a connected host when ``fallback_to_host`` (default true)."""
    cfg = dict(config or {})
    if isinstance(cfg.get("llm"), Mapping):  # the whole config was passed
        cfg = dict(cfg["llm"])
    provider = str(cfg.get("provider") or "").strip()
    if provider in NO_LLM:
        return None
    factories = llm_factories()
    factory = factories.get(provider)
    if factory is None:
        raise StratamemError(
            ErrorCode.CONFIG_INVALID,
            f"llm.provider {provider!r} is not registered (known: {', '.join(sorted(factories))})",
            {"key": "llm.provider", "value": provider, "known": sorted(factories)},
        )
    llm = factory(cfg)
    if llm is None:
        return None
    if provider != "host" and Section("llm", cfg).get_bool("fallback_to_host"):
        return HostFallbackLlm(llm, host_registry)
    return llm


class LimitedLlm:
    """Any provider behind a shared concurrency limit (``session.bg_llm_concurrency``) for background work."""

    def __init__(self, inner: LlmProvider, limit: ConcurrencyLimit | None = None) -> None:
        self.inner = inner
        self.limit = limit or background_limit()
        self.name = inner.name
        self.model = inner.model

    async def complete(
        self,
        messages: list[Message],
        *,
        json_mode: bool = False,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout_s: float | None = None,
    ) -> Completion:
        async with self.limit:
            return await self.inner.complete(
                messages,
                json_mode=json_mode,
                temperature=temperature,
                max_tokens=max_tokens,
                timeout_s=timeout_s,
            )


def background_llm(provider: LlmProvider | None, slots: int = 2) -> LlmProvider | None:
    """``provider`` sharing the process-wide background limit of ``slots`` concurrent calls."""
    if provider is None:
        return None
    return LimitedLlm(provider, background_limit(slots))
