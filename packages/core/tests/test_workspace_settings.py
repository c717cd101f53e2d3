"""Settings defaults, null-as-delete, toggle bootstrap, and backend-aware instruction context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace.instructions import (
    MemoryInstructionContext,
    append_memory_instructions,
    build_execution_memory_instructions,
    build_planning_memory_instructions,
    build_reviewer_memory_instructions,
    resolve_memory_instruction_context,
)
from stratamem.core.workspace.registry import resolve_memory_backend
from stratamem.core.workspace.settings import (
    DEFAULT_PROJECT_SETTINGS,
    bootstrap_memory,
    load_settings,
    load_stored_settings,
    update_settings,
)

MEMORY = ".stratamem/memory/MEMORY.md"
BUILDERS = [
    build_planning_memory_instructions,
    build_execution_memory_instructions,
    build_reviewer_memory_instructions,
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "project"
    r.mkdir()
    return r.resolve()


def test_defaults_match_the_contract() -> None:
    assert DEFAULT_PROJECT_SETTINGS == {
        "memory_enabled": True,
        "memory_backend_type": "lancedb",
        "insight_extraction_enabled": False,
        "insight_extraction_schedule": "0 2 * * *",
        "insight_extraction_min_interval_ms": 86_400_000,
    }


def test_missing_settings_file_means_defaults(root: Path) -> None:
    assert load_settings(root) == DEFAULT_PROJECT_SETTINGS


def test_settings_persist_in_the_project_stratamem_directory(root: Path) -> None:
    update_settings(root, {"memory_backend_type": "file"})
    stored = json.loads((root / ".stratamem/settings.json").read_text(encoding="utf-8"))
    assert stored == {"memory_backend_type": "file"}
    assert load_settings(root)["memory_backend_type"] == "file"


def test_null_deletes_the_key_and_falls_back_to_the_default(root: Path) -> None:
    update_settings(root, {"memory_enabled": False, "insight_extraction_enabled": True})
    assert load_settings(root)["memory_enabled"] is False
    update_settings(root, {"memory_enabled": None})
    assert "memory_enabled" not in load_stored_settings(root)
    assert load_settings(root)["memory_enabled"] is True
    assert load_settings(root)["insight_extraction_enabled"] is True


def test_unknown_backend_type_is_persisted_but_runtime_falls_back_safely(root: Path) -> None:
    update_settings(root, {"memory_backend_type": "qmd-legacy"})
    assert load_stored_settings(root)["memory_backend_type"] == "qmd-legacy"
    assert resolve_memory_backend(load_settings(root)).type == "lancedb"
    assert resolve_memory_instruction_context(load_settings(root)).backend_type == "lancedb"


@pytest.mark.parametrize(
    "patch",
    [
        {"memory_enabled": "yes"},
        {"memory_backend_type": ""},
        {"memory_backend_type": 3},
        {"insight_extraction_schedule": "every day"},
        {"insight_extraction_schedule": "61 * * * *"},
        {"insight_extraction_min_interval_ms": -1},
        {"insight_extraction_enabled": 1},
    ],
)
def test_invalid_settings_are_rejected_and_nothing_is_written(root: Path, patch: dict) -> None:
    update_settings(root, {"memory_backend_type": "file"})
    before = (root / ".stratamem/settings.json").read_bytes()
    with pytest.raises(StratamemError) as err:
        update_settings(root, patch)
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    assert (root / ".stratamem/settings.json").read_bytes() == before


def test_bootstrap_on_init_when_enabled(root: Path) -> None:
    assert bootstrap_memory(root) == [MEMORY, ".stratamem/memory/DREAMS.md"]
    assert (root / MEMORY).exists()


def test_no_bootstrap_when_memory_is_disabled(root: Path) -> None:
    update_settings(root, {"memory_enabled": False})
    assert bootstrap_memory(root) == []
    assert not (root / ".stratamem/memory").exists()


def test_toggling_memory_on_creates_the_files(root: Path) -> None:
    update_settings(root, {"memory_enabled": False})
    update_settings(root, {"memory_enabled": True})
    assert (root / MEMORY).exists()


def test_toggling_memory_on_never_overwrites_existing_memory(root: Path) -> None:
    (root / ".stratamem/memory").mkdir(parents=True)
    (root / MEMORY).write_text("precious", encoding="utf-8")
    update_settings(root, {"memory_enabled": False})
    update_settings(root, {"memory_enabled": None})  # back to the default: on
    assert (root / MEMORY).read_text(encoding="utf-8") == "precious"


def test_bootstrap_failure_is_non_fatal(root: Path) -> None:
    (root / ".stratamem").mkdir()
    (root / ".stratamem/memory").write_text(
        "a file where the directory should be", encoding="utf-8"
    )
    update_settings(root, {"memory_enabled": False})
    assert update_settings(root, {"memory_enabled": True})["memory_enabled"] is True


# -- instruction context ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "backend_type", "hint"),
    [
        ({"memory_enabled": False}, "disabled", None),
        ({"memory_enabled": False, "memory_backend_type": "file"}, "disabled", None),
        ({"memory_backend_type": "file"}, "file", MEMORY),
        ({"memory_backend_type": "readonly"}, "readonly", None),
        ({"memory_backend_type": "lancedb"}, "lancedb", None),
        ({"memory_backend_type": "unknown-thing"}, "lancedb", None),
        ({}, "lancedb", None),
        (None, "lancedb", None),
        ({"memory_enabled": None}, "lancedb", None),
    ],
)
def test_instruction_context_branches(
    settings: dict | None, backend_type: str, hint: str | None
) -> None:
    ctx = resolve_memory_instruction_context(settings)
    assert (ctx.backend_type, ctx.instruction_path_hint) == (backend_type, hint)


@pytest.mark.parametrize("builder", BUILDERS)
def test_disabled_memory_yields_no_instructions(builder) -> None:
    assert builder({"memory_enabled": False}) == ""
    assert builder(MemoryInstructionContext("disabled", None)) == ""


@pytest.mark.parametrize("builder", BUILDERS)
def test_enabled_by_default_yields_instructions(builder) -> None:
    assert "## Project Memory" in builder(None)


@pytest.mark.parametrize("builder", BUILDERS)
def test_only_the_file_backend_gets_an_explicit_path_hint(builder) -> None:
    assert MEMORY in builder({"memory_backend_type": "file"})
    for kind in ("lancedb", "readonly", "custom"):
        assert MEMORY not in builder({"memory_backend_type": kind})
        assert ".stratamem/memory" not in builder({"memory_backend_type": kind})


@pytest.mark.parametrize("builder", BUILDERS)
def test_readonly_instructions_never_ask_for_writes(builder) -> None:
    text = builder({"memory_backend_type": "readonly"})
    assert "read-only" in text
    assert "memory_write" not in text and "append" not in text


def test_writable_backends_ask_execution_to_record_learnings() -> None:
    assert "memory_write" in build_execution_memory_instructions({"memory_backend_type": "lancedb"})
    file_text = build_execution_memory_instructions({"memory_backend_type": "file"})
    assert "append durable learnings" in file_text
    assert f"to `{MEMORY}`" in file_text


def test_memory_instructions_are_appended_never_replacing_the_prompt() -> None:
    prompt = "You are the executor. Do the task."
    section = build_execution_memory_instructions({})
    out = append_memory_instructions(prompt, section)
    assert out.startswith(prompt) and out.endswith(section)
    assert (
        append_memory_instructions(
            prompt, build_execution_memory_instructions({"memory_enabled": False})
        )
        == prompt
    )
