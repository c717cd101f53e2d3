"""``ViewerServer``: the viewer's HTTP + SSE surface, an aiohttp application on the serve loop.

The route table is registered on aiohttp's router; one middleware authorises each request (before its
body is read), reads the bounded body, and turns every failure into a JSON
``{"error": {code, message, details}}`` with a matching status, so a refused request changes nothing.
Under ``stratamem serve`` every authorised request counts as the service's activity (idle exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from aiohttp import web

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.server.auth import Principal
from stratamem.core.server.idle import Activity
from stratamem.core.telemetry import get_logger
from stratamem.core.telemetry.redact import redact
from stratamem.core.viewer import openapi, static
from stratamem.core.viewer.api import ViewerApi, event_filter, not_found, to_json
from stratamem.core.viewer.http import (
    DEFAULT_MAX_BODY,
    IDLE_TIMEOUT_S,
    MAX_HEADERS,
    MAX_LINE_BYTES,
    HttpError,
    Request,
    error_reply,
    from_aiohttp,
    json_reply,
    read_body,
)
from stratamem.core.viewer.logs import LogHub
from stratamem.core.viewer.metrics import Metrics
from stratamem.core.viewer.routes import ROUTES, Route
from stratamem.core.viewer.security import COOKIE, Guard, Tokens, check_bind, refused

_log = get_logger("viewer")
HEARTBEAT_S = 15.0
REPLAY = 100
SHUTDOWN_S = 2.0
VIEW = web.RequestKey("view", Request)
SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}

AioHandler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _sse(event: str, data: Any, event_id: int | None = None) -> bytes:
    text = json.dumps(data, ensure_ascii=False, default=str)
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {text}\n\n".encode()


async def _headers(request: web.Request, response: web.StreamResponse) -> None:
    """Every reply: no sniffing, no referrer, not cached unless the asset says so, no server banner."""
    response.headers.update(SECURITY_HEADERS)
    response.headers.setdefault("Cache-Control", "no-store")
    response.headers["Server"] = "stratamem-viewer"


class ViewerServer:
    """One HTTP listener; ``start(host, port)`` → URL; ``stop()`` closes streams at once."""

    def __init__(
        self,
        core: Any,
        *,
        tokens: Tokens = (),
        max_body: int = DEFAULT_MAX_BODY,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        workspace_shared: dict[str, Any] | None = None,
        activity: Activity | None = None,
    ) -> None:
        self.core = core
        #: the resident service's call counter: an authorised request is activity (no idle exit)
        self.activity = activity
        self.guard = Guard(tokens)
        self.hub = LogHub()
        self.metrics = Metrics()
        self.api = ViewerApi(core, hub=self.hub, metrics=self.metrics)
        if workspace_shared is not None:
            self.api.workspace.shared = workspace_shared
        self.max_body = max_body
        self.idle_timeout_s = (
            idle_timeout_s  # idle or half-sent head (aiohttp), trickled body (ours)
        )
        self.closing = asyncio.Event()
        self.url = ""
        self.host = ""
        self.port = 0
        self._runner: web.AppRunner | None = None

    def app(self) -> web.Application:
        """The aiohttp application: the route table, then the app's files for every other GET."""
        app = web.Application(client_max_size=self.max_body, middlewares=[self._middleware])
        for route in ROUTES:
            handler = self._handler(route)
            if route.method == "GET":
                app.router.add_get(route.path, handler)  # HEAD too
            else:
                app.router.add_route(route.method, route.path, handler)
        app.router.add_get("/{tail:.*}", self._static)
        app.on_response_prepare.append(_headers)
        return app

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        check_bind(host, self.guard.scopes)
        runner = web.AppRunner(
            self.app(),
            access_log=None,
            handle_signals=False,
            shutdown_timeout=SHUTDOWN_S,
            keepalive_timeout=self.idle_timeout_s,
            max_line_size=MAX_LINE_BYTES,
            max_field_size=MAX_LINE_BYTES,
            max_headers=MAX_HEADERS,
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port, reuse_address=True).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        address = runner.addresses[0]
        self.host, self.port = str(address[0]), int(address[1])
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        shown = f"[{shown.strip('[]')}]" if ":" in shown else shown
        self.url = f"http://{shown}:{self.port}/"
        self.api.url = self.url
        self.hub.install()
        self.core.bus.add_observer(self.metrics.observe)
        _log.info("viewer.ready", url=self.url, bind=host)
        return self.url

    async def stop(self) -> None:
        self.closing.set()
        self.hub.uninstall()
        observers = getattr(self.core.bus, "_observers", None)
        if isinstance(observers, list) and self.metrics.observe in observers:
            observers.remove(self.metrics.observe)
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    # ------------------------------------------------------------------ dispatch
    @web.middleware
    async def _middleware(self, request: web.Request, handler: AioHandler) -> web.StreamResponse:
        req = Request.of(request)
        try:
            self.guard.check(req)  # before the body is read: a refused caller uploads nothing
            if self.activity is not None:
                self.activity.begin()
            try:
                req.body = await read_body(request, self.max_body, self.idle_timeout_s)
                request[VIEW] = req
                resp = await handler(request)  # an SSE stream returns when it closes
            finally:
                if self.activity is not None:
                    self.activity.end()
            token = req.query.get("token")
            if token and req.principal == "token" and not resp.prepared:
                resp.headers["Set-Cookie"] = f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"
            return resp
        except web.HTTPException as exc:  # the router's 404/405, aiohttp's 413
            return error_reply(from_aiohttp(exc, request))
        except StratamemError as err:
            if not isinstance(err, HttpError) and err.code == ErrorCode.INTERNAL:
                _log.error("viewer.internal", path=req.path, error=str(err))
            reply = error_reply(err)
            if reply.status == 408:
                reply.force_close()  # the rest of that body is not a next request
            return reply
        except Exception as exc:  # a bug: say so without leaking internals
            _log.exception("viewer.failed", path=req.path, method=req.method)
            return error_reply(
                StratamemError(ErrorCode.INTERNAL, f"internal error: {type(exc).__name__}")
            )

    def _handler(self, route: Route) -> AioHandler:
        owner, _, name = route.handler.rpartition(".")
        required = [p.name for p in route.params if p.required and p.where == "query"]

        async def handle(request: web.Request) -> web.StreamResponse:
            req = request[VIEW]
            if route.owner_only and not req.access.unrestricted:
                err = HttpError(
                    403,
                    ErrorCode.PERMISSION_DENIED,
                    f"{route.path} is the home owner's; this token is scoped to some namespaces",
                    {"namespaces": list(req.access.namespaces)},
                )
                refused(req, err)
                raise err
            req.params = dict(request.match_info)
            for field in required:
                if not req.query.get(field, "").strip():
                    raise StratamemError(
                        ErrorCode.INVALID_ARGUMENT, f"{field} is required", {"field": field}
                    )
            if owner == "server":
                return await getattr(self, name)(req, request)  # type: ignore[no-any-return]
            target = self.api.workspace if owner == "workspace" else self.api
            return json_reply(await getattr(target, name)(req))

        return handle

    async def _static(self, request: web.Request) -> web.StreamResponse:
        path = request[VIEW].path
        if path.startswith("/api/") or path == "/api":
            raise not_found(path)
        return static.serve(path)

    # ------------------------------------------------------------------ server routes
    async def openapi(self, req: Request, request: web.Request) -> web.Response:
        return json_reply(openapi.document())

    async def events(self, req: Request, request: web.Request) -> web.StreamResponse:
        raw = req.query.get("since") or req.headers.get("last-event-id") or ""
        since: int | None = None
        if raw:
            if not raw.isdigit():
                raise StratamemError(
                    ErrorCode.INVALID_ARGUMENT, "since must be an event seq", {"field": "since"}
                )
            since = int(raw)
        resp = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream; charset=utf-8",
                "X-Accel-Buffering": "no",
            }
        )
        await resp.prepare(request)
        chunks = self._event_stream(since, req.access)
        try:
            async for chunk in chunks:
                await resp.write(chunk)
        except ConnectionError:
            pass  # the client went away: nothing to say to it
        finally:
            await chunks.aclose()
        return resp

    async def _event_stream(self, since: int | None, access: Principal) -> AsyncGenerator[bytes]:
        """Core events (a scoped token: its namespaces' only) and, for the owner, log lines."""
        bus = self.core.bus
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue(2048)
        log_queue = self.hub.subscribe()
        shows = event_filter(access)
        recent = [e for e in bus.recent() if shows(e)]
        newest = recent[-1].seq if recent else 0
        if since is None:
            since = newest
            replay = recent[-REPLAY:]
        else:
            # a seq past the newest is from an earlier epoch (serve restarted): all of this one is new
            since = 0 if since > newest else since
            replay = [e for e in bus.recent(since) if shows(e)][-REPLAY:]
        since = max([since, *(e.seq for e in replay)])

        async def pump_core() -> None:
            try:
                async for event in bus.subscribe(since, accepts=shows):
                    await queue.put(("core", event))
            except StratamemError:  # the ring moved on: continue live
                async for event in bus.subscribe(None, accepts=shows):
                    await queue.put(("core", event))

        async def pump_logs() -> None:
            while True:
                await queue.put(("log", await log_queue.get()))

        tasks = [asyncio.create_task(pump_core())]
        if access.unrestricted:  # log lines are the home's, not a namespace's
            tasks.append(asyncio.create_task(pump_logs()))
        closing = asyncio.create_task(self.closing.wait())
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
