"""Fusion's workspace routes: MEMORY.md through the resolved backend, the layered files, recall records.

Only roots listed in ``workspace.roots`` are served; the layered-file validation of
``stratamem.core.workspace`` decides every path, and a read-only backend answers ``read_only``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.config.settings import Section
from stratamem.core.viewer.http import Request

T = TypeVar("T")
MAX_CONTENT_CHARS = 512 * 1024


class WorkspaceApi:
    def __init__(self, core: Any, shared: dict[str, Any] | None = None) -> None:
        self.core = core
        self.shared = shared if shared is not None else {}

    def roots(self) -> list[str]:
        return [
            str(r) for r in (Section("workspace", self.core.config.get("workspace"))["roots"] or [])
        ]

    @property
    def memory(self) -> Any:
        if self.shared.get("memory") is None:
            from stratamem.core.workspace.service import WorkspaceMemory

            embedder = getattr(self.core, "embedder", None)
            self.shared["memory"] = WorkspaceMemory(
                self.core.home,
                embedder_factory=(lambda: embedder) if embedder is not None else None,
                allowed_roots=self.roots(),
            )
        return self.shared["memory"]

    def close(self) -> None:
        memory = self.shared.pop("memory", None)
        if memory is not None:
            memory.close()

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.to_thread(fn)

    def _root(self, req: Request, body: dict[str, Any] | None = None) -> str:
        root = (body or {}).get("root") or req.query.get("root")
        if root is None:
            roots = self.roots()
            if not roots:
                raise StratamemError(
                    ErrorCode.NOT_FOUND,
                    "no workspace root is configured: add one to workspace.roots in config.yaml",
                    {"key": "workspace.roots"},
                )
            return roots[0]
        if not isinstance(root, str) or not root.strip():
            raise StratamemError(
                ErrorCode.INVALID_ARGUMENT, "root must be a path", {"field": "root"}
            )
        return root

    @staticmethod
    def _content(body: dict[str, Any]) -> str:
        content = body.get("content")
        if not isinstance(content, str):
            raise StratamemError(
                ErrorCode.INVALID_ARGUMENT, "content must be a string", {"field": "content"}
            )
        if len(content) > MAX_CONTENT_CHARS:
            raise StratamemError(
                ErrorCode.INVALID_ARGUMENT,
                f"content is too long (max {MAX_CONTENT_CHARS} characters)",
                {"field": "content"},
            )
        return content

    async def overview(self, req: Request) -> dict[str, Any]:
        roots = self.roots()
        if not roots and req.query.get("root") is None:
            return {"roots": [], "root": None, "memory": None, "files": [], "backend": None}
        root = self._root(req)

        def run() -> dict[str, Any]:
            read = self.memory.read(root)
            backend = self.memory.backend(root)
            files = self.memory.list_files(root)
            return {
                "roots": roots,
                "root": str(self.memory.root(root)),
                "memory": {"content": read.content, "exists": read.exists, "path": read.path},
                "backend": {
                    "type": backend.type,
                    "writable": bool(backend.capabilities.writable),
                },
                "files": [
                    {"path": f.path, "name": f.name, "size": f.size, "kind": f.kind} for f in files
                ],
            }

        return await self._run(run)

    async def put_memory(self, req: Request) -> dict[str, Any]:
        body = req.json_object()
        root, content = self._root(req, body), self._content(body)
        r = await self._run(lambda: self.memory.write(root, content))
        return {"success": r.success, "path": r.path, "bytes_written": r.bytes_written}

    async def get_file(self, req: Request) -> dict[str, Any]:
        root, path = self._root(req), req.query.get("path", "")
        content = await self._run(lambda: self.memory.read_file(root, path))
        return {"path": path, "content": content}

    async def put_file(self, req: Request) -> dict[str, Any]:
        body = req.json_object()
        root, content = self._root(req, body), self._content(body)
        path = body.get("path")
        if not isinstance(path, str):
            raise StratamemError(
                ErrorCode.INVALID_ARGUMENT, "path must be a string", {"field": "path"}
            )
        r = await self._run(lambda: self.memory.write_file(root, path, content))
        return {"success": r.success, "path": r.path, "bytes_written": r.bytes_written}

    async def recall(self, req: Request) -> dict[str, Any]:
        root = self._root(req)
        query = req.query.get("q", "")
        r = await self._run(lambda: self.memory.search_recall(root, query, limit=50))
        return {
            "mode": r.mode,
            "hits": [
                {
                    "id": h.record.id,
                    "kind": h.record.kind,
                    "content": h.record.content,
                    "tags": list(h.record.tags),
                    "created_at": h.record.created_at,
                    "score": h.score,
                }
                for h in r.hits
            ],
        }
