"""The ``stratamem.dsh.v1.DshHost`` gRPC service, added to ``stratamem serve`` through the plugin hook.

One bridge per core (the owner socket and an optional TCP server share it); start-up resumes the
spool. With ``STRATAMEM_DSH_PARENT_PID`` set (a server the plugin started), it exits with DSH.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import grpc

from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.log import get_logger
from stratamem.dsh.bridge import DRAIN_TIMEOUT_S, DshBridge
from stratamem.dsh.namespace import SessionInfo
from stratamem.hosts.dsh.v1 import dsh_pb2 as pb

_log = get_logger("dsh.service")

SERVICE_NAME = "stratamem.dsh.v1.DshHost"
PARENT_PID_ENV = "STRATAMEM_DSH_PARENT_PID"
_BRIDGES: dict[int, tuple[Any, DshBridge]] = {}


def info_of(ref: pb.SessionRef) -> SessionInfo:
    if not ref.session_id:
        raise StratamemError(
            ErrorCode.INVALID_ARGUMENT, "session.session_id is required", {"field": "session"}
        )
    return SessionInfo(
        ref=ref.ref or ref.session_id,
        session_id=ref.session_id,
        agent_preset=ref.agent_preset,
        cwd=ref.cwd,
        profile_id=ref.profile_id or "default",
    )


def bridge_for(core: Any, home: Path) -> DshBridge:
    """The one bridge of ``core`` (created and resumed on first use)."""
    entry = _BRIDGES.get(id(core))
    if entry is not None and entry[0] is core:
        return entry[1]
    bridge = DshBridge(core, home)
    _BRIDGES[id(core)] = (core, bridge)
    bridge.start()
    return bridge


class DshServicer:
    def __init__(self, bridge: DshBridge) -> None:
        self.bridge = bridge

    async def pre_step(self, req: pb.PreStepRequest, call: Any) -> pb.PreStepResponse:
        info = info_of(req.session)
        out = await self.bridge.pre_step(
            info,
            turn=req.turn,
            step=req.step,
            decision_kind=req.decision_kind,
            messages=[(m.source_kind, m.text) for m in req.messages],
            deadline_at=call.deadline_at(req.deadline_at or None),
            recall_timeout_ms=req.recall_timeout_ms or None,
            context_max_chars=req.context_max_chars or 6000,
            recall_enabled=req.recall_enabled,
        )
        return pb.PreStepResponse(
            inject=out.inject,
            context=out.context,
            skip_reason=out.skip_reason,
            hit_count=out.hit_count,
            cut_off=out.cut_off,
            latency_ms=out.latency_ms,
        )

    async def notify_spool(self, req: pb.SpoolNotice, call: Any) -> pb.SpoolAck:
        return pb.SpoolAck(queued=self.bridge.poll_spool())

    async def session_disposed(self, req: pb.SessionDisposedRequest, call: Any) -> pb.Ack:
        self.bridge.poll_spool()  # its last turns are queued before the close
        self.bridge.session_disposed(info_of(req.session))
        return pb.Ack()

    async def tool(self, req: pb.ToolRequest, call: Any) -> pb.ToolResponse:
        try:
            args = json.loads(req.args_json or "{}")
        except ValueError as exc:
            raise StratamemError(
                ErrorCode.INVALID_ARGUMENT, "args_json is not JSON", {"field": "args_json"}
            ) from exc
        result = await self.bridge.tool(
            req.name,
            args,
            info_of(req.session),
            call_id=req.call_id,
            deadline_at=call.deadline_at(req.deadline_at or None),
            max_chars=req.tool_result_max_chars or 1200,
        )
        return pb.ToolResponse(result_json=json.dumps(result, ensure_ascii=False))

    async def drain(self, req: pb.DrainRequest, call: Any) -> pb.DrainResponse:
        timeout = req.timeout_ms / 1000 if req.timeout_ms > 0 else DRAIN_TIMEOUT_S
        report = await self.bridge.drain(timeout, close_sessions=req.close_sessions)
        return pb.DrainResponse(
            drained=report.drained, pending=report.pending, closed_sessions=report.closed_sessions
        )

    async def status(self, req: pb.StatusRequest, call: Any) -> pb.StatusResponse:
        self.bridge.poll_spool()
        return pb.StatusResponse(
            pending=self.bridge.queues.pending,
            captured=self.bridge.captured,
            spool_path=str(self.bridge.spool.dir),
            failed=self.bridge.failed,
        )


_METHODS = (
    ("PreStep", "pre_step", pb.PreStepRequest, pb.PreStepResponse),
    ("NotifySpool", "notify_spool", pb.SpoolNotice, pb.SpoolAck),
    ("SessionDisposed", "session_disposed", pb.SessionDisposedRequest, pb.Ack),
    ("Tool", "tool", pb.ToolRequest, pb.ToolResponse),
    ("Drain", "drain", pb.DrainRequest, pb.DrainResponse),
    ("Status", "status", pb.StatusRequest, pb.StatusResponse),
)


def add_to_server(server: Any, core: Any, context: Any) -> None:
    """``register_host_services`` entry: add ``DshHost`` to a ``grpc.aio`` server."""
    bridge = bridge_for(core, Path(context.home))
    servicer = DshServicer(bridge)
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            context.wrapper.unary(f"/{SERVICE_NAME}/{name}", getattr(servicer, attr)),
            request_deserializer=req.FromString,
            response_serializer=resp.SerializeToString,
        )
        for name, attr, req, resp in _METHODS
    }
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE_NAME, handlers),))
    _watch_parent()
    stop = _Stop(core)
    if stop not in context.on_stop:  # the owner socket and the TCP server share one
        context.on_stop.append(stop)


class _Stop:
    """``ServiceContext.on_stop`` callback of one core's bridge (equal per core: added once)."""

    def __init__(self, core: Any) -> None:
        self.core = core

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Stop) and other.core is self.core

    def __hash__(self) -> int:
        return id(self.core)

    async def __call__(self) -> None:
        await stop_bridge(self.core)


async def stop_bridge(core: Any) -> None:
    """The service of ``core`` stops: its bridge stops the poller and the queues (awaited, so no
    task is left pending when the loop closes), unfinished turns go back to the spool; the parent
    watch ends with the last bridge."""
    entry = _BRIDGES.get(id(core))
    if entry is not None and entry[0] is core:
        del _BRIDGES[id(core)]
        await entry[1].close()
    while not _BRIDGES and _watching:
        task = _watching.pop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


_watching: list[asyncio.Task[None]] = []


def _watch_parent() -> None:
    """A server started by the plugin lives and dies with DSH: SIGTERM ourselves once it is gone."""
    raw = os.environ.get(PARENT_PID_ENV, "")
    if not raw.isdigit() or _watching:
        return
    parent = int(raw)

    async def watch() -> None:
        while True:
            await asyncio.sleep(1.0)
            if os.getppid() != parent:
                _log.info("dsh.parent_gone", parent=parent)
                os.kill(os.getpid(), signal.SIGTERM)
                return

    _watching.append(asyncio.ensure_future(watch()))
