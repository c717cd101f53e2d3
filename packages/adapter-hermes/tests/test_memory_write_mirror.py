"""Hermes' own memory tool, through the real ``MemoryManager``, mirrored into workspace memory: user
entries become ``preference`` recall records that follow add, replace and remove; memory entries
become ``MEMORY.md`` bullets."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "agent.memory_manager", reason="needs the real hermes-agent (tox -e py311-hermes)"
)

from agent.memory_manager import MemoryManager
from plugins.memory import load_memory_provider
from tools.memory_tool import MemoryStore, memory_tool

from stratamem.core.workspace.recall import normalize_recall_content
from stratamem.core.workspace.service import WorkspaceMemory
from stratamem.hermes import install

Tool = Callable[..., dict[str, Any]]


def _manager(hermes_home: Path, session: str, context: str = "primary") -> MemoryManager:
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
    return mgr


def _memory_tool(mgr: MemoryManager, session: str) -> tuple[Tool, MemoryStore]:
    """The built-in tool as the agent loop runs it: the tool, then the manager's mirror."""
    store = MemoryStore()
    store.load_from_disk()

    def call(**args: Any) -> dict[str, Any]:
        result = memory_tool(store=store, **args)
        mgr.notify_memory_tool_write(
            result, args, build_metadata=lambda: {"session_id": session, "tool_name": "memory"}
        )
        out: dict[str, Any] = json.loads(result)
        return out

    return call, store


def _preferences(hermes_home: Path) -> list[Any]:
    """Read back with an independent workspace instance, as the core's recall would."""
    ws = WorkspaceMemory(hermes_home / "stratamem")
    return ws.recall_store(hermes_home).candidates(["preference"])


def _same_entries(records: list[Any], entries: list[str]) -> bool:
    return sorted(normalize_recall_content(r.content) for r in records) == sorted(
        normalize_recall_content(e) for e in entries
    )


def test_user_entries_added_replaced_and_removed_in_hermes_follow_as_preferences(
    hermes_home: Path,
) -> None:
    mgr = _manager(hermes_home, "sess-1")
    tool, hermes_store = _memory_tool(mgr, "sess-1")
    try:
        assert tool(action="add", target="user", content="Prefers answers in British English.")[
            "success"
        ]
        assert tool(action="add", target="user", content="Works mostly in Rust.")["success"]
        added = {r.content: r for r in _preferences(hermes_home)}
        assert set(added) == {"Prefers answers in British English.", "Works mostly in Rust."}
        british = added["Prefers answers in British English."]
        assert set(british.tags) == {"hermes", "user"}
        assert (british.origin, british.session_id) == ("hermes.memory_tool", "sess-1")

        assert tool(
            action="replace",
            target="user",
            old_text="British English",
            content="Prefers answers in American English.",
        )["success"]
        after = {r.content: r for r in _preferences(hermes_home)}
        assert set(after) == {"Prefers answers in American English.", "Works mostly in Rust."}
        assert after["Prefers answers in American English."].id == british.id  # the same entry

        assert tool(action="remove", target="user", old_text="mostly in Rust")["success"]
        left = _preferences(hermes_home)
        assert [r.content for r in left] == ["Prefers answers in American English."]
        assert _same_entries(left, hermes_store.user_entries)

        ws = WorkspaceMemory(hermes_home / "stratamem")
        hits = ws.search_recall(hermes_home, "which English do I prefer").hits
        assert [h.record.content for h in hits] == ["Prefers answers in American English."]
    finally:
        mgr.shutdown_all()


def test_a_batch_of_user_operations_is_mirrored_in_order(hermes_home: Path) -> None:
    mgr = _manager(hermes_home, "sess-1")
    tool, hermes_store = _memory_tool(mgr, "sess-1")
    try:
        for text in ("Likes tea.", "Uses vim.", "Lives in Oslo."):
            assert tool(action="add", target="user", content=text)["success"]
        assert tool(
            target="user",
            operations=[
                {"action": "replace", "old_text": "tea", "content": "Likes coffee."},
                {"action": "remove", "old_text": "vim"},
                {"action": "add", "content": "Cycles to work."},
            ],
        )["success"]
        prefs = _preferences(hermes_home)
        assert sorted(r.content for r in prefs) == [
            "Cycles to work.",
            "Likes coffee.",
            "Lives in Oslo.",
        ]
        assert _same_entries(prefs, hermes_store.user_entries)
    finally:
        mgr.shutdown_all()


def test_a_replace_onto_an_existing_preference_leaves_it_once(hermes_home: Path) -> None:
    mgr = _manager(hermes_home, "sess-1")
    tool, _ = _memory_tool(mgr, "sess-1")
    try:
        assert tool(action="add", target="user", content="Likes tea.")["success"]
        assert tool(action="add", target="user", content="Likes green tea in the morning.")[
            "success"
        ]
        # Hermes keeps two equal entries here; the recall store keeps the text once
        assert tool(action="replace", target="user", old_text="green", content="likes tea")[
            "success"
        ]
        assert [r.content for r in _preferences(hermes_home)] == ["Likes tea."]
    finally:
        mgr.shutdown_all()


def test_memory_entries_follow_in_memory_md(hermes_home: Path) -> None:
    mgr = _manager(hermes_home, "sess-1")
    tool, _ = _memory_tool(mgr, "sess-1")
    ws = WorkspaceMemory(hermes_home / "stratamem")
    try:
        assert tool(action="add", target="memory", content="The staging host is sandpiper.")[
            "success"
        ]
        assert tool(action="add", target="memory", content="Deploys run on Fridays.")["success"]
        assert tool(
            action="replace", target="memory", old_text="sandpiper", content="Staging is heron."
        )["success"]
        assert tool(action="remove", target="memory", old_text="Fridays")["success"]
        text = ws.read(hermes_home).content
        assert "- Staging is heron." in text
        assert "sandpiper" not in text and "Fridays" not in text
        assert _preferences(hermes_home) == []  # memory entries are not preferences
    finally:
        mgr.shutdown_all()


def test_a_cron_agent_does_not_mirror_memory_writes(hermes_home: Path) -> None:
    mgr = _manager(hermes_home, "cron-1", context="cron")
    tool, _ = _memory_tool(mgr, "cron-1")
    try:
        assert tool(action="add", target="user", content="Prefers terse answers.")["success"]
        assert _preferences(hermes_home) == []
    finally:
        mgr.shutdown_all()
