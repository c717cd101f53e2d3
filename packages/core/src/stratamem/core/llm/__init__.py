"""LLM providers as plugins: none (default), OpenAI-compatible HTTP, and the host's own LLM.

``load_llm(config["llm"])`` returns a provider or ``None``; ``complete_json`` wraps JSON answers.
"""

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
