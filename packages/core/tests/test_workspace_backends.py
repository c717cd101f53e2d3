"""The backend contract per built-in backend, the registry and resolution (seed §3.1–§3.5, §4.2–§4.4)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace.errors import STABLE_CODES, MemoryBackendError, MemoryBackendErrorCode
from stratamem.core.workspace.file_backend import FileMemoryBackend
from stratamem.core.workspace.index import canonicalize_index_path, index_dir
from stratamem.core.workspace.lancedb_backend import LanceDbMemoryBackend
from stratamem.core.workspace.layered import ensure_memory_files, write_memory_file
from stratamem.core.workspace.models import MemoryGetOptions, MemorySearchOptions
from stratamem.core.workspace.readonly_backend import ReadOnlyMemoryBackend
from stratamem.core.workspace.registry import (
    DEFAULT_MEMORY_BACKEND,
    get_memory_backend,
    list_memory_backend_types,
    register_memory_backend,
    resolve_memory_backend,
    unregister_memory_backend,
)


def load_real_embedder() -> Any:
    """The real local embedder (all-MiniLM-L6-v2 on onnxruntime), as the service loads it."""
    from stratamem.core.workspace.embedder import load_default_embedder

    return load_default_embedder()


def broken_embedder() -> Any:
    raise RuntimeError("embedder unavailable")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "project"
    r.mkdir()
    return r.resolve()


def make_backend(kind: str, tmp_path: Path) -> Any:
    if kind == "file":
        return FileMemoryBackend()
    if kind == "lancedb":
        return LanceDbMemoryBackend(
            tmp_path / "home", embedder_factory=broken_embedder, debounce_seconds=0.01
        )
    return ReadOnlyMemoryBackend()


WRITABLE = ["file", "lancedb"]
ALL = ["file", "lancedb", "readonly"]


def test_the_eight_contract_codes_map_onto_stable_codes() -> None:
    assert {c.value for c in MemoryBackendErrorCode} == {
        "NOT_FOUND",
        "READ_ONLY",
        "READ_FAILED",
        "WRITE_FAILED",
        "UNSUPPORTED",
        "CONFLICT",
        "QUOTA_EXCEEDED",
        "BACKEND_UNAVAILABLE",
    }
    err = MemoryBackendError("READ_ONLY", "readonly")
    assert isinstance(err, StratamemError)
    assert err.code == ErrorCode.READ_ONLY and err.backend == "readonly"
    assert err.backend_code == MemoryBackendErrorCode.READ_ONLY
    assert STABLE_CODES[MemoryBackendErrorCode.BACKEND_UNAVAILABLE] == ErrorCode.BACKEND_UNAVAILABLE


@pytest.mark.parametrize("kind", ALL)
def test_backend_exposes_type_name_and_boolean_capabilities(kind: str, tmp_path: Path) -> None:
    backend = make_backend(kind, tmp_path)
    assert backend.type == kind and backend.name
    caps = backend.capabilities
    for flag in (
        "readable",
        "writable",
        "supports_atomic_write",
        "has_conflict_resolution",
        "persistent",
    ):
        assert isinstance(getattr(caps, flag), bool)
    assert caps.writable is (kind != "readonly")
    for absent in ("initialize", "has_capability", "flush", "shutdown"):
        assert not hasattr(backend, absent)


@pytest.mark.parametrize("kind", ALL)
def test_missing_long_term_memory_reads_as_empty_string(
    kind: str, tmp_path: Path, root: Path
) -> None:
    result = make_backend(kind, tmp_path).read(root)
    assert result.content == "" and result.exists is False
    assert result.path == ".stratamem/memory/MEMORY.md"


@pytest.mark.parametrize("kind", WRITABLE)
def test_write_then_read_round_trips_the_canonical_file(
    kind: str, tmp_path: Path, root: Path
) -> None:
    backend = make_backend(kind, tmp_path)
    result = backend.write(root, "# Memory\n\nuse uv\n")
    assert (
        result.success and result.path == ".stratamem/memory/MEMORY.md" and result.backend == kind
    )
    assert (root / ".stratamem/memory/MEMORY.md").read_text(
        encoding="utf-8"
    ) == "# Memory\n\nuse uv\n"
    assert backend.read(root).content == "# Memory\n\nuse uv\n"
    assert backend.exists(root)


def test_readonly_write_raises_read_only_and_changes_nothing(root: Path) -> None:
    ensure_memory_files(root)
    before = (root / ".stratamem/memory/MEMORY.md").read_text(encoding="utf-8")
    with pytest.raises(MemoryBackendError) as err:
        ReadOnlyMemoryBackend().write(root, "overwrite")
    assert err.value.backend_code == MemoryBackendErrorCode.READ_ONLY
    assert err.value.code == ErrorCode.READ_ONLY
    assert (root / ".stratamem/memory/MEMORY.md").read_text(encoding="utf-8") == before


def test_readonly_reads_existing_content_and_degrades_to_empty_on_failure(root: Path) -> None:
    write_memory_file(root, "MEMORY.md", "hello")
    assert ReadOnlyMemoryBackend().read(root).content == "hello"
    (root / ".stratamem/memory/MEMORY.md").write_bytes(b"\xff\xfe")
    assert ReadOnlyMemoryBackend().read(root).content == ""
    assert ReadOnlyMemoryBackend().search(root, MemorySearchOptions("hello")) == []


@pytest.mark.parametrize("kind", WRITABLE)
def test_get_returns_a_line_window_and_missing_file_is_not_found(
    kind: str, tmp_path: Path, root: Path
) -> None:
    backend = make_backend(kind, tmp_path)
    write_memory_file(root, "2026-05-06.md", "l1\nl2\nl3\nl4\n")
    got = backend.get(root, MemoryGetOptions("2026-05-06.md", start_line=2, line_count=2))
    assert (got.content, got.start_line, got.end_line, got.total_lines) == ("l2\nl3", 2, 3, 4)
    assert got.path == ".stratamem/memory/2026-05-06.md"
    with pytest.raises(MemoryBackendError) as err:
        backend.get(root, MemoryGetOptions("DREAMS.md"))
    assert err.value.code == ErrorCode.NOT_FOUND
    with pytest.raises(StratamemError) as bad:
        backend.get(root, MemoryGetOptions("../secrets.md"))
    assert bad.value.code == ErrorCode.INVALID_ARGUMENT


@pytest.mark.parametrize("kind", WRITABLE)
def test_search_over_layered_files_returns_bounded_snippets(
    kind: str, tmp_path: Path, root: Path
) -> None:
    backend = make_backend(kind, tmp_path)
    backend.write(root, "# M\n\n## Pitfalls\nNever run migrations twice.\n")
    write_memory_file(root, "DREAMS.md", "# Dreams\n\nmaybe a migrations dashboard\n")
    results = backend.search(root, MemorySearchOptions("migrations", limit=10))
    assert {r.path for r in results} == {
        ".stratamem/memory/MEMORY.md",
        ".stratamem/memory/DREAMS.md",
    }
    assert all(r.start_line >= 1 and r.score > 0 and len(r.snippet) <= 700 for r in results)


@pytest.mark.parametrize("kind", WRITABLE)
def test_bad_content_is_rejected_and_nothing_written(kind: str, tmp_path: Path, root: Path) -> None:
    backend = make_backend(kind, tmp_path)
    with pytest.raises(StratamemError) as err:
        backend.write(root, b"\xff")  # type: ignore[arg-type]
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(StratamemError) as big:
        backend.write(root, "x" * (1024 * 1024 + 1))
    assert big.value.code == ErrorCode.QUOTA_EXCEEDED
    assert not (root / ".stratamem/memory/MEMORY.md").exists()


# -- registry and resolution -----------------------------------------------------------------


def test_builtins_are_registered_through_the_plugin_hook() -> None:
    from stratamem.core.plugins import collect

    registered = {args[0].type for args in collect("register_memory_backends")}
    assert registered == {"file", "lancedb", "readonly"}
    assert {"file", "lancedb", "readonly"} <= set(list_memory_backend_types())
    assert isinstance(get_memory_backend("file"), FileMemoryBackend)
    assert get_memory_backend("nope") is None


def test_default_backend_is_lancedb() -> None:
    assert DEFAULT_MEMORY_BACKEND == "lancedb"
    assert resolve_memory_backend().type == "lancedb"
    assert resolve_memory_backend({}).type == "lancedb"


@pytest.mark.parametrize("configured", ["file", "readonly", "lancedb"])
def test_configured_registered_backend_is_used(configured: str) -> None:
    assert resolve_memory_backend({"memory_backend_type": configured}).type == configured


@pytest.mark.parametrize("unknown", ["qmd", "postgres", "", 7])
def test_unknown_backend_type_falls_back_to_the_default(unknown: object) -> None:
    assert resolve_memory_backend({"memory_backend_type": unknown}).type == "lancedb"


def test_a_third_party_backend_registers_and_resolves_like_a_builtin() -> None:
    class Custom(ReadOnlyMemoryBackend):
        type = "custom-test"
        name = "Custom"

    register_memory_backend(Custom())
    try:
        assert "custom-test" in list_memory_backend_types()
        assert resolve_memory_backend({"memory_backend_type": "custom-test"}).type == "custom-test"
    finally:
        assert unregister_memory_backend("custom-test")
    assert resolve_memory_backend({"memory_backend_type": "custom-test"}).type == "lancedb"


def test_registering_an_object_without_the_contract_members_is_rejected() -> None:
    with pytest.raises(StratamemError) as err:
        register_memory_backend(object())
    assert err.value.code == ErrorCode.INVALID_ARGUMENT


# -- lancedb specifics -------------------------------------------------------------------------


def test_lancedb_search_falls_back_to_local_search_when_index_is_unavailable(
    tmp_path: Path, root: Path
) -> None:
    backend = make_backend("lancedb", tmp_path)  # its embedder always fails
    backend.write(root, "## Conventions\nAlways pin lancedb below 0.41.\n")
    assert backend.refresher.wait_idle(10)
    assert backend.refresher.errors  # the refresh really failed
    results = backend.search(root, MemorySearchOptions("pin lancedb"))
    assert results and results[0].source == "local"
    assert results[0].path == ".stratamem/memory/MEMORY.md" and results[0].start_line == 2


def test_lancedb_write_returns_before_the_debounced_refresh_runs(
    tmp_path: Path, root: Path
) -> None:
    calls: list[float] = []

    def slow_factory() -> Any:
        calls.append(time.monotonic())
        raise RuntimeError("not now")

    backend = LanceDbMemoryBackend(
        tmp_path / "h", embedder_factory=slow_factory, debounce_seconds=0.3
    )
    for i in range(5):
        backend.write(root, f"version {i}")
    assert calls == []  # nothing ran on the write path
    assert backend.refresher.pending()
    assert backend.refresher.wait_idle(10)
    assert len(calls) == 1  # five writes coalesced into one refresh


@pytest.mark.parametrize(
    ("stale", "canonical"),
    [
        ("MEMORY.md", ".stratamem/memory/MEMORY.md"),
        ("/old/abs/project/.stratamem/memory/DREAMS.md", ".stratamem/memory/DREAMS.md"),
        ("memory/2026-01-02.md", ".stratamem/memory/2026-01-02.md"),
        (".stratamem/memory/MEMORY.md", ".stratamem/memory/MEMORY.md"),
        ("C:\\proj\\memory\\MEMORY.md", ".stratamem/memory/MEMORY.md"),
        (".stratamem/memory.md", None),
        ("notes.md", None),
    ],
)
def test_stale_index_paths_are_remapped_to_canonical_paths(
    stale: str, canonical: str | None
) -> None:
    assert canonicalize_index_path(stale) == canonical


def test_lancedb_index_lives_in_the_home_keyed_by_a_hash_of_the_root(
    tmp_path: Path, root: Path
) -> None:
    import hashlib

    d = index_dir(tmp_path / "home", root)
    assert (
        d == tmp_path / "home" / "workspace" / hashlib.sha256(str(root).encode()).hexdigest()[:16]
    )


@pytest.fixture(scope="module")
def real_embedder() -> Any:
    return load_real_embedder()


def test_lancedb_index_is_built_after_write_and_searched_hybrid_first(
    tmp_path: Path, root: Path, real_embedder: Any
) -> None:
    backend = LanceDbMemoryBackend(
        tmp_path / "home", embedder_factory=lambda: real_embedder, debounce_seconds=0.01
    )
    backend.write(
        root,
        "# Memory\n\n## Pitfalls\nThe cat sleeps on the warm windowsill.\n\n## Context\nQuarterly revenue grew twelve percent.\n",
    )
    write_memory_file(root, "2026-02-03.md", "# Day\n\nDeployed the billing service to staging.\n")
    backend.schedule_refresh(root)
    assert backend.refresher.wait_idle(60) and not backend.refresher.errors
    assert (index_dir(tmp_path / "home", root) / "index").is_dir()
    results = backend.search(root, MemorySearchOptions("a kitten naps by the window", limit=3))
    assert results[0].source == "index"
    assert results[0].path == ".stratamem/memory/MEMORY.md" and results[0].start_line == 4
    assert "windowsill" in results[0].snippet
    results = backend.search(root, MemorySearchOptions("billing staging", limit=3))
    assert results[0].path == ".stratamem/memory/2026-02-03.md"


def test_lancedb_index_rows_with_stale_paths_come_back_canonical(
    tmp_path: Path, root: Path, real_embedder: Any
) -> None:
    import lancedb

    backend = LanceDbMemoryBackend(
        tmp_path / "home", embedder_factory=lambda: real_embedder, debounce_seconds=0.01
    )
    backend.write(root, "## Context\nThe payment gateway times out after thirty seconds.\n")
    assert backend.refresher.wait_idle(60) and not backend.refresher.errors
    table = lancedb.connect(str(index_dir(tmp_path / "home", root) / "index")).open_table("chunks")
    table.update(values={"path": "/legacy/project/memory/MEMORY.md"})
    results = backend.search(root, MemorySearchOptions("payment gateway timeout"))
    assert results[0].source == "index"
    assert results[0].path == ".stratamem/memory/MEMORY.md"


@pytest.mark.parametrize("kind", ALL)
def test_legacy_top_level_memory_files_are_ignored(kind: str, tmp_path: Path, root: Path) -> None:
    (root / ".stratamem").mkdir()
    (root / ".stratamem/memory.md").write_text("legacy single file", encoding="utf-8")
    (root / "MEMORY.md").write_text("top-level legacy", encoding="utf-8")
    backend = make_backend(kind, tmp_path)
    assert backend.read(root).content == ""
    assert backend.search(root, MemorySearchOptions("legacy")) == []


def test_service_start_refreshes_the_index_of_configured_roots(tmp_path: Path, root: Path) -> None:
    from stratamem.core.workspace.service import WorkspaceMemory

    embedder = load_real_embedder()
    write_memory_file(
        root, "MEMORY.md", "## Context\nThe ingestion queue is backed by Redis streams.\n"
    )
    memory = WorkspaceMemory(
        tmp_path / "home", embedder_factory=lambda: embedder, debounce_seconds=0.01
    )
    memory.start([root])
    assert memory.lancedb.refresher.wait_idle(60) and not memory.lancedb.refresher.errors
    results = memory.search(root, "which message broker backs ingestion")
    assert results[0].source == "index" and results[0].path == ".stratamem/memory/MEMORY.md"
    memory.close()
