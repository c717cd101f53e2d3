"""A finished sub-agent, reported by the real ``MemoryManager`` as ``delegate_tool`` does, becomes a
trace on the parent's session (``record_subagent_outcome``) that later sessions can recall."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "agent.memory_manager", reason="needs the real hermes-agent (tox -e py311-hermes)"
)

from agent.memory_manager import MemoryManager
from plugins.memory import load_memory_provider

from stratamem.contract.dtos import ListQuery, Namespace, Trace
from stratamem.core.blocking import BlockingCore
from stratamem.hermes import install

NS = Namespace(agent_kind="hermes", profile_id="default")
TASK = "Find out when version 2 of the billing service ships."
RESULT = "Version 2 of the billing service ships on 14 March, per the release calendar."


def _manager(
    hermes_home: Path, session: str, context: str = "primary"
) -> tuple[MemoryManager, Any]:
    install.install(hermes_home, python=sys.executable, check_import=False)
    provider = load_memory_provider("stratamem")
    assert provider is not None
    mgr = MemoryManager()
    mgr.add_provider(provider)
    mgr.initialize_all(
        session_id=session,
        platform="cli",
        hermes_home=str(hermes_home),
        agent_context=context,
        agent_identity="default",
    )
    return mgr, provider


def _subagent_traces(list_traces: Any, session: str) -> list[Trace]:
    traces = list_traces(ListQuery(limit=50, session_id=session, namespace=NS))
    return [t for t in traces if any(c.name == "subagent" for c in t.tool_calls)]


def test_a_delegation_outcome_lands_on_the_parent_session_and_is_recalled_later(
    hermes_home: Path,
) -> None:
    mgr, provider = _manager(hermes_home, "parent-1")
    mgr.on_turn_start(1, "Please ask a helper about the billing release.")
    mgr.prefetch_all("Please ask a helper about the billing release.")
    mgr.on_delegation(task=TASK, result=RESULT, child_session_id="child-7")

    def list_traces(q: ListQuery) -> list[Trace]:
        return provider._bridge.call(lambda core: core.list_traces(q), 30)

    deadline = time.monotonic() + 60  # fire and forget: poll with a generous bound
    found = _subagent_traces(list_traces, "parent-1")
    while not found and time.monotonic() < deadline:
        time.sleep(0.1)
        found = _subagent_traces(list_traces, "parent-1")
    assert len(found) == 1
    call = next(c for c in found[0].tool_calls if c.name == "subagent")
    assert call.input == {"task": TASK, "child_session_id": "child-7"}
    assert call.output == RESULT
    assert _subagent_traces(list_traces, "child-7") == []  # recorded on the parent, not the child
    mgr.shutdown_all()

    mgr2, _ = _manager(hermes_home, "parent-2")
    mgr2.on_turn_start(1, "When does billing service version 2 ship?")
    assert "14 March" in mgr2.prefetch_all("When does billing service version 2 ship?")
    mgr2.shutdown_all()


def test_a_delegation_reported_just_before_shutdown_is_still_stored(hermes_home: Path) -> None:
    mgr, provider = _manager(hermes_home, "parent-1")
    provider._bridge.warm().result(120)
    mgr.on_delegation(task=TASK, result=RESULT, child_session_id="child-7")
    mgr.shutdown_all()  # `hermes chat -q` exits right after the answer

    with BlockingCore.open(hermes_home / "stratamem") as core:
        assert len(_subagent_traces(core.list_traces, "parent-1")) == 1


def test_a_subagent_provider_does_not_record_delegations(hermes_home: Path) -> None:
    mgr, provider = _manager(hermes_home, "child-1", context="subagent")
    # the service this provider starts must be up before the in-process open below: one still
    # booting holds the home without a socket, and the open gives up on it after 5 s
    provider._bridge.warm().result(120)
    mgr.on_delegation(task=TASK, result=RESULT, child_session_id="grandchild")
    mgr.shutdown_all()
    with BlockingCore.open(hermes_home / "stratamem") as core:
        assert _subagent_traces(core.list_traces, "child-1") == []
