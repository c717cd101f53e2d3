"""Hermes 0.19 lends its model: the core's ``host`` LLM reaches the user's configured endpoint."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from stub_llm import StubLLM, last_user_text


def test_with_lend_llm_on_the_core_borrows_hermes_model(
    stub: StubLLM, hermes_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("HOME", "HERMES_HOME", "HERMES_DISABLE_LAZY_INSTALLS", "TIRITH_ENABLED"):
        monkeypatch.setenv(key, hermes_env[key])
    from plugins.memory import load_memory_provider

    from stratamem.core.llm import host_llm_registry
    from stratamem.core.llm.host import HostLlmProvider

    home = Path(hermes_env["HERMES_HOME"], "stratamem")
    home.mkdir(exist_ok=True)
    (home / "hermes.yaml").write_text("lend_llm: true\n")  # opt-in
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


def test_by_default_nothing_is_lent_and_the_core_runs_without_an_llm(
    hermes_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("HOME", "HERMES_HOME"):
        monkeypatch.setenv(key, hermes_env[key])
    from plugins.memory import load_memory_provider

    from stratamem.core.llm import host_llm_registry

    provider = load_memory_provider("stratamem")
    provider.initialize("sess-x", hermes_home=hermes_env["HERMES_HOME"], platform="cli")
    try:
        assert not host_llm_registry().connected
        assert provider._bridge.warm().result(120).health().llm.provider in ("", "none")
    finally:
        provider.shutdown()
