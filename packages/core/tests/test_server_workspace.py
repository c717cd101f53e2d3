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


async def test_the_owner_opens_a_host_workspace_in_its_layout_and_edits_recall_through_the_client(
    tmp_path: Path,
) -> None:
    """``RemoteWorkspace`` (the adapters' client): an unconfigured root is refused until the owner
    opens it; the ``openclaw`` layout serves the host's own files in place; the recall store is
    listed, replaced and removed over the wire; a TCP token caller cannot open a root."""
    from stratamem.contract.errors import ErrorCode, StratamemError
    from stratamem.contract.remote import RemoteCore
    from stratamem.core.server.app import ServeOptions

    workspace = tmp_path / "openclaw-workspace"
    workspace.mkdir()
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core, ServeOptions(listen=["127.0.0.1:0"], token="t0k")).start()
    try:
        async with RemoteCore(f"unix:{svc.socket_path}", reconnect_s=0) as owner:
            ws = owner.workspace("openclaw")
            with pytest.raises(StratamemError) as err:
                await ws.read(workspace)
            assert err.value.code == ErrorCode.PERMISSION_DENIED
            info = await ws.open_root(workspace)
            assert info.capabilities.writable
            await ws.write(workspace, "# Memory\n\n- The deploy window is Tuesday.\n")
            assert "Tuesday" in (workspace / "MEMORY.md").read_text()  # in place, not .stratamem/
            assert "Tuesday" in (await ws.read(workspace)).content
            await ws.write_file(workspace, "2026-12-01.md", "Paired with Ana on the cache.\n")
            assert (workspace / "memory" / "2026-12-01.md").exists()
            added = await ws.append_recall(
                workspace, "preference", "Prefers tabs", tags=["hermes", "user"]
            )
            other = await ws.append_recall(workspace, "decision", "Ship on Tuesdays")
            listed = await ws.list_recall(workspace, ["preference"], tags=["user"])
            assert [r.id for r in listed] == [added.record.id]
            replaced = await ws.replace_recall(
                workspace, "preference", added.record.id, "Prefers spaces"
            )
            assert replaced.record.id == added.record.id and not replaced.merged
            assert replaced.record.content == "Prefers spaces"
            assert list(replaced.record.tags) == ["hermes", "user"]  # kept when not given
            gone = await ws.remove_recall(workspace, "decision", other.record.id)
            assert gone.id == other.record.id
            assert [r.content for r in await ws.list_recall(workspace)] == ["Prefers spaces"]
            with pytest.raises(StratamemError) as err:
                await ws.remove_recall(workspace, "decision", other.record.id)
            assert err.value.code == ErrorCode.NOT_FOUND
            with pytest.raises(StratamemError) as err:
                await owner.workspace("nope").read(workspace)
            assert err.value.code == ErrorCode.INVALID_ARGUMENT
        assert svc.tcp_address is not None
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        async with RemoteCore(svc.tcp_address, token="t0k", reconnect_s=0) as remote:
            with pytest.raises(StratamemError) as err:
                await remote.workspace().open_root(elsewhere)
            assert err.value.code == ErrorCode.PERMISSION_DENIED
            with pytest.raises(StratamemError) as err:
                await remote.workspace().read(elsewhere)
            assert err.value.code == ErrorCode.PERMISSION_DENIED
    finally:
        await svc.stop(1.0)
        await core.shutdown()


async def test_a_root_the_owner_opened_is_served_when_the_viewer_made_the_workspace_first(
    tmp_path: Path,
) -> None:
    """The viewer and the gRPC service share one ``WorkspaceMemory``; whichever made it, a root the
    owner opened is served (one set of served roots)."""
    from stratamem.contract.remote import RemoteCore
    from stratamem.core.viewer.workspace_api import WorkspaceApi

    hermes_home = tmp_path / "hermes"
    hermes_home.mkdir()
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    svc = await Service(core).start()
    try:
        assert WorkspaceApi(core, svc._workspace).memory is not None  # the viewer's, first
        async with RemoteCore(f"unix:{svc.socket_path}", reconnect_s=0) as owner:
            ws = owner.workspace(open_roots=True)
            await ws.write(hermes_home, "- Prefers tea.\n")
            assert (await ws.read(hermes_home)).content == "- Prefers tea.\n"
    finally:
        await svc.stop(1.0)
        await core.shutdown()
