import inspect
import json
from pathlib import Path

import pytest

pytest.importorskip(
    "agent.memory_provider", reason="needs the real hermes-agent (tox -e py311-hermes)"
)

from agent.memory_manager import MemoryManager
from agent.memory_provider import MemoryProvider

from stratamem.hermes.provider import StratamemMemoryProvider

HOOKS = [
    "is_available",
    "initialize",
    "system_prompt_block",
    "on_turn_start",
    "prefetch",
    "queue_prefetch",
    "sync_turn",
    "get_tool_schemas",
    "handle_tool_call",
    "shutdown",
    "on_session_end",
    "on_session_switch",
    "on_pre_compress",
    "on_memory_write",
    "on_delegation",
    "get_config_schema",
    "save_config",
    "backup_paths",
    "recall_status",
]


def test_every_provider_method_is_overridden_and_accepts_extra_keywords() -> None:
    for name in HOOKS:
        method = getattr(StratamemMemoryProvider, name)
        assert method is not getattr(MemoryProvider, name, None), name
        params = inspect.signature(method).parameters.values()
        assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params), name


def test_hermes_memory_manager_accepts_the_provider_and_its_six_tools() -> None:
    manager = MemoryManager()
    manager.add_provider(StratamemMemoryProvider())
    names = {s["name"] for s in manager.get_all_tool_schemas()}
    assert {"memos_search", "memos_get", "memos_timeline"} <= names
    assert len([n for n in names if n.startswith("memos_")]) == 6


def test_tool_calls_before_initialize_answer_a_json_error() -> None:
    provider = StratamemMemoryProvider()
    out = json.loads(provider.handle_tool_call("memos_search", {"query": "x"}))
    assert out["error"]["code"] == "not_initialized"
    bad = json.loads(provider.handle_tool_call("memos_search", {"maxResults": 3}))
    assert bad["error"]["code"] == "invalid_argument"


def test_prefetch_without_a_core_is_empty_not_an_exception() -> None:
    assert StratamemMemoryProvider().prefetch("what is my colour?") == ""


def test_config_schema_and_backup_paths(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    provider = StratamemMemoryProvider()
    assert {f["key"] for f in provider.get_config_schema()} == {"prefetch_budget_s", "lend_llm"}
    assert provider.backup_paths() == []  # the store lives inside HERMES_HOME
    outside = hermes_home.parent / "elsewhere"
    monkeypatch.setenv("STRATAMEM_HOME", str(outside))
    assert provider.backup_paths() == [str(outside)]
