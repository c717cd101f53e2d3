"""Workspace memory over OpenClaw's own workspace (``MEMORY.md``, ``memory/YYYY-MM-DD.md``):
Fusion tools through the host service, and the ``### Recalled Context`` section appended to the
prompt when recall records match the turn."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from stratamem.core import LocalCore
from stratamem.core.server.app import Service
from stratamem.hosts.openclaw.v1 import openclaw_pb2 as pb
from stratamem.openclaw.host import HookCtx
from stratamem.openclaw.service import OpenClawService
from stratamem.openclaw.workspace import OpenClawWorkspace, tool_names


@pytest.fixture
async def service(core: LocalCore) -> AsyncIterator[OpenClawService]:
    """The host service as ``stratamem serve`` runs it: its workspace memory is a client of the
    home's service (real gRPC on the home's Unix socket)."""
    svc = await Service(core).start()
    ws = OpenClawWorkspace(core.home)
    try:
        yield OpenClawService(core, workspace=ws)
    finally:
        await ws.aclose()
        await svc.stop(1.0)


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
    # OpenClaw's own long-term file at the workspace root, not a .stratamem copy
    assert "release train" in (ws / "MEMORY.md").read_text()
    assert not (ws / ".stratamem").exists()
    read = await call_tool(service, ws, "workspace_memory_read", {})
    assert "release train" in json.dumps(read["result"])
    daily = await call_tool(
        service,
        ws,
        "workspace_memory_write_file",
        {"path": "memory/2026-06-02.md", "content": "# 2026-06-02\n\nShipped 4.2.\n"},
    )
    assert daily["ok"] and daily["result"]["path"] == "memory/2026-06-02.md"
    assert (ws / "memory" / "2026-06-02.md").read_text().endswith("Shipped 4.2.\n")


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


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": now()}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": now()}


def now() -> int:
    return int(time.time() * 1000)


async def test_a_fact_openclaw_wrote_into_memory_md_is_found_by_the_search_tool(
    service: OpenClawService, tmp_path: Path
) -> None:
    ws = tmp_path / "workspace"
    (ws / "memory").mkdir(parents=True)
    # written by OpenClaw (or its user), not through our tools
    (ws / "MEMORY.md").write_text("# Memory\n\n- The office Wi-Fi is named Quokka-5G.\n")
    (ws / "memory" / "2026-06-01.md").write_text(
        "# 2026-06-01\n\nThe Brambleberry invoice run moved to the 3rd.\n"
    )
    found = await call_tool(service, ws, "workspace_memory_search", {"query": "office Wi-Fi"})
    assert found["ok"], found
    hits = found["result"]
    assert hits[0]["path"] == "MEMORY.md" and "Quokka-5G" in hits[0]["snippet"]
    daily = await call_tool(
        service, ws, "workspace_memory_search", {"query": "Brambleberry invoice"}
    )
    assert daily["result"][0]["path"] == "memory/2026-06-01.md"
    got = await call_tool(
        service, ws, "workspace_memory_get", {"path": "memory/2026-06-01.md", "start_line": 3}
    )
    assert got["ok"] and "Brambleberry" in got["result"]["content"]
    listed = await call_tool(service, ws, "workspace_memory_list_files", {})
    assert [f["path"] for f in listed["result"]] == ["MEMORY.md", "memory/2026-06-01.md"]
    # once the background index over OpenClaw's files is built, it answers the same question
    give_up = time.monotonic() + 60
    again = await call_tool(service, ws, "workspace_memory_search", {"query": "office Wi-Fi"})
    while again["result"][0]["source"] != "index" and time.monotonic() < give_up:
        await asyncio.sleep(0.2)
        again = await call_tool(service, ws, "workspace_memory_search", {"query": "office Wi-Fi"})
    assert again["result"][0]["source"] == "index"
    assert again["result"][0]["path"] == "MEMORY.md"


async def test_recalled_context_follows_the_memos_context_block_within_800_bytes(
    service: OpenClawService, tmp_path: Path
) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    host = service.host
    c1 = HookCtx(run_id="r1", agent_id="main", session_key="agent:main:a", workspace_dir=str(ws))
    text = "Our Tamarind frontend deploys to the Vireo edge cluster."
    await host.before_prompt_build(c1, text, [])
    end = await host.agent_end(c1, [user(text), assistant("Noted: Vireo.")])
    assert end.captured
    for i, tool in enumerate(["pnpm", "vite", "vitest", "biome", "turbo", "changesets"]):
        added = await call_tool(
            service,
            ws,
            "workspace_recall_append",
            {
                "kind": "decision",
                "content": f"Tamarind frontend decision {i}: standardise on {tool} "
                + "because the team agreed after a long review of alternatives " * 2,
            },
        )
        assert added["ok"], added
    recalled = await call_tool(
        service, ws, "workspace_recall_search", {"query": "Tamarind frontend"}
    )
    assert len(recalled["result"]["hits"]) == 6
    c2 = HookCtx(run_id="r2", agent_id="main", session_key="agent:main:b", workspace_dir=str(ws))
    r = await host.before_prompt_build(c2, "Where does the Tamarind frontend deploy?", [])
    block = r.prepend_context
    assert block.startswith("<memos_context>") and "Vireo edge cluster" in block
    head, _, section = block.partition("### Recalled Context")
    assert head.rstrip().endswith("</memos_context>")
    assert "(decision) Tamarind frontend decision" in section
    assert len(("### Recalled Context" + section.rstrip("\n") + "\n").encode()) <= 800
