"""Layered files: bootstrap, listing, strict path/content validation (nothing written on bad input)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.workspace.layered import (
    SCAFFOLD_HEADINGS,
    chunk_markdown,
    ensure_memory_files,
    get_default_memory_scaffold,
    list_memory_files,
    read_memory_file,
    search_layered_files,
    write_memory_file,
)
from stratamem.core.workspace.paths import (
    MEMORY_LONG_TERM_PATH,
    MEMORY_WORKSPACE_PATH,
    layered_name,
    memory_long_term_path,
    validate_project_root,
)


def files_under(path: Path) -> dict[str, bytes]:
    """Snapshot of every file below ``path`` (proves nothing was written)."""
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "project"
    r.mkdir()
    return r.resolve()


def test_canonical_long_term_path_is_under_the_stratamem_memory_workspace(root: Path) -> None:
    assert MEMORY_WORKSPACE_PATH == ".stratamem/memory"
    assert MEMORY_LONG_TERM_PATH == ".stratamem/memory/MEMORY.md"
    assert memory_long_term_path(root) == root / ".stratamem" / "memory" / "MEMORY.md"


def test_scaffold_has_the_four_default_headings() -> None:
    scaffold = get_default_memory_scaffold()
    for heading in SCAFFOLD_HEADINGS:
        assert heading in scaffold
    assert SCAFFOLD_HEADINGS == ("## Architecture", "## Conventions", "## Pitfalls", "## Context")


def test_bootstrap_creates_memory_and_dreams_once_and_never_overwrites(root: Path) -> None:
    created = ensure_memory_files(root)
    assert created == [".stratamem/memory/MEMORY.md", ".stratamem/memory/DREAMS.md"]
    memory_long_term_path(root).write_text("mine\n", encoding="utf-8")
    assert ensure_memory_files(root) == []
    assert memory_long_term_path(root).read_text(encoding="utf-8") == "mine\n"


def test_list_files_returns_only_layered_files_long_term_first(root: Path) -> None:
    ensure_memory_files(root)
    ws = root / MEMORY_WORKSPACE_PATH
    (ws / "2026-01-02.md").write_text("a", encoding="utf-8")
    (ws / "2026-01-03.md").write_text("b", encoding="utf-8")
    (ws / "notes.md").write_text("ignored", encoding="utf-8")
    (ws / "2026-02-30.md").write_text("impossible date", encoding="utf-8")
    (ws / "memory-insights.md").write_text("not a layered file", encoding="utf-8")
    names = [f.name for f in list_memory_files(root)]
    assert names == ["MEMORY.md", "DREAMS.md", "2026-01-03.md", "2026-01-02.md"]


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "../MEMORY.md",
        ".stratamem/memory/../../MEMORY.md",
        "sub/MEMORY.md",
        "./MEMORY.md",
        "memory.md",
        "NOTES.md",
        "2026-02-30.md",
        "2026-13-01.md",
        "26-01-01.md",
        "2026-01-01.txt",
        "MEMORY.md\x00",
        "..\\MEMORY.md",
        "",
        ".stratamem/MEMORY.md",
        "C:/MEMORY.md",
    ],
)
def test_bad_paths_are_rejected_with_invalid_argument_and_nothing_is_written(
    root: Path, path: str
) -> None:
    before = files_under(root)
    with pytest.raises(StratamemError) as err:
        write_memory_file(root, path, "x")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(StratamemError):
        read_memory_file(root, path)
    assert files_under(root) == before


def test_workspace_relative_and_bare_names_are_both_accepted() -> None:
    assert layered_name("MEMORY.md") == "MEMORY.md"
    assert layered_name(".stratamem/memory/2024-02-29.md") == "2024-02-29.md"


def test_symlinked_file_leaving_the_workspace_is_rejected_and_target_untouched(
    root: Path, tmp_path: Path
) -> None:
    ensure_memory_files(root)
    outside = tmp_path / "outside.md"
    outside.write_text("secret", encoding="utf-8")
    link = root / MEMORY_WORKSPACE_PATH / "2026-01-01.md"
    os.symlink(outside, link)
    with pytest.raises(StratamemError) as err:
        write_memory_file(root, "2026-01-01.md", "overwrite")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(StratamemError):
        read_memory_file(root, "2026-01-01.md")
    assert outside.read_text(encoding="utf-8") == "secret"


def test_symlinked_workspace_directory_is_rejected(root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".stratamem").mkdir()
    os.symlink(elsewhere, root / MEMORY_WORKSPACE_PATH)
    with pytest.raises(StratamemError) as err:
        write_memory_file(root, "MEMORY.md", "x")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    assert list(elsewhere.iterdir()) == []


def test_non_utf8_content_is_rejected_and_nothing_is_written(root: Path) -> None:
    before = files_under(root)
    with pytest.raises(StratamemError) as err:
        write_memory_file(root, "MEMORY.md", b"\xff\xfe broken")
    assert err.value.code == ErrorCode.INVALID_ARGUMENT
    with pytest.raises(StratamemError):
        write_memory_file(root, "MEMORY.md", "lone surrogate \udc80")
    assert files_under(root) == before


def test_content_over_one_megabyte_is_quota_exceeded_and_old_content_kept(root: Path) -> None:
    write_memory_file(root, "MEMORY.md", "original")
    with pytest.raises(StratamemError) as err:
        write_memory_file(root, "MEMORY.md", "é" * (512 * 1024 + 1))  # 2 bytes each
    assert err.value.code == ErrorCode.QUOTA_EXCEEDED
    assert read_memory_file(root, "MEMORY.md") == "original"
    assert write_memory_file(root, "MEMORY.md", "a" * 1024 * 1024) == 1024 * 1024


def test_reading_a_non_utf8_file_is_read_failed(root: Path) -> None:
    ensure_memory_files(root)
    (root / MEMORY_WORKSPACE_PATH / "DREAMS.md").write_bytes(b"\xff\xff")
    with pytest.raises(StratamemError) as err:
        read_memory_file(root, "DREAMS.md")
    assert err.value.code == ErrorCode.READ_FAILED


def test_atomic_write_leaves_no_temp_files_and_replaces_content(root: Path) -> None:
    write_memory_file(root, "MEMORY.md", "one")
    write_memory_file(root, "MEMORY.md", "two")
    ws = root / MEMORY_WORKSPACE_PATH
    assert sorted(p.name for p in ws.iterdir()) == ["MEMORY.md"]
    assert read_memory_file(root, "MEMORY.md") == "two"


@pytest.mark.parametrize("bad", ["", "relative/path", "/definitely/not/here", 42])
def test_project_root_must_be_an_existing_absolute_directory(bad: object) -> None:
    with pytest.raises(StratamemError) as err:
        validate_project_root(bad)  # type: ignore[arg-type]
    assert err.value.code in (ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)


def test_chunks_follow_headings_and_paragraphs_with_line_numbers() -> None:
    text = "# Title\n\nintro line\n\n## Pitfalls\nfirst\nsecond\n\nthird para\n"
    chunks = chunk_markdown("p", text)
    assert [(c.heading, c.start_line, c.end_line, c.text) for c in chunks] == [
        ("Title", 3, 3, "intro line"),
        ("Pitfalls", 6, 7, "first\nsecond"),
        ("Pitfalls", 9, 9, "third para"),
    ]


def test_local_search_returns_bounded_snippets_with_file_line_and_score(root: Path) -> None:
    write_memory_file(root, "MEMORY.md", "# M\n\n## Pitfalls\n" + "retry storms " * 200 + "\n")
    write_memory_file(root, "2026-03-04.md", "unrelated\n\nthe retry loop was fixed\n")
    results = search_layered_files(root, "retry loop", limit=5)
    assert results[0].path == ".stratamem/memory/2026-03-04.md"
    assert results[0].start_line == 3 and results[0].score == 1.0
    assert all(len(r.snippet) <= 700 for r in results)
    assert {r.path for r in results} == {
        ".stratamem/memory/2026-03-04.md",
        ".stratamem/memory/MEMORY.md",
    }
