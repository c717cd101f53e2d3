"""``ViewerServer``: the viewer's HTTP + SSE surface on the serve loop, over the same open core.

Dispatch goes through the route table; every failure is a JSON ``{"error": {code, message, details}}``
with a matching status, and a refused request changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.telemetry import get_logger, redact
from stratamem.core.viewer import openapi, static
from stratamem.core.viewer.api import ViewerApi, not_found, to_json
from stratamem.core.viewer.http import (
    DEFAULT_MAX_BODY,
    HttpError,
    HttpServer,
    Request,
    Response,
    StreamResponse,
)
from stratamem.core.viewer.logs import LogHub
from stratamem.core.viewer.metrics import Metrics
from stratamem.core.viewer.routes import ROUTES, Route
from stratamem.core.viewer.security import COOKIE, Guard, check_bind

_log = get_logger("viewer")
HEARTBEAT_S = 15.0
REPLAY = 100


def _sse(event: str, data: Any, event_id: int | None = None) -> bytes:
    text = json.dumps(data, ensure_ascii=False, default=str)
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {text}\n\n".encode()


class ViewerServer:
    """One HTTP listener; ``start(host, port)`` → URL; ``stop()`` closes streams at once."""

    def __init__(
        self,
        core: Any,
        *,
        tokens: Iterable[str] = (),
        max_body: int = DEFAULT_MAX_BODY,
        workspace_shared: dict[str, Any] | None = None,
    ) -> None:
        self.core = core
        self.guard = Guard(tokens)
        self.hub = LogHub()
        self.metrics = Metrics()
        self.api = ViewerApi(core, hub=self.hub, metrics=self.metrics)
        if workspace_shared is not None:
            self.api.workspace.shared = workspace_shared
        self.http = HttpServer(self.handle, max_body=max_body)
        self.url = ""
        self.host = ""
        self.port = 0
        self._routes = [(r, r.regex) for r in ROUTES]

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        check_bind(host, self.guard.tokens)
        self.host, self.port = await self.http.start(host, port)
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        shown = f"[{shown.strip('[]')}]" if ":" in shown else shown
        self.url = f"http://{shown}:{self.port}/"
        self.api.url = self.url
        self.hub.install()
        self.core.bus.add_observer(self.metrics.observe)
        _log.info("viewer.ready", url=self.url, bind=host)
        return self.url

    async def stop(self) -> None:
        self.hub.uninstall()
        observers = getattr(self.core.bus, "_observers", None)
        if isinstance(observers, list) and self.metrics.observe in observers:
            observers.remove(self.metrics.observe)
        await self.http.close()

    # ------------------------------------------------------------------ dispatch
    def _match(self, req: Request) -> tuple[Route | None, bool]:
        path_known = False
        for route, rx in self._routes:
            m = rx.match(req.path)
            if m is None:
                continue
            path_known = True
            if route.method == req.method or (route.method == "GET" and req.method == "HEAD"):
                req.params = m.groupdict()
                return route, True
        return None, path_known

    async def handle(self, req: Request) -> Response | StreamResponse:
        try:
            self.guard.check(req)
            resp = await self._dispatch(req)
            token = req.query.get("token")
            if token and isinstance(resp, Response) and req.principal == "token":
                resp.headers["Set-Cookie"] = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
            return resp
        except StratamemError as err:
            if not isinstance(err, HttpError) and err.code == ErrorCode.INTERNAL:
                _log.error("viewer.internal", path=req.path, error=str(err))
            return Response.error(err)
        except Exception as exc:  # a bug: say so without leaking internals
            _log.exception("viewer.failed", path=req.path, method=req.method)
            return Response.error(
                StratamemError(ErrorCode.INTERNAL, f"internal error: {type(exc).__name__}")
            )

    async def _dispatch(self, req: Request) -> Response | StreamResponse:
        route, path_known = self._match(req)
        if route is None:
            if path_known:
                raise HttpError(
                    405,
                    ErrorCode.UNKNOWN_METHOD,
                    f"{req.method} is not allowed on {req.path}",
                    {"method": req.method, "path": req.path},
                )
            if req.path.startswith("/api/") or req.path == "/api":
                raise not_found(req.path)
            if req.method not in ("GET", "HEAD"):
                raise HttpError(405, ErrorCode.UNKNOWN_METHOD, f"{req.method} is not allowed here")
            return static.serve(req.path)
        for p in route.params:
            if p.required and p.where == "query" and not req.query.get(p.name, "").strip():
                raise StratamemError(
                    ErrorCode.INVALID_ARGUMENT, f"{p.name} is required", {"field": p.name}
                )
        owner, _, name = route.handler.rpartition(".")
        if owner == "server":
            return await getattr(self, name)(req)  # type: ignore[no-any-return]
        target = self.api.workspace if owner == "workspace" else self.api
        data = await getattr(target, name)(req)
        return Response.json(data)

    # ------------------------------------------------------------------ server routes
    async def openapi(self, req: Request) -> Response:
        return Response.json(openapi.document())

    async def events(self, req: Request) -> StreamResponse:
        raw = req.query.get("since") or req.headers.get("last-event-id") or ""
        since: int | None = None
        if raw:
            if not raw.isdigit():
                raise StratamemError(
                    ErrorCode.INVALID_ARGUMENT, "since must be an event seq", {"field": "since"}
                )
            since = int(raw)
        return StreamResponse(self._event_stream(since))

    async def _event_stream(self, since: int | None) -> AsyncIterator[bytes]:
        bus = self.core.bus
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(2048)
        log_queue = self.hub.subscribe()
        if since is None:
            recent = bus.recent()
            since = recent[-1].seq if recent else 0
            replay = recent[-REPLAY:]
        else:
            replay = [e for e in bus.recent(since)][-REPLAY:]
        since = max([since, *(e.seq for e in replay)])

        async def pump_core() -> None:
            try:
                async for event in bus.subscribe(since):
                    await queue.put(("core", event))
            except StratamemError:  # the ring moved on: continue live
                async for event in bus.subscribe(None):
                    await queue.put(("core", event))

        async def pump_logs() -> None:
            while True:
                await queue.put(("log", await log_queue.get()))

        tasks = [asyncio.create_task(pump_core()), asyncio.create_task(pump_logs())]
        closing = asyncio.create_task(self.http.closing.wait())
        try:
            yield b"retry: 2000\n: stratamem viewer events\n\n"
            yield _sse("hello", {"epoch": getattr(bus, "epoch", ""), "seq": since})
            for event in replay:
                yield _sse("core", redact(to_json(event)), event.seq)
            while True:
                getter = asyncio.create_task(queue.get())
                done, _ = await asyncio.wait(
                    {getter, closing}, timeout=HEARTBEAT_S, return_when=asyncio.FIRST_COMPLETED
                )
                if closing in done:
                    getter.cancel()
                    return
                if getter not in done:
                    getter.cancel()
                    yield b": keep-alive\n\n"
                    continue
                kind, item = getter.result()
                if kind == "core":
                    yield _sse("core", redact(to_json(item)), item.seq)
                else:
                    yield _sse("log", item)
        finally:
            self.hub.unsubscribe(log_queue)
            for t in (*tasks, closing):
                t.cancel()
            for t in (*tasks, closing):
                with contextlib.suppress(BaseException):
                    await t
