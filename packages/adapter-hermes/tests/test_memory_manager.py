"""The real Hermes ``MemoryManager`` drives the installed provider over a real core in a temp home."""

from __future__ import annotations

import dataclasses
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "agent.memory_manager", reason="needs the real hermes-agent (tox -e py311-hermes)"
)

from agent.memory_manager import MemoryManager, build_memory_context_block
from plugins.memory import load_memory_provider

from stratamem.contract.dtos import ListQuery, Namespace
from stratamem.hermes import install
from stratamem.hermes.settings import DEFAULT_BUDGET_S

FACT = "My favourite colour is teal, remember that please."
QUESTION = "Which colour do I like best?"
NS = Namespace(agent_kind="hermes", profile_id="default")


def _tool_turn(user: str, call_id: str, tool: str, reply: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": user},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": tool, "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"{tool} output"},
        {"role": "assistant", "content": reply},
    ]


def _manager(
    hermes_home: Path, session: str, context: str = "primary"
) -> tuple[MemoryManager, Any]:
    install.install(hermes_home, python=sys.executable, check_import=False)
    provider = load_memory_provider("stratamem")
    assert provider is not None and provider.is_available()
    mgr = MemoryManager()
    mgr.add_provider(provider)
    mgr.initialize_all(
        session_id=session,
        platform="cli",
        hermes_home=str(hermes_home),
        agent_context=context,
        agent_identity="default",
        agent_workspace="hermes",
    )
    return mgr, provider


def _traces(provider: Any, session: str) -> list[Any]:
    bridge = provider._bridge
    return bridge.call(
        lambda core: core.list_traces(ListQuery(limit=50, session_id=session, namespace=NS)), 30
    )


def _prefetch_on_thread(mgr: MemoryManager, query: str) -> tuple[str, float]:
    """Like Hermes 0.19: the manager runs the provider on its own daemon thread, joined ≤ 8 s."""
    start = time.monotonic()
    out = mgr.prefetch_all(query)
    return out, time.monotonic() - start


def test_turns_race_on_the_sync_worker_and_every_tool_call_lands_in_its_own_trace(
    hermes_home: Path,
) -> None:
    mgr, provider = _manager(hermes_home, "sess-1")
    assert "Stratamem memory" in mgr.build_system_prompt()
    history: list[dict[str, Any]] = []

    mgr.on_turn_start(1, FACT)
    _prefetch_on_thread(mgr, FACT)
    gate = threading.Event()
    mgr._submit_background(lambda: gate.wait(30))  # the single worker lags behind the turn thread
    history += _tool_turn(FACT, "call-1", "read_file", "Noted: teal.")
    mgr.sync_all(FACT, "Noted: teal.", session_id="sess-1", messages=history)
    mgr.queue_prefetch_all(FACT, session_id="sess-1")

    # turn 2 starts (and recalls) before turn 1's sync_turn has run; the same list grows
    mgr.on_turn_start(2, QUESTION)
    _, took = _prefetch_on_thread(mgr, QUESTION)
    assert took < 8.0
    history += _tool_turn(QUESTION, "call-2", "terminal", "You like teal.")
    mgr.sync_all(QUESTION, "You like teal.", session_id="sess-1", messages=history)
    gate.set()
    assert mgr.flush_pending(timeout=60)

    by_text = {t.user_text: t for t in _traces(provider, "sess-1")}
    assert [c.name for c in by_text[FACT].tool_calls] == ["read_file"]
    assert [c.tool_call_id for c in by_text[FACT].tool_calls] == ["call-1"]
    assert [c.name for c in by_text[QUESTION].tool_calls] == ["terminal"]
    mgr.on_session_end(history)
    mgr.shutdown_all()


def test_a_new_session_recalls_the_fact_inside_hermes_memory_fence(hermes_home: Path) -> None:
    mgr, _ = _manager(hermes_home, "sess-a")
    mgr.on_turn_start(1, FACT)
    mgr.prefetch_all(FACT)
    mgr.sync_all(
        FACT, "Noted.", session_id="sess-a", messages=_tool_turn(FACT, "c", "memory", "Noted.")
    )
    mgr.on_session_end([])
    mgr.shutdown_all()  # drains the worker (≤ 5 s), then shutdown()

    mgr2, provider2 = _manager(hermes_home, "sess-b")
    # the first session may have ended before the service it started was up (its turn is then
    # spooled, replayed when this bridge opens): that cold start is not this recall's 5.75 s budget
    provider2._bridge.warm().result(120)
    mgr2.on_turn_start(1, QUESTION)
    raw = mgr2.prefetch_all(QUESTION)
    assert "teal" in raw
    block = build_memory_context_block(raw)
    assert block.startswith("<memory-context>") and "teal" in block
    out = provider2.handle_tool_call("memos_search", {"query": "favourite colour"})
    assert "teal" in out
    mgr2.shutdown_all()


def test_compression_switch_end_and_shutdown_are_safe_and_read_only(hermes_home: Path) -> None:
    mgr, provider = _manager(hermes_home, "sess-1")
    mgr.on_turn_start(1, FACT)
    mgr.prefetch_all(FACT)
    mgr.sync_all(FACT, "Noted.", session_id="sess-1")
    assert mgr.flush_pending(timeout=60)
    episodes = lambda: provider._bridge.call(  # noqa: E731
        lambda core: core.list_episodes(ListQuery(limit=50, namespace=NS)), 30
    )
    before = len(episodes())
    mgr.on_pre_compress([{"role": "user", "content": FACT}])
    assert len(episodes()) == before
    mgr.on_session_switch("sess-2", parent_session_id="sess-1", reset=True)
    mgr.on_turn_start(1, QUESTION)
    assert "teal" in mgr.prefetch_all(QUESTION)
    mgr.on_session_end([])
    started = time.monotonic()
    mgr.shutdown_all()
    provider.shutdown()  # idempotent
    assert time.monotonic() - started < 5.0 + 1.0


def test_a_cron_agent_recalls_but_never_writes(hermes_home: Path) -> None:
    mgr, provider = _manager(hermes_home, "cron-1", context="cron")
    mgr.on_turn_start(1, FACT)
    mgr.prefetch_all(FACT)
    mgr.sync_all(FACT, "Noted.", session_id="cron-1")
    assert mgr.flush_pending(timeout=60)
    assert _traces(provider, "cron-1") == []
    mgr.shutdown_all()


def test_a_stuck_store_gives_an_empty_recall_within_the_deadline_and_the_next_turn_recalls(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mgr, provider = _manager(hermes_home, "sess-1")
    mgr.on_turn_start(1, FACT)
    mgr.prefetch_all(FACT)
    mgr.sync_all(FACT, "Noted.", session_id="sess-1")
    assert mgr.flush_pending(timeout=60)
    mgr.shutdown_all()

    monkeypatch.setenv("STRATAMEM_HERMES_PREFETCH_BUDGET_S", "1.5")
    mgr, provider = _manager(hermes_home, "sess-2")
    provider._bridge.warm().result(60)
    db = hermes_home / "stratamem" / "data" / "stratamem.db"
    blocker = sqlite3.connect(db, timeout=1, isolation_level=None)
    blocker.execute("BEGIN EXCLUSIVE")  # another writer holds the store: every core write waits
    try:
        mgr.on_turn_start(1, QUESTION)
        out, took = _prefetch_on_thread(mgr, QUESTION)
        assert out == ""
        assert (
            took < 6.0
        )  # the store stays locked: the budget ended it, well inside Hermes's 8 s join
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    # the service first finishes what the lock held back (turn 1's routing): turn 2's budget is
    # for its own recall, not for that backlog. The 1.5 s budget kept the stuck turn short; turn 2
    # shows recall comes back once the store is free, so it gets the default budget (1.25 s for a
    # recall through the service at load 16 was a tight bound, not a fault)
    provider._bridge.call(lambda core: core.flush(30.0), 60)
    provider._settings = dataclasses.replace(provider._settings, prefetch_budget_s=DEFAULT_BUDGET_S)
    mgr.on_turn_start(2, "What colour did I say I like?")
    out2, _ = _prefetch_on_thread(mgr, "What colour did I say I like?")
    assert "teal" in out2
    mgr.shutdown_all()


def test_a_turn_synced_while_the_core_is_still_opening_is_spooled_durably_then_replayed(
    hermes_home: Path,
) -> None:
    from stratamem.hermes import bridge as bridges
    from stratamem.hermes.provider import StratamemMemoryProvider

    gate = threading.Event()

    def slow_open(home: Path, **overrides: Any) -> Any:
        gate.wait(60)  # e.g. the first model load on a busy machine
        return bridges.default_opener(home, **overrides)

    provider = StratamemMemoryProvider(opener=slow_open)
    mgr = MemoryManager()
    mgr.add_provider(provider)
    mgr.initialize_all(session_id="sess-1", platform="cli", hermes_home=str(hermes_home))
    mgr.on_turn_start(1, FACT)
    assert mgr.prefetch_all(FACT) == ""  # no core yet: nothing, within the budget
    mgr.sync_all(FACT, "Noted: teal.", session_id="sess-1")
    assert mgr.flush_pending(timeout=30)  # returned without the core
    spooled = list((hermes_home / "stratamem" / "spool" / "hermes").glob("*.turn"))
    assert len(spooled) == 1
    gate.set()
    provider._bridge.warm().result(120)
    deadline = time.monotonic() + 60
    while provider._spool.backlog() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t.user_text for t in _traces(provider, "sess-1")] == [FACT]
    mgr.shutdown_all()


def test_a_turn_spooled_while_the_opening_core_replays_the_spool_is_read_your_writes(
    hermes_home: Path,
) -> None:
    """A turn ``sync_turn`` spools after the opening core's replay claimed the spool is still
    applied before the core serves a call (it used to wait for the next process's open)."""
    from stratamem.hermes import bridge as bridges
    from stratamem.hermes.provider import StratamemMemoryProvider

    connect, resume = threading.Event(), threading.Event()
    replayed = threading.Event()

    def slow_open(home: Path, **overrides: Any) -> Any:
        connect.wait(60)  # the service is still starting on a loaded machine
        return bridges.default_opener(home, **overrides)

    def pause(core: Any) -> None:  # on-open work after the spool replay claimed the spool
        replayed.set()
        resume.wait(60)

    provider = StratamemMemoryProvider(opener=slow_open)
    mgr = MemoryManager()
    mgr.add_provider(provider)
    mgr.initialize_all(session_id="sess-1", platform="cli", hermes_home=str(hermes_home))
    provider._bridge.add_on_open(pause)
    mgr.on_turn_start(1, FACT)
    mgr.sync_all(FACT, "Noted: teal.", session_id="sess-1")
    assert mgr.flush_pending(timeout=30)  # spooled: the core is not open
    connect.set()
    assert replayed.wait(120)  # the open replayed FACT and is not serving yet
    mgr.on_turn_start(2, QUESTION)
    mgr.sync_all(QUESTION, "You like teal.", session_id="sess-1")
    assert mgr.flush_pending(timeout=30)  # spooled too: the core is still opening
    assert len(list((hermes_home / "stratamem" / "spool" / "hermes").glob("*.turn"))) == 1
    resume.set()
    provider._bridge.warm().result(120)
    assert sorted(t.user_text for t in _traces(provider, "sess-1")) == sorted([FACT, QUESTION])
    mgr.shutdown_all()
