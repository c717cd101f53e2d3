"""Workspace memory over OpenClaw's workspace: Fusion tools through the host service, and the
``### Recalled Context`` section appended to the prompt when recall records match the turn."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratamem.core import LocalCore
from stratamem.hosts.openclaw.v1 import openclaw_pb2 as pb
from stratamem.openclaw.host import HookCtx
from stratamem.openclaw.service import OpenClawService
from stratamem.openclaw.workspace import OpenClawWorkspace, tool_names


@pytest.fixture
def service(core: LocalCore, tmp_path: Path) -> OpenClawService:
    ws = OpenClawWorkspace(tmp_path / "wshome")
    yield OpenClawService(core, workspace=ws)
    ws.close()


def pctx(workspace: Path, session_key: str = "agent:main:w", run_id: str = "r") -> pb.HookContext:
    return pb.HookContext(
        run_id=run_id, agent_id="main", session_key=session_key, workspace_dir=str(workspace)
    )


async def call_tool(
    service: OpenClawService, ws: Path, name: str, args: dict[str, object]
) -> dict[str, object]:
    res = await service.WorkspaceTool(
        pb.WorkspaceToolRequest(ctx=pctx(ws), name=name, arguments_json=json.dumps(args)), None
    )
    return json.loads(res.details_json)


def test_workspace_tools_carry_a_prefix_so_they_do_not_clash_with_memory_core() -> None:
    names = tool_names()
    assert "workspace_memory_search" in names and "workspace_recall_append" in names
    assert all(n.startswith("workspace_") for n in names)


async def test_memory_md_is_written_and_read_in_the_openclaw_workspace(
    service: OpenClawService, tmp_path: Path
) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    wrote = await call_tool(
        service,
        ws,
        "workspace_memory_write",
        {"content": "# Memory\n- The release train leaves on Thursdays.\n"},
    )
    assert wrote["ok"], wrote
    # the core's workspace layout keeps the layered files under <workspace>/.stratamem/memory/
    assert "release train" in (ws / ".stratamem" / "memory" / "MEMORY.md").read_text()
    read = await call_tool(service, ws, "workspace_memory_read", {})
    assert "release train" in json.dumps(read["result"])


async def test_bad_workspace_tool_arguments_are_typed_errors_and_write_nothing(
    service: OpenClawService, tmp_path: Path
) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    bad = await call_tool(
        service, ws, "workspace_recall_append", {"kind": "gossip", "content": "x"}
    )
    assert bad["ok"] is False and bad["error"]["code"] == "invalid_argument"
    escape = await call_tool(
        service, ws, "workspace_memory_write_file", {"path": "../evil.md", "content": "x"}
    )
    assert escape["ok"] is False
    assert not (tmp_path / "evil.md").exists()
    found = await call_tool(service, ws, "workspace_recall_search", {"query": "x"})
    assert found["ok"] and found["result"]["hits"] == []


async def test_matching_recall_records_add_the_recalled_context_section_to_the_prompt(
    service: OpenClawService, tmp_path: Path
) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    added = await call_tool(
        service,
        ws,
        "workspace_recall_append",
        {"kind": "decision", "content": "Use pnpm, never yarn, for the Tamarind frontend."},
    )
    assert added["ok"], added
    r = await service.host.before_prompt_build(
        HookCtx(run_id="r1", agent_id="main", session_key="agent:main:w", workspace_dir=str(ws)),
        "Which package manager for the Tamarind frontend?",
        [],
    )
    assert "### Recalled Context" in r.prepend_context
    assert "pnpm" in r.prepend_context
    unrelated = await service.host.before_prompt_build(
        HookCtx(
            run_id="r2",
            agent_id="main",
            session_key="agent:main:w2",
            workspace_dir=str(tmp_path / "elsewhere"),
        ),
        "Which package manager for the Tamarind frontend?",
        [],
    )
    assert "### Recalled Context" not in unrelated.prepend_context
