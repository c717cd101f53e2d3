"""The ``stratamem.openclaw.v1.OpenClawHost`` gRPC service: decodes the JS plugin's calls and runs
them through :class:`OpenClawHost`. Added to ``stratamem serve`` through ``register_host_services``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.log import get_logger
from stratamem.contract.protocol import MemoryCore
from stratamem.hosts.openclaw.v1 import openclaw_pb2 as pb
from stratamem.hosts.openclaw.v1 import openclaw_pb2_grpc as pb_grpc
from stratamem.openclaw import tools
from stratamem.openclaw.host import HookCtx, OpenClawHost
from stratamem.openclaw.workspace import OpenClawWorkspace, answer_text, tool_definitions

log = get_logger("openclaw.service")


def hook_ctx(msg: pb.HookContext) -> HookCtx:
    return HookCtx(
        run_id=msg.run_id,
        agent_id=msg.agent_id or "main",
        session_key=msg.session_key,
        session_id=msg.session_id,
        workspace_dir=msg.workspace_dir,
    )


def _messages(raw: str) -> list[Any]:
    if not raw:
        return []
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, "messages_json is not JSON") from exc
    if not isinstance(value, list):
        raise StratamemError(ErrorCode.INVALID_ARGUMENT, "messages_json must be a JSON array")
    return value


class OpenClawService:
    """Handlers of every RPC (the service's idle exit counts them through the server's interceptor)."""

    def __init__(
        self,
        core: MemoryCore,
        host: OpenClawHost | None = None,
        workspace: OpenClawWorkspace | None = None,
    ) -> None:
        self.core = core
        self.workspace = workspace
        self.host = host or OpenClawHost(core, workspace=workspace)
        self.last_call = time.monotonic()

    def _touch(self) -> None:
        self.last_call = time.monotonic()

    async def MessageReceived(self, req: pb.MessageReceivedRequest, call: Any) -> pb.Ack:
        self._touch()
        self.host.message_received(hook_ctx(req.ctx), req.content)
        return pb.Ack()

    async def BeforePromptBuild(
        self, req: pb.BeforePromptBuildRequest, call: Any
    ) -> pb.BeforePromptBuildResponse:
        self._touch()
        r = await self.host.before_prompt_build(
            hook_ctx(req.ctx), req.prompt, _messages(req.messages_json)
        )
        return pb.BeforePromptBuildResponse(
            prepend_context=r.prepend_context,
            skip_reason=r.skip_reason,
            session_id=r.session_id,
            episode_id=r.episode_id,
        )

    async def AgentEnd(self, req: pb.AgentEndRequest, call: Any) -> pb.AgentEndResponse:
        self._touch()
        r = await self.host.agent_end(
            hook_ctx(req.ctx), _messages(req.messages_json), req.success, req.error
        )
        return pb.AgentEndResponse(
            captured=r.captured,
            trace_id=r.trace_id,
            episode_id=r.episode_id,
            skip_reason=r.skip_reason,
        )

    async def BeforeToolCall(self, req: pb.ToolCallEvent, call: Any) -> pb.ToolCallAck:
        self._touch()
        return pb.ToolCallAck(
            consecutive_failures=self.host.failure_streak(req.ctx.run_id, req.tool_name)
        )

    async def AfterToolCall(self, req: pb.ToolCallEvent, call: Any) -> pb.ToolCallAck:
        self._touch()
        n = await self.host.after_tool_call(
            hook_ctx(req.ctx), req.tool_name, req.tool_call_id, req.error, req.duration_ms
        )
        return pb.ToolCallAck(consecutive_failures=n)

    async def SessionStart(self, req: pb.SessionEvent, call: Any) -> pb.Ack:
        self._touch()
        await self.host.session_start(hook_ctx(req.ctx))
        return pb.Ack()

    async def SessionEnd(self, req: pb.SessionEvent, call: Any) -> pb.SessionEndResponse:
        self._touch()
        closed, deferred = await self.host.session_end(hook_ctx(req.ctx), req.reason)
        return pb.SessionEndResponse(closed=closed, deferred=deferred)

    async def SubagentSpawned(self, req: pb.SubagentSpawnedRequest, call: Any) -> pb.Ack:
        self._touch()
        self.host.subagent_spawned(
            hook_ctx(req.ctx), req.child_session_key, req.label, req.child_agent_id
        )
        return pb.Ack()

    async def SubagentEnded(self, req: pb.SubagentEndedRequest, call: Any) -> pb.Ack:
        self._touch()
        await self.host.subagent_ended(
            hook_ctx(req.ctx), req.target_session_key, req.outcome, req.error
        )
        return pb.Ack()

    async def MemosSearch(self, req: pb.SearchRequest, call: Any) -> pb.ToolResponse:
        self._touch()
        return await tools.answer(self.core, "memos_search", req)

    async def MemosGet(self, req: pb.GetRequest, call: Any) -> pb.ToolResponse:
        self._touch()
        return await tools.answer(self.core, "memos_get", req)

    async def MemosTimeline(self, req: pb.TimelineRequest, call: Any) -> pb.ToolResponse:
        self._touch()
        return await tools.answer(self.core, "memos_timeline", req)

    async def MemosEnvironment(self, req: pb.EnvironmentRequest, call: Any) -> pb.ToolResponse:
        self._touch()
        return await tools.answer(self.core, "memos_environment", req)

    async def MemosSkillList(self, req: pb.SkillListRequest, call: Any) -> pb.ToolResponse:
        self._touch()
        return await tools.answer(self.core, "memos_skill_list", req)

    async def MemosSkillGet(self, req: pb.SkillGetRequest, call: Any) -> pb.ToolResponse:
        self._touch()
        return await tools.answer(self.core, "memos_skill_get", req)

    async def WorkspaceTool(self, req: pb.WorkspaceToolRequest, call: Any) -> pb.ToolResponse:
        self._touch()
        if self.workspace is None:
            raise StratamemError(ErrorCode.UNSUPPORTED, "workspace memory is not available")
        try:
            arguments = json.loads(req.arguments_json or "{}")
        except ValueError as exc:
            raise StratamemError(ErrorCode.INVALID_ARGUMENT, "arguments_json is not JSON") from exc
        result = await self.workspace.tool(req.ctx.workspace_dir, req.name, arguments)
        return pb.ToolResponse(
            text=answer_text(result),
            details_json=json.dumps(result, default=str, ensure_ascii=False),
        )

    async def Ping(self, req: pb.Ack, call: Any) -> pb.Ack:
        self._touch()
        return pb.Ack()

    async def ListWorkspaceTools(
        self, req: pb.WorkspaceToolListRequest, call: Any
    ) -> pb.WorkspaceToolListResponse:
        return pb.WorkspaceToolListResponse(tools_json=json.dumps(tool_definitions()))


METHODS: tuple[str, ...] = (
    "MessageReceived",
    "BeforePromptBuild",
    "AgentEnd",
    "BeforeToolCall",
    "AfterToolCall",
    "SessionStart",
    "SessionEnd",
    "SubagentSpawned",
    "SubagentEnded",
    "MemosSearch",
    "MemosGet",
    "MemosTimeline",
    "MemosEnvironment",
    "MemosSkillList",
    "MemosSkillGet",
    "WorkspaceTool",
    "ListWorkspaceTools",
    "Ping",
)


class _Bound:
    """An object with one attribute per RPC, as the generated ``add_…_to_server`` expects."""

    def __init__(self, handlers: dict[str, Callable[..., Awaitable[Any]]]) -> None:
        for name, fn in handlers.items():
            setattr(self, name, fn)


def add_to_server(server: Any, core: MemoryCore, context: Any) -> OpenClawService:
    """The ``register_host_services`` callback: wraps every handler with the server's Wrapper."""
    home = getattr(core, "home", None) or getattr(context, "home", None)
    workspace = OpenClawWorkspace(Path(home)) if home else None
    service = OpenClawService(core, workspace=workspace)
    wrapper = getattr(context, "wrapper", None)
    handlers: dict[str, Callable[..., Awaitable[Any]]] = {}
    for name in METHODS:
        fn = getattr(service, name)
        if wrapper is not None:
            handlers[name] = wrapper.unary(f"stratamem.openclaw.v1.OpenClawHost/{name}", fn)
        else:
            handlers[name] = _plain(fn)
    pb_grpc.add_OpenClawHostServicer_to_server(_Bound(handlers), server)
    return service


def _plain(fn: Callable[[Any, Any], Awaitable[Any]]) -> Callable[[Any, Any], Awaitable[Any]]:
    async def handler(request: Any, context: Any) -> Any:
        try:
            return await fn(request, context)
        except StratamemError as exc:
            import grpc

            code = (
                grpc.StatusCode.INVALID_ARGUMENT
                if exc.code == ErrorCode.INVALID_ARGUMENT
                else grpc.StatusCode.INTERNAL
            )
            await context.abort(code, f"{exc.code.value}: {exc}")

    return handler
