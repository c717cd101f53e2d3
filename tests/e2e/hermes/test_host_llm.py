"""Hermes 0.19 lends its model: the core's ``host`` LLM reaches the user's configured endpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from stub_llm import StubLLM, last_user_text


def test_the_core_borrows_hermes_model_when_stratamem_has_no_llm(
    stub: StubLLM, hermes_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("HOME", "HERMES_HOME", "HERMES_DISABLE_LAZY_INSTALLS", "TIRITH_ENABLED"):
        monkeypatch.setenv(key, hermes_env[key])
    from plugins.memory import load_memory_provider

    from stratamem.core.llm import host_llm_registry
    from stratamem.core.llm.host import HostLlmProvider

    provider = load_memory_provider("stratamem")
    provider.initialize("sess-llm", hermes_home=hermes_env["HERMES_HOME"], platform="cli")
    try:
        assert host_llm_registry().connected
        core = provider._bridge.warm().result(120)
        assert core.health().llm.provider == "host"  # opened with llm.provider=host
        answer = asyncio.run(
            HostLlmProvider().complete([{"role": "user", "content": "summarise: teal"}])
        )
        assert answer.text.startswith("STUB-REPLY-")
        assert any(last_user_text(r) == "summarise: teal" for r in stub.chat_requests())
    finally:
        provider.shutdown()
    assert not host_llm_registry().connected
    assert Path(hermes_env["HERMES_HOME"], "stratamem").is_dir()
