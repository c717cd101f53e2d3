"""WorkspaceMemoryService over gRPC: configured roots only, layered files, search and recall, typed
errors for traversal and read-only paths."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from stratamem.contract.errors import ERROR_CODE_METADATA_KEY
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.server.app import Service
from stratamem.v1 import workspace_pb2 as w
from stratamem.v1 import workspace_pb2_grpc


@pytest.fixture
async def stub(tmp_path: Path) -> AsyncIterator[tuple[Any, Path, Path]]:
    project = tmp_path / "project"
    project.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    core = await open_local_core(
        tmp_path / "home", embedding__provider="none", workspace__roots=[str(project)]
    )
    svc = await Service(core).start()
    channel = grpc.aio.insecure_channel(f"unix:{svc.socket_path}")
    try:
        yield workspace_pb2_grpc.WorkspaceMemoryServiceStub(channel), project, other
    finally:
        await channel.close()
        await svc.stop(1.0)
        await core.shutdown()


def _code(err: grpc.aio.AioRpcError) -> str:
    return dict(err.trailing_metadata() or ()).get(ERROR_CODE_METADATA_KEY, "")


async def test_layered_files_search_and_recall_round_trip(stub: Any) -> None:
    ws, project, _ = stub
    root = str(project)
    created = await ws.Bootstrap(w.WorkspaceRootRequest(root=root))
    assert any(p.endswith("MEMORY.md") for p in created.created)
    await ws.Write(
        w.WorkspaceWriteRequest(root=root, content="# Memory\n\nUse pnpm for installs.\n")
    )
    read = await ws.Read(w.WorkspaceRootRequest(root=root))
    assert read.exists and "pnpm" in read.content
    on_disk = list(project.rglob("MEMORY.md"))
    assert len(on_disk) == 1 and on_disk[0].read_text().count("pnpm") == 1
    files = await ws.ListFiles(w.WorkspaceRootRequest(root=root))
    assert "MEMORY.md" in [f.name for f in files.files]
    hits = await ws.Search(w.WorkspaceSearchRequest(root=root, query="pnpm"))
    assert hits.hits and "pnpm" in hits.hits[0].snippet
    first = await ws.AppendRecall(
        w.AppendRecallRequest(
            root=root, kind="decision", content="Deploys go through the staging gate"
        )
    )
    dup = await ws.AppendRecall(
        w.AppendRecallRequest(
            root=root, kind="decision", content="Deploys go through the staging gate"
        )
    )
    assert first.accepted and not dup.accepted and dup.HasField("duplicate_reason")
    found = await ws.SearchRecall(w.SearchRecallRequest(root=root, query="staging gate"))
    assert [h.record.id for h in found.hits] == [first.record.id]
    ctx = await ws.RecalledContext(w.RecalledContextRequest(root=root, prompt="P", query="staging"))
    assert "### Recalled Context" in ctx.text


async def test_unconfigured_roots_and_path_traversal_are_refused_with_typed_codes(
    stub: Any,
) -> None:
    ws, project, other = stub
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await ws.Read(w.WorkspaceRootRequest(root=str(other)))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert _code(err.value) == "permission_denied"
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await ws.WriteFile(
            w.WorkspaceWriteFileRequest(root=str(project), path="../../etc/passwd", content="x")
        )
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert not (project.parent / "etc").exists()
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await ws.ReadFile(w.WorkspaceFileRequest(root=str(project), path="DREAMS.md"))
    assert _code(err.value) == "not_found"
