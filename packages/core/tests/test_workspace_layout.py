"""Workspace layouts: OpenClaw's ``MEMORY.md`` / ``DREAMS.md`` / ``memory/YYYY-MM-DD.md`` served in
place with the same strict validation, a bootstrap that never overwrites, and per-layout indexes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace.embedder import load_default_embedder
from stratamem.core.workspace.index import index_dir
from stratamem.core.workspace.layered import ensure_memory_files, list_memory_files
from stratamem.core.workspace.layout import (
    OPENCLAW_LAYOUT,
    STRATAMEM_LAYOUT,
    get_layout,
)
from stratamem.core.workspace.models import MemoryBackendCapabilities, MemoryReadResult
from stratamem.core.workspace.paths import layered_name
from stratamem.core.workspace.registry import register_memory_backend, unregister_memory_backend
from stratamem.core.workspace.service import WorkspaceMemory


def no_embedder() -> Any:
    raise RuntimeError("no embedder in this test")


def files_under(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """An OpenClaw workspace as OpenClaw leaves it: persona files, MEMORY.md, a daily note."""
    w = tmp_path / "workspace"
    (w / "memory").mkdir(parents=True)
    (w / "AGENTS.md").write_text("# Agents\n", encoding="utf-8")
    (w / "MEMORY.md").write_text(
        "# Memory\n\n- The staging database is called heron-7.\n", encoding="utf-8"
    )
    (w / "memory" / "2026-05-04.md").write_text(
        "# 2026-05-04\n\nRotated the Kestrel API token; the old one expires Friday.\n",
        encoding="utf-8",
    )
    return w.resolve()


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    m = WorkspaceMemory(
        tmp_path / "home", embedder_factory=no_embedder, debounce_seconds=0.01, layout="openclaw"
    )
    yield m
    m.close(wait=True)


def test_layouts_are_named_and_an_unknown_layout_is_a_typed_error() -> None:
    assert get_layout(None) is STRATAMEM_LAYOUT
    assert get_layout("openclaw") is OPENCLAW_LAYOUT
    assert OPENCLAW_LAYOUT.relpath("MEMORY.md") == "MEMORY.md"
    assert OPENCLAW_LAYOUT.relpath("DREAMS.md") == "DREAMS.md"
    assert OPENCLAW_LAYOUT.relpath("2026-05-04.md") == "memory/2026-05-04.md"
    with pytest.raises(StratamemError) as err:
        get_layout("obsidian")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("MEMORY.md", "MEMORY.md"),
        ("DREAMS.md", "DREAMS.md"),
        ("memory/2026-05-04.md", "2026-05-04.md"),
        ("2026-05-04.md", "2026-05-04.md"),
    ],
)
def test_openclaw_layout_accepts_its_canonical_paths_and_bare_names(path: str, name: str) -> None:
    assert layered_name(path, OPENCLAW_LAYOUT) == name


@pytest.mark.parametrize(
    "path",
    [
        "memory/MEMORY.md",  # the long-term file lives at the workspace root
        "memory/DREAMS.md",
        ".stratamem/memory/MEMORY.md",  # Stratamem's layout is not this one
        "notes/2026-05-04.md",
        "memory/2026-02-30.md",  # not a date
        "memory/../MEMORY.md",
        "../MEMORY.md",
        "/etc/MEMORY.md",
        "memory\\2026-05-04.md",
        "AGENTS.md",  # OpenClaw's persona files are not memory files
        "SOUL.md",
    ],
)
def test_openclaw_layout_rejects_everything_else_and_writes_nothing(
    memory: WorkspaceMemory, ws: Path, path: str
) -> None:
    before = files_under(ws.parent)
    with pytest.raises(StratamemError) as err:
        memory.write_file(ws, path, "overwritten")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    assert files_under(ws.parent) == before


def test_a_symlinked_daily_directory_or_memory_file_leaving_the_workspace_is_refused(
    memory: WorkspaceMemory, ws: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n", encoding="utf-8")
    (ws / "memory" / "2026-05-04.md").unlink()
    (ws / "memory").rmdir()
    (ws / "memory").symlink_to(outside, target_is_directory=True)
    with pytest.raises(StratamemError) as err:
        memory.write_file(ws, "memory/2026-05-05.md", "x")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]
    assert [f.path for f in memory.list_files(ws)] == ["MEMORY.md"]

    (ws / "MEMORY.md").unlink()
    (ws / "MEMORY.md").symlink_to(outside / "secret.md")
    with pytest.raises(StratamemError) as err:
        memory.read_file(ws, "MEMORY.md")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(StratamemError):
        memory.write(ws, "overwritten")
    assert (outside / "secret.md").read_text(encoding="utf-8") == "secret\n"


def test_oversized_or_non_utf8_content_is_refused_and_openclaws_file_is_unchanged(
    memory: WorkspaceMemory, ws: Path
) -> None:
    before = (ws / "MEMORY.md").read_bytes()
    with pytest.raises(StratamemError) as err:
        memory.write_file(ws, "MEMORY.md", "x" * (1024 * 1024 + 1))
    assert err.value.code == ErrorCode.QUOTA_EXCEEDED
    with pytest.raises(StratamemError) as err:
        memory.write(ws, "\ud800 lone surrogate")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    assert (ws / "MEMORY.md").read_bytes() == before


def test_bootstrap_never_overwrites_openclaws_files_and_never_creates_dreams(
    memory: WorkspaceMemory, ws: Path
) -> None:
    before = files_under(ws)
    assert memory.bootstrap(ws) == []
    assert files_under(ws) == before
    assert not (ws / "DREAMS.md").exists()


def test_bootstrap_of_an_empty_workspace_creates_memory_md_and_the_daily_directory(
    memory: WorkspaceMemory, tmp_path: Path
) -> None:
    empty = tmp_path / "fresh"
    empty.mkdir()
    assert memory.bootstrap(empty) == ["MEMORY.md"]
    assert (empty / "memory").is_dir()
    assert (empty / "MEMORY.md").read_text(encoding="utf-8").startswith("# Memory")
    assert not (empty / ".stratamem").exists()
    assert memory.bootstrap(empty) == []


def test_a_lowercase_memory_md_is_the_long_term_file_and_is_never_shadowed(
    memory: WorkspaceMemory, tmp_path: Path
) -> None:
    w = tmp_path / "legacy"
    w.mkdir()
    (w / "memory.md").write_text("- Legacy notes: the cat is called Miso.\n", encoding="utf-8")
    assert memory.bootstrap(w) == []
    assert sorted(p.name for p in w.iterdir()) == ["memory", "memory.md"]
    assert "Miso" in memory.read(w).content
    memory.write(w, "- Legacy notes: the cat is called Miso. The dog is Tofu.\n")
    assert "Tofu" in (w / "memory.md").read_text(encoding="utf-8")
    assert not (w / "MEMORY.md").exists() or os.path.samefile(w / "MEMORY.md", w / "memory.md")


def test_search_finds_text_in_openclaws_memory_md_and_a_daily_file(
    memory: WorkspaceMemory, ws: Path
) -> None:
    by_path = {r.path: r for r in memory.search(ws, "staging database heron-7")}
    assert "MEMORY.md" in by_path and "heron-7" in by_path["MEMORY.md"].snippet
    daily = memory.search(ws, "Kestrel token")
    assert daily and daily[0].path == "memory/2026-05-04.md"
    assert "Kestrel" in daily[0].snippet
    assert [f.path for f in memory.list_files(ws)] == ["MEMORY.md", "memory/2026-05-04.md"]
    assert memory.get(ws, "memory/2026-05-04.md", 3, 1).content.startswith("Rotated the Kestrel")


def test_writes_land_in_openclaws_own_files_atomically(memory: WorkspaceMemory, ws: Path) -> None:
    memory.write_file(ws, "memory/2026-05-05.md", "# 2026-05-05\n\nMoved the cron to 04:00.\n")
    assert (ws / "memory" / "2026-05-05.md").read_text(encoding="utf-8").endswith("04:00.\n")
    result = memory.write(ws, "# Memory\n\n- heron-7 was renamed heron-8.\n")
    assert result.path == "MEMORY.md"
    assert "heron-8" in (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert not (ws / ".stratamem" / "memory").exists()
    assert not [p for p in ws.rglob("*.tmp")]


def test_the_readonly_backend_reads_openclaws_file_and_refuses_writes(
    memory: WorkspaceMemory, ws: Path
) -> None:
    memory.update_settings(ws, {"memory_backend_type": "readonly"})
    assert (ws / ".stratamem" / "settings.json").is_file()  # settings stay in .stratamem
    backend: Any = memory.backend(ws)
    assert backend.type == "readonly" and backend.layout is OPENCLAW_LAYOUT
    assert "heron-7" in memory.read(ws).content
    before = (ws / "MEMORY.md").read_bytes()
    with pytest.raises(StratamemError) as err:
        memory.write(ws, "nope")
    assert err.value.code == ErrorCode.READ_ONLY
    assert (ws / "MEMORY.md").read_bytes() == before


class _StratamemOnlyBackend:
    """A third-party backend that knows nothing of layouts."""

    type = "layoutless-test"
    name = "Layoutless"
    capabilities = MemoryBackendCapabilities(True, True, False, False, True)

    def read(self, root: Path) -> MemoryReadResult:
        return MemoryReadResult("", False, "MEMORY.md", self.type)

    def write(self, root: Path, content: str) -> Any:
        raise AssertionError("must not be called under a foreign layout")


def test_a_backend_that_cannot_follow_the_layout_is_unsupported_not_misplaced(
    memory: WorkspaceMemory, ws: Path
) -> None:
    register_memory_backend(_StratamemOnlyBackend())
    try:
        memory.update_settings(ws, {"memory_backend_type": "layoutless-test"})
        with pytest.raises(StratamemError) as err:
            memory.write(ws, "x")
        assert err.value.code == ErrorCode.UNSUPPORTED
    finally:
        unregister_memory_backend("layoutless-test")


def test_stratamem_layout_is_unchanged_by_default(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    created = ensure_memory_files(root)
    assert created == [".stratamem/memory/MEMORY.md", ".stratamem/memory/DREAMS.md"]
    assert [f.path for f in list_memory_files(root)] == created
    assert layered_name(".stratamem/memory/2026-05-04.md") == "2026-05-04.md"
    with pytest.raises(StratamemError):
        layered_name("memory/2026-05-04.md")


@pytest.fixture(scope="module")
def real_embedder() -> Any:
    return load_default_embedder()


def test_the_index_is_keyed_per_root_and_layout_and_follows_openclaws_own_edits(
    tmp_path: Path, ws: Path, real_embedder: Any
) -> None:
    m = WorkspaceMemory(
        tmp_path / "home",
        embedder_factory=lambda: real_embedder,
        debounce_seconds=0.01,
        layout="openclaw",
    )
    try:
        index = m.lancedb.index_for(ws)
        assert index.dir == index_dir(tmp_path / "home", ws, OPENCLAW_LAYOUT)
        assert index.dir != index_dir(tmp_path / "home", ws, STRATAMEM_LAYOUT)
        assert index.refresh() >= 2
        hits = m.search(ws, "Kestrel API token")
        assert hits[0].source == "index" and hits[0].path == "memory/2026-05-04.md"
        # OpenClaw appends to its daily note behind our back: the stale index is not trusted
        daily = ws / "memory" / "2026-05-04.md"
        daily.write_text(
            daily.read_text(encoding="utf-8") + "\nThe Osprey deploy moved to Tuesday.\n",
            encoding="utf-8",
        )
        fresh = m.search(ws, "Osprey deploy Tuesday")
        assert fresh and fresh[0].path == "memory/2026-05-04.md" and "Osprey" in fresh[0].snippet
        assert m.lancedb.refresher.wait_idle(30)
        again = m.search(ws, "Osprey deploy Tuesday")
        assert again[0].source == "index" and "Osprey" in again[0].snippet
    finally:
        m.close(wait=True)
