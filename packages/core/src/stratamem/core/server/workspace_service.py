"""``stratamem.v1.WorkspaceMemoryService`` over ``stratamem.core.workspace.WorkspaceMemory``.

Only project roots listed in ``workspace.roots`` of the home's config, or opened by the home's owner
with ``OpenRoot`` (a host adapter's own workspace), are served (anything else is
``permission_denied``); one ``WorkspaceMemory`` per layout shares that set. File and index work runs
in a worker thread, never on the server loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import message_factory

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.config.settings import Section
from stratamem.core.server.rpc import Call, Wrapper
from stratamem.v1 import workspace_pb2 as w

#: key of the default layout's ``WorkspaceMemory`` in the shared dict (the viewer reads it too)
MEMORY_KEY = "memory"
ROOTS_KEY = "roots"


def _record(r: Any) -> w.RecallRecord:
    src = w.RecallSource()
    for name in ("task_id", "agent_id", "session_id", "origin"):
        value = getattr(r, name)
        if value is not None:
            setattr(src, name, value)
    return w.RecallRecord(
        id=r.id,
        project_id=r.project_id,
        kind=r.kind,
        content=r.content,
        content_hash=r.content_hash,
        tags=list(r.tags),
        source=src,
        kg_node_ids=list(r.kg_node_ids),
        created_at=r.created_at,
        updated_at=r.updated_at,
    )


def _opt(msg: Any, name: str) -> Any:
    return getattr(msg, name) if msg.HasField(name) else None


def _source(req: Any) -> dict[str, Any] | None:
    """A request's ``RecallSource`` as the store's provenance mapping (``None`` when absent)."""
    if not req.HasField("source"):
        return None
    names = ("task_id", "agent_id", "session_id", "origin")
    return {k: v for k in names if (v := _opt(req.source, k))}


class WorkspaceServicer:
    """Handlers bound to one ``WorkspaceMemory`` (created lazily from the core's home and config)."""

    def __init__(self, core: Any, wrapper: Wrapper, shared: dict[str, Any]) -> None:
        self.core = core
        self.w = wrapper
        self._shared = shared  # one WorkspaceMemory per service, whichever listener is asked

    def _roots(self) -> set[Any]:
        """The served roots, one set shared by every layout's ``WorkspaceMemory``."""
        roots = self._shared.get(ROOTS_KEY)
        if roots is None:
            configured = Section("workspace", self.core.config.get("workspace"))["roots"] or []
            roots = {Path(os.fspath(r)).resolve() for r in configured}
            self._shared[ROOTS_KEY] = roots
        return roots

    def memory_for(self, layout: str = "") -> Any:
        """The ``WorkspaceMemory`` of ``layout`` ("" = Stratamem's own), created on first use."""
        from stratamem.core.workspace.layout import STRATAMEM, get_layout

        name = get_layout(layout or None).name
        key = MEMORY_KEY if name == STRATAMEM else f"{MEMORY_KEY}:{name}"
        if self._shared.get(key) is None:
            from stratamem.core.workspace.service import WorkspaceMemory

            embedder = getattr(self.core, "embedder", None)
            self._shared[key] = WorkspaceMemory(
                self.core.home,
                embedder_factory=(lambda: embedder) if embedder is not None else None,
                allowed_roots=(),
                layout=name,
            )
        memory = self._shared[key]
        roots = self._roots()
        if memory.allowed_roots is not roots:  # e.g. the viewer made it first: share one set
            roots.update(memory.allowed_roots or ())
            memory.allowed_roots = roots
        return memory

    @property
    def memory(self) -> Any:
        return self.memory_for("")

    async def _run(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.to_thread(fn)

    @staticmethod
    def _backend_info(b: Any) -> w.WorkspaceBackendInfo:
        c = b.capabilities
        caps = w.WorkspaceBackendCapabilities(
            readable=c.readable,
            writable=c.writable,
            supports_atomic_write=c.supports_atomic_write,
            has_conflict_resolution=c.has_conflict_resolution,
            persistent=c.persistent,
        )
        return w.WorkspaceBackendInfo(
            type=b.type, name=getattr(b, "name", b.type), capabilities=caps
        )

    async def DescribeBackend(self, req: w.WorkspaceRootRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        return self._backend_info(await self._run(lambda: m.backend(m.root(req.root))))

    async def OpenRoot(self, req: w.WorkspaceRootRequest, call: Call) -> Any:
        if call.principal.kind != "owner":
            raise StratamemError(
                ErrorCode.PERMISSION_DENIED, "only the home's owner may open a workspace root"
            )
        from stratamem.core.workspace.paths import validate_project_root

        m = self.memory_for(req.layout)
        path = await self._run(lambda: validate_project_root(req.root))
        self._roots().add(path)
        return self._backend_info(await self._run(lambda: m.backend(m.root(path))))

    async def Bootstrap(self, req: w.WorkspaceRootRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        created = await self._run(lambda: m.bootstrap(req.root))
        return w.WorkspaceBootstrapResponse(created=[str(x) for x in created])

    async def Read(self, req: w.WorkspaceRootRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        r = await self._run(lambda: m.read(req.root))
        return w.WorkspaceReadResult(
            content=r.content, exists=r.exists, path=r.path, backend=r.backend
        )

    async def Write(self, req: w.WorkspaceWriteRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        r = await self._run(lambda: m.write(req.root, req.content))
        return w.WorkspaceWriteResult(
            success=r.success, path=r.path, bytes_written=r.bytes_written, backend=r.backend
        )

    async def Get(self, req: w.WorkspaceGetRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        r = await self._run(
            lambda: m.get(
                req.root, req.path or "MEMORY.md", _opt(req, "start_line"), _opt(req, "line_count")
            )
        )
        return w.WorkspaceGetResult(
            path=r.path,
            content=r.content,
            start_line=r.start_line,
            end_line=r.end_line,
            total_lines=r.total_lines,
        )

    async def Search(self, req: w.WorkspaceSearchRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        hits = await self._run(lambda: m.search(req.root, req.query, _opt(req, "limit")))
        return w.WorkspaceSearchResponse(
            hits=[
                w.WorkspaceSearchHit(
                    path=h.path,
                    start_line=h.start_line,
                    end_line=h.end_line,
                    snippet=h.snippet,
                    score=h.score,
                    heading=h.heading,
                    source=h.source,
                )
                for h in hits
            ]
        )

    async def Exists(self, req: w.WorkspaceRootRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        return w.WorkspaceExistsResponse(exists=await self._run(lambda: m.exists(req.root)))

    async def ListFiles(self, req: w.WorkspaceRootRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        files = await self._run(lambda: m.list_files(req.root))
        return w.WorkspaceListFilesResponse(
            files=[
                w.WorkspaceFileInfo(
                    path=f.path, name=f.name, size=f.size, modified_at=f.modified_at, kind=f.kind
                )
                for f in files
            ]
        )

    async def ReadFile(self, req: w.WorkspaceFileRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        content = await self._run(lambda: m.read_file(req.root, req.path))
        return w.WorkspaceFileContent(path=req.path, content=content)

    async def WriteFile(self, req: w.WorkspaceWriteFileRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        r = await self._run(lambda: m.write_file(req.root, req.path, req.content))
        return w.WorkspaceWriteResult(
            success=r.success, path=r.path, bytes_written=r.bytes_written, backend=r.backend
        )

    async def AppendRecall(self, req: w.AppendRecallRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        source = _source(req)
        r = await self._run(
            lambda: m.append_recall(
                req.root,
                req.kind,
                req.content,
                tags=list(req.tags),
                source=source,
                kg_node_ids=list(req.kg_node_ids),
            )
        )
        out = w.AppendRecallResponse(accepted=r.accepted, record=_record(r.record))
        if r.duplicate_reason is not None:
            out.duplicate_reason = r.duplicate_reason
        if r.similarity is not None:
            out.similarity = r.similarity
        return out

    async def SearchRecall(self, req: w.SearchRecallRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)

        def run() -> Any:
            provider = m.default_vector_provider() if req.vector else None
            return m.search_recall(
                req.root,
                req.query,
                kinds=list(req.kinds) or None,
                tags=list(req.tags) or None,
                limit=_opt(req, "limit"),
                vector_provider=provider,
            )

        r = await self._run(run)
        return w.SearchRecallResponse(
            mode=r.mode,
            hits=[w.RecallHit(record=_record(h.record), score=h.score) for h in r.hits],
            capabilities=dict(r.capabilities),
        )

    async def RecalledContext(self, req: w.RecalledContextRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        text = await self._run(
            lambda: m.recalled_context(req.root, req.prompt, req.query, _opt(req, "limit"))
        )
        return w.WorkspaceText(text=text)

    async def ListRecall(self, req: w.ListRecallRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        records = await self._run(
            lambda: m.recall_store(req.root).candidates(
                list(req.kinds) or None, tags=list(req.tags) or None
            )
        )
        return w.ListRecallResponse(records=[_record(r) for r in records])

    async def ReplaceRecall(self, req: w.ReplaceRecallRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        r = await self._run(
            lambda: m.replace_recall(
                req.root,
                req.kind,
                req.match,
                req.content,
                tags=list(req.tags) if req.has_tags else None,
                source=_source(req),
                kg_node_ids=list(req.kg_node_ids) if req.has_kg_node_ids else None,
            )
        )
        return w.ReplaceRecallResponse(
            record=_record(r.record), previous=_record(r.previous), merged=r.merged
        )

    async def RemoveRecall(self, req: w.RemoveRecallRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        return _record(await self._run(lambda: m.remove_recall(req.root, req.kind, req.match)))

    async def InstructionContext(self, req: w.WorkspaceRootRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        ctx = await self._run(lambda: m.instruction_context(req.root))
        out = w.WorkspaceInstructionContext(backend_type=ctx.backend_type, enabled=ctx.enabled)
        if ctx.instruction_path_hint is not None:
            out.instruction_path_hint = ctx.instruction_path_hint
        return out

    async def BuildInstructions(self, req: w.BuildInstructionsRequest, call: Call) -> Any:
        m = self.memory_for(req.layout)
        text = await self._run(lambda: m.build_instructions(req.root, req.role))
        return w.WorkspaceText(text=text)

    def generic_handler(self) -> grpc.GenericRpcHandler:
        service = w.DESCRIPTOR.services_by_name["WorkspaceMemoryService"]
        handlers: dict[str, grpc.RpcMethodHandler] = {}
        for method in service.methods:
            req_cls = message_factory.GetMessageClass(method.input_type)
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                self.w.unary(
                    f"WorkspaceMemoryService/{method.name}", getattr(self, method.name), req_cls
                ),
                response_serializer=lambda msg: msg.SerializeToString(),
            )
        return grpc.method_handlers_generic_handler(service.full_name, handlers)


def add_workspace_service(
    server: grpc.aio.Server, core: Any, wrapper: Wrapper, shared: dict[str, Any]
) -> None:
    server.add_generic_rpc_handlers((WorkspaceServicer(core, wrapper, shared).generic_handler(),))
