"""LLM providers as plugins: none (default), OpenAI-compatible HTTP, and the host's own LLM.

``load_llm(config["llm"])`` returns a provider or ``None``; ``complete_json`` wraps JSON answers.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stratamem.core.llm.base import Completion, LlmFactory, LlmProvider, Message, check_messages
    from stratamem.core.llm.breaker import CircuitBreaker
    from stratamem.core.llm.fallback import HostFallbackLlm
    from stratamem.core.llm.host import (
        HostLlmProvider,
        HostLlmRegistry,
        host_llm_registry,
        register_host_llm,
        set_host_transport,
    )
    from stratamem.core.llm.json_output import complete_json, parse_json_object
    from stratamem.core.llm.limits import ConcurrencyLimit, background_limit
    from stratamem.core.llm.loader import LimitedLlm, background_llm, llm_factories, load_llm
    from stratamem.core.llm.openai_compatible import OpenAICompatibleLlm

# lazy (PEP 562): registering the built-in plugins, or a thin client, must not load what
# these modules import (numpy, LanceDB, pyarrow, onnxruntime)
_LAZY: dict[str, str] = {
    "Completion": "stratamem.core.llm.base",
    "LlmFactory": "stratamem.core.llm.base",
    "LlmProvider": "stratamem.core.llm.base",
    "Message": "stratamem.core.llm.base",
    "check_messages": "stratamem.core.llm.base",
    "CircuitBreaker": "stratamem.core.llm.breaker",
    "HostFallbackLlm": "stratamem.core.llm.fallback",
    "HostLlmProvider": "stratamem.core.llm.host",
    "HostLlmRegistry": "stratamem.core.llm.host",
    "host_llm_registry": "stratamem.core.llm.host",
    "register_host_llm": "stratamem.core.llm.host",
    "set_host_transport": "stratamem.core.llm.host",
    "complete_json": "stratamem.core.llm.json_output",
    "parse_json_object": "stratamem.core.llm.json_output",
    "ConcurrencyLimit": "stratamem.core.llm.limits",
    "background_limit": "stratamem.core.llm.limits",
    "LimitedLlm": "stratamem.core.llm.loader",
    "background_llm": "stratamem.core.llm.loader",
    "llm_factories": "stratamem.core.llm.loader",
    "load_llm": "stratamem.core.llm.loader",
    "OpenAICompatibleLlm": "stratamem.core.llm.openai_compatible",
}

__all__ = [
    "CircuitBreaker",
    "Completion",
    "ConcurrencyLimit",
    "HostFallbackLlm",
    "HostLlmProvider",
    "HostLlmRegistry",
    "LimitedLlm",
    "LlmFactory",
    "LlmProvider",
    "Message",
    "OpenAICompatibleLlm",
    "background_limit",
    "background_llm",
    "check_messages",
    "complete_json",
    "host_llm_registry",
    "llm_factories",
    "load_llm",
    "parse_json_object",
    "register_host_llm",
    "set_host_transport",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
