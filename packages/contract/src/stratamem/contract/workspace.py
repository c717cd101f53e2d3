"""``RemoteWorkspace``: the home's workspace memory (``stratamem.v1.WorkspaceMemoryService``) as a client.

Adapters reach the Fusion-style workspace memory (layered files, recall store, recalled context)
through the home's resident service, like every other memory call: same channel, same reconnect,
same typed errors as ``RemoteCore``. Method names and arguments follow the core's
``WorkspaceMemory``, so the host kit's tool dispatcher runs over either. Results are the generated
messages (``plain`` turns one into the JSON the in-process objects give).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from google.protobuf.message import Message

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.v1 import workspace_pb2 as w

if TYPE_CHECKING:
    from stratamem.contract.remote import RemoteCore

T = TypeVar("T")
Root = str | os.PathLike[str]
_SOURCE_KEYS = ("task_id", "agent_id", "session_id", "origin")
_STUB = "_workspace_stub"


def plain(value: Any) -> Any:
    """A generated message as plain JSON-able data, field names as in the proto: unset optional
    fields are ``None``, int64 stays an int (``MessageToDict`` would make it a string)."""
    if isinstance(value, Message):
        out: dict[str, Any] = {}
        for field in value.DESCRIPTOR.fields:
            raw = getattr(value, field.name)
            if field.message_type is not None and field.message_type.GetOptions().map_entry:
                out[field.name] = {k: plain(v) for k, v in raw.items()}
            elif field.is_repeated:
                out[field.name] = [plain(v) for v in raw]
            elif field.has_presence and not value.HasField(field.name):
                out[field.name] = None
            else:
                out[field.name] = plain(raw)
        return out
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _source(source: Mapping[str, Any] | None) -> w.RecallSource | None:
    if source is None:
        return None
    return w.RecallSource(**{k: str(source[k]) for k in _SOURCE_KEYS if source.get(k)})


class RemoteWorkspace:
    """Workspace memory calls on a ``RemoteCore``'s channel for roots kept in ``layout``.

    With ``open_roots`` (a host adapter serving its host's own workspace, on the owner's socket)
    each root is opened with ``OpenRoot`` before its first call, and opened again once if a call is
    refused because the service restarted since (a new service has served nothing yet).
    """

    def __init__(self, core: RemoteCore, layout: str = "", *, open_roots: bool = False) -> None:
        self.core = core
        self.layout = layout
        self.open_roots = open_roots
        self._opened: set[str] = set()

    async def _call(self, method: str, request: Any) -> Any:
        root = getattr(request, "root", "")
        if not self.open_roots or method == "OpenRoot" or not root:
            return await self.core._call(method, request, stub=_STUB)
        if root not in self._opened:
            await self.open_root(root)
        try:
            return await self.core._call(method, request, stub=_STUB)
        except StratamemError as err:
            if err.code != ErrorCode.PERMISSION_DENIED:
                raise
        self._opened.discard(root)
        await self.open_root(root)
        return await self.core._call(method, request, stub=_STUB)

    def _root(self, root: Root) -> w.WorkspaceRootRequest:
        return w.WorkspaceRootRequest(root=os.fspath(root), layout=self.layout)

    # -- roots -------------------------------------------------------------------------------
    async def open_root(self, root: Root) -> w.WorkspaceBackendInfo:
        """Have the service serve ``root`` although it is not configured (the home's owner only)."""
        info: w.WorkspaceBackendInfo = await self._call("OpenRoot", self._root(root))
        self._opened.add(os.fspath(root))
        return info

    async def describe_backend(self, root: Root) -> w.WorkspaceBackendInfo:
        return cast(w.WorkspaceBackendInfo, await self._call("DescribeBackend", self._root(root)))

    async def bootstrap(self, root: Root) -> list[str]:
        return list((await self._call("Bootstrap", self._root(root))).created)

    # -- backend operations ------------------------------------------------------------------
    async def read(self, root: Root) -> w.WorkspaceReadResult:
        return cast(w.WorkspaceReadResult, await self._call("Read", self._root(root)))

    async def write(self, root: Root, content: str) -> w.WorkspaceWriteResult:
        req = w.WorkspaceWriteRequest(root=os.fspath(root), content=content, layout=self.layout)
        return cast(w.WorkspaceWriteResult, await self._call("Write", req))

    async def get(
        self,
        root: Root,
        path: str = "MEMORY.md",
        start_line: int | None = None,
        line_count: int | None = None,
    ) -> w.WorkspaceGetResult:
        req = w.WorkspaceGetRequest(root=os.fspath(root), path=path, layout=self.layout)
        if start_line is not None:
            req.start_line = start_line
        if line_count is not None:
            req.line_count = line_count
        return cast(w.WorkspaceGetResult, await self._call("Get", req))

    async def search(
        self, root: Root, query: str, limit: int | None = None
    ) -> list[w.WorkspaceSearchHit]:
        req = w.WorkspaceSearchRequest(root=os.fspath(root), query=query, layout=self.layout)
        if limit is not None:
            req.limit = limit
        return list((await self._call("Search", req)).hits)

    async def exists(self, root: Root) -> bool:
        return bool((await self._call("Exists", self._root(root))).exists)

    # -- layered files -----------------------------------------------------------------------
    async def list_files(self, root: Root) -> list[w.WorkspaceFileInfo]:
        return list((await self._call("ListFiles", self._root(root))).files)

    async def read_file(self, root: Root, path: str) -> str:
        req = w.WorkspaceFileRequest(root=os.fspath(root), path=path, layout=self.layout)
        return str((await self._call("ReadFile", req)).content)

    async def write_file(self, root: Root, path: str, content: str) -> w.WorkspaceWriteResult:
        req = w.WorkspaceWriteFileRequest(
            root=os.fspath(root), path=path, content=content, layout=self.layout
        )
        return cast(w.WorkspaceWriteResult, await self._call("WriteFile", req))

    # -- recall ------------------------------------------------------------------------------
    async def append_recall(
        self,
        root: Root,
        kind: str,
        content: str,
        *,
        tags: Sequence[str] | None = None,
        source: Mapping[str, Any] | None = None,
        kg_node_ids: Sequence[str] | None = None,
    ) -> w.AppendRecallResponse:
        req = w.AppendRecallRequest(
            root=os.fspath(root),
            kind=kind,
            content=content,
            tags=list(tags or ()),
            kg_node_ids=list(kg_node_ids or ()),
            layout=self.layout,
        )
        src = _source(source)
        if src is not None:
            req.source.CopyFrom(src)
        return cast(w.AppendRecallResponse, await self._call("AppendRecall", req))

    async def search_recall(
        self,
        root: Root,
        query: str = "",
        *,
        kinds: Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        limit: int | None = None,
        vector: bool = False,
    ) -> w.SearchRecallResponse:
        req = w.SearchRecallRequest(
            root=os.fspath(root),
            query=query,
            kinds=list(kinds or ()),
            tags=list(tags or ()),
            vector=vector,
            layout=self.layout,
        )
        if limit is not None:
            req.limit = limit
        return cast(w.SearchRecallResponse, await self._call("SearchRecall", req))

    async def list_recall(
        self, root: Root, kinds: Sequence[str] | None = None, tags: Sequence[str] | None = None
    ) -> list[w.RecallRecord]:
        """Every record of ``kinds`` carrying all ``tags``, newest first (no ranking)."""
        req = w.ListRecallRequest(
            root=os.fspath(root), kinds=list(kinds or ()), tags=list(tags or ()), layout=self.layout
        )
        return list((await self._call("ListRecall", req)).records)

    async def replace_recall(
        self,
        root: Root,
        kind: str,
        match: str,
        content: str,
        *,
        tags: Sequence[str] | None = None,
        source: Mapping[str, Any] | None = None,
        kg_node_ids: Sequence[str] | None = None,
    ) -> w.ReplaceRecallResponse:
        req = w.ReplaceRecallRequest(
            root=os.fspath(root),
            kind=kind,
            match=match,
            content=content,
            tags=list(tags or ()),
            has_tags=tags is not None,
            kg_node_ids=list(kg_node_ids or ()),
            has_kg_node_ids=kg_node_ids is not None,
            layout=self.layout,
        )
        src = _source(source)
        if src is not None:
            req.source.CopyFrom(src)
        return cast(w.ReplaceRecallResponse, await self._call("ReplaceRecall", req))

    async def remove_recall(self, root: Root, kind: str, match: str) -> w.RecallRecord:
        req = w.RemoveRecallRequest(
            root=os.fspath(root), kind=kind, match=match, layout=self.layout
        )
        return cast(w.RecallRecord, await self._call("RemoveRecall", req))

    # -- prompts -----------------------------------------------------------------------------
    async def recalled_context(
        self, root: Root, prompt: str, query: str, limit: int | None = None
    ) -> str:
        """``prompt`` plus the ≤ 800-byte ``### Recalled Context`` section for ``query``."""
        req = w.RecalledContextRequest(
            root=os.fspath(root), prompt=prompt, query=query, layout=self.layout
        )
        if limit is not None:
            req.limit = limit
        return str((await self._call("RecalledContext", req)).text)

    async def instruction_context(self, root: Root) -> w.WorkspaceInstructionContext:
        return cast(
            w.WorkspaceInstructionContext, await self._call("InstructionContext", self._root(root))
        )

    async def build_instructions(self, root: Root, role: str) -> str:
        req = w.BuildInstructionsRequest(root=os.fspath(root), role=role, layout=self.layout)
        return str((await self._call("BuildInstructions", req)).text)


class BlockingWorkspace:
    """``RemoteWorkspace`` for threaded hosts: each method runs on the blocking core's loop."""

    def __init__(self, remote: RemoteWorkspace, run: Callable[[Awaitable[Any]], Any]) -> None:
        self.remote = remote
        self._run = run

    def __getattr__(self, name: str) -> Callable[..., Any]:
        attr = getattr(self.remote, name)
        if name.startswith("_") or not callable(attr):
            raise AttributeError(name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._run(attr(*args, **kwargs))

        return call
