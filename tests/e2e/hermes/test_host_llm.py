"""Hermes 0.19 lends its model to the home's resident service: with ``lend_llm`` on, the service's
``host`` LLM is Hermes' own model (reaching the user's configured endpoint), over the ``HostLlm``
stream; the Hermes process never opens the engine."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from stub_llm import StubLLM

from stratamem.contract.hostkit.client import connect_blocking, stop_service

#: the recall filter's instruction (``stratamem.core.retrieval.llm_filter``): a stage of the service
FILTER_PROMPT = "You filter memories recalled for a query"


def _wait(check: Callable[[], bool], timeout: float = 120.0) -> bool:
    give_up = time.monotonic() + timeout
    while time.monotonic() < give_up:
        if check():
            return True
        time.sleep(0.2)
    return check()


def _provider(hermes_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, session: str) -> Any:
    for key in ("HOME", "HERMES_HOME", "HERMES_DISABLE_LAZY_INSTALLS", "TIRITH_ENABLED"):
        monkeypatch.setenv(key, hermes_env[key])
    from plugins.memory import load_memory_provider

    provider = load_memory_provider("stratamem")
    provider.initialize(session, hermes_home=hermes_env["HERMES_HOME"], platform="cli")
    return provider


def _engine_modules() -> list[str]:
    return sorted(
        m
        for m in sys.modules
        if m.startswith("stratamem.core.") and m != "stratamem.core.hookspecs"
    )


def test_with_lend_llm_on_the_service_borrows_hermes_model(
    stub: StubLLM, hermes_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(hermes_env["HERMES_HOME"], "stratamem")
    home.mkdir(exist_ok=True)
    (home / "hermes.yaml").write_text("lend_llm: true\n")  # opt-in
    before = set(_engine_modules())
    provider = _provider(hermes_env, monkeypatch, "sess-llm")
    try:
        core = provider._bridge.warm().result(120)
        # the service's LLM is Hermes' model while this process lends it
        assert _wait(lambda: core.health().llm.provider == "host"), core.health().llm
        provider.on_turn_start(1, "Remember: the boathouse key hangs behind the teal barometer.")
        provider.sync_turn(
            "Remember: the boathouse key hangs behind the teal barometer.", "Noted: teal."
        )
        found = provider.handle_tool_call("memos_search", {"query": "Where is the boathouse key?"})
        assert "barometer" in found, found
        # the service's recall filter ran on Hermes' model: its prompt reached the user's endpoint
        assert _wait(
            lambda: any(
                FILTER_PROMPT in str(m.get("content"))
                for r in stub.chat_requests()
                for m in r.get("messages") or []
            ),
            60,
        ), [r.get("messages") for r in stub.chat_requests()]
        from stratamem.hermes.host_llm import lender

        # the lender counts a request once Hermes' model answered it, after the endpoint saw it
        assert _wait(lambda: lender() is not None and lender().served >= 1, 30), lender()
        assert set(_engine_modules()) == before  # lending loads no engine in the Hermes process
        provider.shutdown()
        # the last lender left: the service is back to its deterministic fallbacks
        with connect_blocking(home, 30, start=False) as again:
            assert _wait(lambda: again.health().llm.provider == "none", 30)
    finally:
        provider.shutdown()  # idempotent
        stop_service(home, 30)


def test_by_default_nothing_is_lent_and_the_service_runs_without_an_llm(
    hermes_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = Path(hermes_env["HERMES_HOME"], "stratamem")
    provider = _provider(hermes_env, monkeypatch, "sess-x")
    try:
        from stratamem.hermes.host_llm import lender

        assert lender() is None
        core = provider._bridge.warm().result(120)
        assert core.health().llm.provider in ("", "none")
    finally:
        provider.shutdown()
        stop_service(home, 30)
