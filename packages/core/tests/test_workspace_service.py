"""``WorkspaceMemory`` (the API the gRPC service wires), the tool definitions/dispatcher and the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.cli import main
from stratamem.core.workspace.service import WorkspaceMemory
from stratamem.core.workspace.tools import TOOL_DEFINITIONS, dispatch_tool


def no_embedder() -> Any:
    raise RuntimeError("no embedder in this test")


def files_under(path: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "project"
    r.mkdir()
    return r.resolve()


@pytest.fixture
def memory(tmp_path: Path) -> Any:
    m = WorkspaceMemory(tmp_path / "home", embedder_factory=no_embedder, debounce_seconds=0.01)
    yield m
    m.close(wait=True)


def test_service_resolves_the_backend_from_project_settings(
    memory: WorkspaceMemory, root: Path
) -> None:
    assert memory.backend(root) is memory.lancedb
    memory.update_settings(root, {"memory_backend_type": "readonly"})
    assert memory.backend(root).type == "readonly"
    with pytest.raises(StratamemError) as err:
        memory.write(root, "nope")
    assert err.value.code == ErrorCode.READ_ONLY
    with pytest.raises(StratamemError) as err:
        memory.write_file(root, "DREAMS.md", "nope")
    assert err.value.code == ErrorCode.READ_ONLY
    assert memory.read(root).content == ""


def test_service_round_trip_over_layered_files(memory: WorkspaceMemory, root: Path) -> None:
    memory.bootstrap(root)
    memory.write_file(root, "2026-04-05.md", "# Day\n\nbumped grpcio\n")
    assert [f.name for f in memory.list_files(root)] == ["MEMORY.md", "DREAMS.md", "2026-04-05.md"]
    assert memory.read_file(root, ".stratamem/memory/2026-04-05.md").endswith("bumped grpcio\n")
    assert memory.get(root, "2026-04-05.md", 3, 1).content == "bumped grpcio"
    assert memory.search(root, "grpcio")[0].path == ".stratamem/memory/2026-04-05.md"
    assert memory.exists(root)
    with pytest.raises(StratamemError) as err:
        memory.read_file(root, "2026-04-06.md")
    assert err.value.code == ErrorCode.NOT_FOUND


def test_service_only_serves_allowed_roots(tmp_path: Path, root: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    m = WorkspaceMemory(tmp_path / "home", allowed_roots=[root], embedder_factory=no_embedder)
    m.write(root, "ok")
    with pytest.raises(StratamemError) as err:
        m.write(other, "sneaky")
    assert err.value.code == ErrorCode.PERMISSION_DENIED
    assert files_under(other) == {}
    m.close()


@pytest.mark.parametrize("bad_root", ["", "relative", "/no/such/dir"])
def test_service_rejects_bad_roots_before_touching_anything(
    memory: WorkspaceMemory, bad_root: str
) -> None:
    with pytest.raises(StratamemError):
        memory.write(bad_root, "x")


def test_instruction_context_and_builders_follow_the_project(
    memory: WorkspaceMemory, root: Path
) -> None:
    assert memory.instruction_context(root).backend_type == "lancedb"
    memory.update_settings(root, {"memory_backend_type": "file"})
    assert ".stratamem/memory/MEMORY.md" in memory.build_instructions(root, "execution")
    memory.update_settings(root, {"memory_enabled": False})
    assert memory.build_instructions(root, "planning") == ""
    with pytest.raises(StratamemError):
        memory.build_instructions(root, "gossip")


def test_recall_through_the_service_lives_in_the_home_per_project(
    memory: WorkspaceMemory, root: Path, tmp_path: Path
) -> None:
    assert memory.append_recall(root, "decision", "Adopt pluggy hooks.").accepted
    assert not memory.append_recall(root, "decision", "adopt pluggy hooks").accepted
    assert memory.search_recall(root, "pluggy").hits[0].record.content == "Adopt pluggy hooks."
    assert list((tmp_path / "home" / "workspace").glob("*/recall.sqlite3"))
    assert not (root / ".stratamem").exists() or not list(root.rglob("*.sqlite3"))
    prompt = memory.recalled_context(root, "PROMPT", "pluggy")
    assert prompt == "PROMPT\n\n### Recalled Context\n- (decision) Adopt pluggy hooks.\n"


# -- tools -----------------------------------------------------------------------------------


def test_tool_definitions_are_json_schema_function_specs() -> None:
    names = [t["function"]["name"] for t in TOOL_DEFINITIONS]
    assert names == [
        "memory_read",
        "memory_write",
        "memory_get",
        "memory_search",
        "memory_list_files",
        "memory_write_file",
        "recall_append",
        "recall_search",
    ]
    for tool in TOOL_DEFINITIONS:
        params = tool["function"]["parameters"]
        assert tool["type"] == "function" and params["type"] == "object"
        assert params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
    json.dumps(TOOL_DEFINITIONS)


def test_dispatcher_runs_tools_and_returns_plain_json(memory: WorkspaceMemory, root: Path) -> None:
    out = dispatch_tool(
        memory, root, "memory_write", {"content": "## Context\nservice on port 7070\n"}
    )
    assert out["ok"] and out["result"]["path"] == ".stratamem/memory/MEMORY.md"
    found = dispatch_tool(memory, root, "memory_search", {"query": "port 7070"})
    assert found["result"][0]["start_line"] == 2
    added = dispatch_tool(
        memory,
        root,
        "recall_append",
        {"kind": "solution", "content": "restart with --fresh", "tags": ["ops"]},
    )
    assert added["result"]["accepted"] and added["result"]["record"]["source"]["origin"] == "tool"
    res = dispatch_tool(memory, root, "recall_search", {"query": "fresh", "kinds": ["solution"]})
    assert res["result"]["mode"] == "keyword" and len(res["result"]["hits"]) == 1
    json.dumps(res)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("memory_nuke", {}),
        ("memory_write", {}),
        ("memory_write", {"content": 5}),
        ("memory_write", {"content": "x", "extra": 1}),
        ("memory_search", {"query": "x", "limit": 51}),
        ("memory_write_file", {"path": "../../etc/passwd", "content": "x"}),
        ("recall_append", {"kind": "opinion", "content": "x"}),
        ("recall_append", {"kind": "decision", "content": "x", "tags": [1]}),
        ("memory_write", "not an object"),
    ],
)
def test_dispatcher_rejects_bad_calls_with_typed_errors_and_writes_nothing(
    memory: WorkspaceMemory, root: Path, name: str, args: Any
) -> None:
    before = files_under(root)
    out = dispatch_tool(memory, root, name, args)
    assert out["ok"] is False and out["error"]["code"] == "invalid_argument"
    assert files_under(root) == before
    assert memory.recall_store(root).count() == 0


# -- CLI -------------------------------------------------------------------------------------


def run_cli(capsys: Any, *argv: str) -> tuple[int, Any, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if captured.out.strip() else None), captured.err


def test_cli_memory_commands_round_trip(capsys: Any, tmp_path: Path, root: Path) -> None:
    base = ["--home", str(tmp_path / "home"), "memory", "--root", str(root)]
    code, out, _ = run_cli(
        capsys, *base, "write", "--content", "# M\n\n## Pitfalls\nflaky dns in ci\n"
    )
    assert code == 0 and out["path"] == ".stratamem/memory/MEMORY.md"
    code, out, _ = run_cli(
        capsys, *base, "write", "--file", "2026-06-07.md", "--content", "shipped 1.2\n"
    )
    assert code == 0
    code, out, _ = run_cli(capsys, *base, "read")
    assert out["content"].endswith("flaky dns in ci\n")
    code, out, _ = run_cli(capsys, *base, "get", "MEMORY.md", "--start", "4")
    assert out["content"] == "flaky dns in ci"
    code, out, _ = run_cli(capsys, *base, "files")
    assert [f["name"] for f in out] == ["MEMORY.md", "2026-06-07.md"]
    code, out, _ = run_cli(capsys, *base, "search", "dns")
    assert out[0]["path"] == ".stratamem/memory/MEMORY.md"
    code, out, _ = run_cli(capsys, *base, "recall-add", "preference", "Prefer httpx", "--tag", "py")
    assert out["accepted"] is True and out["record"]["tags"] == ["py"]
    code, out, _ = run_cli(capsys, *base, "recall-add", "preference", "prefer HTTPX!")
    assert out["accepted"] is False and out["duplicate_reason"] == "exact"
    code, out, _ = run_cli(capsys, *base, "recall-search", "httpx", "--kind", "preference")
    assert out["mode"] == "keyword" and len(out["hits"]) == 1


def test_cli_reports_typed_errors_and_writes_nothing(
    capsys: Any, tmp_path: Path, root: Path
) -> None:
    base = ["--home", str(tmp_path / "home"), "memory", "--root", str(root)]
    code, out, err = run_cli(capsys, *base, "write", "--file", "../escape.md", "--content", "x")
    assert code == 1 and out is None
    assert json.loads(err.strip().splitlines()[-1])["error"]["code"] == "invalid_argument"
    assert files_under(root) == {}
