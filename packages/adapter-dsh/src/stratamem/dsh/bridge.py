"""The DSH ordering in one object: recall on the foreground, routing + capture on background queues.

The gRPC servicer and the tests drive this class; it holds the per-Session-object turn state, the
spool consumer, the serial queues and the session bookkeeping for disposal.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import TurnRoute
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.contract.hostkit.context_block import MAX_CONTEXT_CHARS
from stratamem.contract.hostkit.log import get_logger
from stratamem.contract.hostkit.spool import SpoolRecord
from stratamem.contract.protocol import MemoryCore
from stratamem.dsh.capture import TurnRecord, plan_capture
from stratamem.dsh.namespace import SessionInfo
from stratamem.dsh.queues import Job, SerialQueues
from stratamem.dsh.recall import RecallOutcome, TurnStates, recall
from stratamem.dsh.spool import open_spool
from stratamem.dsh.tools import TOOL_RESULT_MAX_CHARS, call_dsh_tool

_log = get_logger("dsh.bridge")

#: codes that will fail the same way on every replay: the turn is marked failed, not retried
PERMANENT = {ErrorCode.INVALID_ARGUMENT, ErrorCode.CONFLICT, ErrorCode.EPISODE_NOT_FOUND}
DRAIN_TIMEOUT_S = 4.0
POLL_INTERVAL_S = 0.5


@dataclass
class DrainReport:
    drained: bool
    pending: int
    closed_sessions: int


class DshBridge:
    def __init__(self, core: MemoryCore, home: Path, *, poll_interval_s: float = POLL_INTERVAL_S):
        self.core = core
        self.home = Path(home)
        self.spool = open_spool(self.home)
        self.queues = SerialQueues()
        self.states = TurnStates()
        self.poll_interval_s = poll_interval_s
        self.captured = 0
        self.failed = 0
        self._queued: dict[str, SpoolRecord] = {}
        self._episodes: dict[str, str] = {}
        self._sessions: set[str] = set()
        self._closed: set[str] = set()
        self._poller: asyncio.Task[None] | None = None
        self._accepting = True

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> int:
        """Resume the spool (what a crash left queued) and start the safety-net poller."""
        queued = self.poll_spool()
        if self._poller is None and self.poll_interval_s > 0:
            self._poller = asyncio.ensure_future(self._poll_loop())
        if queued:
            _log.info("dsh.spool_resumed", queued=queued)
        return queued

    async def _poll_loop(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval_s)
            try:
                self.poll_spool()
            except Exception as exc:  # keep polling: the next notice or poll retries
                _log.warning("dsh.spool_poll_failed", error=str(exc))

    async def stop(self) -> None:
        self._accepting = False
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None

    async def close(self, timeout_s: float = DRAIN_TIMEOUT_S) -> DrainReport:
        """The service stops (the core stays open, sessions stay open for the next service):
        stop the poller, drain the queues within the bound, cancel and await what is left (its
        turns go back to the spool). No task of the bridge outlives this call."""
        await self.stop()
        report = await self.drain(timeout_s)
        if not report.drained:
            await self.queues.cancel_and_wait()
            self._release_unfinished()
        return report

    # ------------------------------------------------------------------ recall
    async def pre_step(
        self,
        info: SessionInfo,
        *,
        turn: int,
        step: int,
        decision_kind: str,
        messages: Sequence[tuple[str, str]],
        deadline_at: int | None = None,
        recall_timeout_ms: int | None = None,
        context_max_chars: int = MAX_CONTEXT_CHARS,
        recall_enabled: bool = True,
    ) -> RecallOutcome:
        self._sessions.add(info.session_id)
        return await recall(
            self.core,
            self.states,
            info,
            turn=turn,
            step=step,
            decision_kind=decision_kind,
            messages=messages,
            deadline_at=deadline_at,
            recall_timeout_ms=recall_timeout_ms,
            context_max_chars=context_max_chars,
            recall_enabled=recall_enabled,
        )

    # ------------------------------------------------------------------ capture
    def poll_spool(self) -> int:
        """Claim every spooled turn and queue it on its session's lane; returns how many were queued."""
        queued = 0
        for rec in self.spool.claim():
            try:
                record = TurnRecord.from_json(rec.data)
            except (TypeError, ValueError) as exc:
                _log.warning("dsh.spool_bad_record", error=str(exc))
                self.spool.set_aside(rec, "bad_record")
                continue
            if not record.session.session_id:
                self.spool.set_aside(rec, "bad_record")
                continue
            if rec.key in self._queued:
                self.spool.consumed(rec, "duplicate")  # spooled again while the first is queued
                continue
            self._queued[rec.key] = rec
            self.queues.enqueue(record.session.session_id, self._capture_job(record), rec.key)
            queued += 1
        return queued

    def _release_unfinished(self) -> None:
        """Queued turns that will not run now go back to the spool (the next start-up applies them)."""
        for rec in list(self._queued.values()):
            self.spool.release(rec)
        self._queued.clear()

    def _capture_job(self, record: TurnRecord) -> Job:
        return lambda: self._capture(record)

    def _close_job(self, sid: str) -> Job:
        return lambda: self._close(sid)

    async def _capture(self, record: TurnRecord) -> None:
        sid = record.session.session_id
        self._sessions.add(sid)
        plan = plan_capture(record)
        if plan is None:
            self._finish(record.key, "skipped")
            return
        route: TurnRoute | None = None
        try:
            try:
                route = await self.core.prepare_turn(plan.turn_input)
            except StratamemError as exc:
                if exc.code not in PERMANENT:
                    raise
                _log.warning("dsh.route_failed", key=record.key, error=str(exc))
            episode = route.episode_id if route is not None else None
            if episode:
                self._episodes[sid] = episode
            for outcome in plan.outcomes:
                with contextlib.suppress(StratamemError):
                    await self.core.record_tool_outcome(replace(outcome, episode_id=episode))
            await self.core.turn_end(replace(plan.result, episode_id=episode))
        except StratamemError as exc:
            if exc.code in PERMANENT:
                self.failed += 1
                self._finish(record.key, "failed")
                _log.warning("dsh.capture_failed", key=record.key, error=str(exc))
                return
            rec = self._queued.pop(record.key, None)
            if rec is not None:
                self.spool.release(rec)  # back in the spool: a later poll or start-up retries it
            raise
        self._finish(record.key, "captured")
        self.captured += 1

    def _finish(self, key: str, status: str) -> None:
        rec = self._queued.pop(key, None)
        if rec is None:
            return
        if status == "failed":
            self.spool.set_aside(rec, status)  # kept in the spool's dead/ for inspection
        else:
            self.spool.consumed(rec, status)

    # ------------------------------------------------------------------ sessions
    def session_disposed(self, info: SessionInfo) -> None:
        """Returns at once; the session closes after its queued work."""
        self.states.forget_ref(info.ref)
        sid = info.session_id
        if sid not in self._sessions or sid in self._closed:
            return
        self._closed.add(sid)
        self.queues.enqueue(sid, self._close_job(sid), f"close:{sid}")

    async def _close(self, sid: str) -> None:
        self._episodes.pop(sid, None)
        try:
            await self.core.close_session(sid, "dsh_disposed")
        except StratamemError as exc:
            if exc.code != ErrorCode.SESSION_NOT_FOUND:
                raise

    async def flush(self, session_id: str | None = None, timeout_s: float | None = None) -> bool:
        """Test and drain helper: wait for queued work (nothing on the foreground calls this)."""
        self.poll_spool()
        return await self.queues.drain(timeout_s, lane=session_id)

    async def drain(
        self, timeout_s: float = DRAIN_TIMEOUT_S, *, close_sessions: bool = False
    ) -> DrainReport:
        """Drain every queue within ``timeout_s``; optionally close every seen session after it."""
        end = time.monotonic() + max(0.0, timeout_s)
        self.poll_spool()
        closed = 0
        if close_sessions:
            for sid in sorted(self._sessions - self._closed):
                self._closed.add(sid)
                self.queues.enqueue(sid, self._close_job(sid), f"close:{sid}")
                closed += 1
        drained = await self.queues.drain(max(0.0, end - time.monotonic()))
        return DrainReport(drained, self.queues.pending, closed)

    async def dispose(
        self, timeout_s: float = DRAIN_TIMEOUT_S, *, shutdown_core: bool = True
    ) -> DrainReport:
        """Stop intake, drain within the bound, close sessions, then shut the core down."""
        await self.stop()
        report = await self.drain(timeout_s, close_sessions=True)
        if not report.drained:
            await self.queues.cancel_and_wait()
            self._release_unfinished()  # what is left stays in the spool for the next start-up
        if shutdown_core:
            await self.core.shutdown()
        return report

    # ------------------------------------------------------------------ tools
    async def tool(
        self,
        name: str,
        args: dict[str, Any],
        info: SessionInfo,
        *,
        call_id: str = "",
        deadline_at: int | None = None,
        max_chars: int = TOOL_RESULT_MAX_CHARS,
        recall_timeout_ms: int | None = None,
    ) -> dict[str, Any]:
        return await call_dsh_tool(
            self.core,
            name,
            args,
            info,
            call_id=call_id,
            deadline_at=deadline_at,
            max_chars=max_chars,
            recall_timeout_ms=recall_timeout_ms,
            episode_id=self._episodes.get(info.session_id),
        )
