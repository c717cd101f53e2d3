"""OpenClaw's turn ordering over any ``MemoryCore``: composite turn start, durable capture, tool
streaks, sub-agents. The gRPC servicer and the tests both drive this class; it never raises into
the host (fail-open): every hook logs the error and answers "nothing".
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from stratamem.contract.dtos import (
    Namespace,
    RetrievalQuery,
    SubagentOutcome,
    ToolOutcome,
    TurnInput,
    TurnResult,
)
from stratamem.contract.hostkit.context_block import render_context_block
from stratamem.contract.hostkit.log import get_logger
from stratamem.contract.protocol import MemoryCore
from stratamem.openclaw.envelope import strip_envelope
from stratamem.openclaw.identity import AGENT_KIND, namespace_for, session_id_for
from stratamem.openclaw.skips import is_explicit_one_shot, is_temp_session, skip_reason
from stratamem.openclaw.transcript import (
    ObservedTool,
    TranscriptCursor,
    earliest_ts,
    extract_turn,
    merge_observed,
    visible_user_texts,
)
from stratamem.openclaw.workspace import OpenClawWorkspace

log = get_logger("openclaw.host")

#: the shared deadline of the composite turn start (inside the host's 15 s hook budget)
TURN_START_BUDGET_MS = 4500
FAILURE_STREAK_FOR_HINT = 3
SPAWN_TOOLS = frozenset({"sessions_spawn", "subagents_spawn", "spawn_subagent"})
_INBOUND_TTL_MS = 2 * 3600 * 1000
_INBOUND_MAX = 1024


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True, slots=True)
class HookCtx:
    """The parts of OpenClaw's hook context the ordering needs."""

    run_id: str = ""
    agent_id: str = "main"
    session_key: str = ""
    session_id: str = ""
    workspace_dir: str = ""


@dataclass(frozen=True, slots=True)
class PromptBuildResult:
    prepend_context: str = ""
    skip_reason: str = ""
    session_id: str = ""
    episode_id: str = ""


@dataclass(frozen=True, slots=True)
class AgentEndResult:
    captured: bool = False
    trace_id: str = ""
    episode_id: str = ""
    skip_reason: str = ""


@dataclass
class _Child:
    parent_session_id: str
    parent_episode_id: str | None
    parent_namespace: Namespace
    task: str
    first_turn_done: bool = False


@dataclass
class _SessionState:
    open_children: set[str] = field(default_factory=set)
    deferred_end: str | None = None


class OpenClawHost:
    """Per-process adapter state keyed by OpenClaw's run ids and session keys."""

    def __init__(
        self,
        core: MemoryCore,
        turn_start_budget_ms: int = TURN_START_BUDGET_MS,
        workspace: OpenClawWorkspace | None = None,
    ) -> None:
        self.core = core
        self.workspace = workspace
        self.budget_ms = turn_start_budget_ms
        self.cursor = TranscriptCursor()
        self._inbound: OrderedDict[str, tuple[str, int]] = OrderedDict()
        self._bindings: dict[tuple[str, str], str] = {}
        self._observed: dict[str, dict[str, ObservedTool]] = {}
        self._streaks: dict[tuple[str, str], int] = {}
        self._children: dict[str, _Child] = {}
        self._sessions: dict[str, _SessionState] = {}
        self._opened: set[str] = set()

    # ------------------------------------------------------------------ helpers
    def _ids(self, ctx: HookCtx) -> tuple[str, Namespace]:
        return (
            session_id_for(ctx.agent_id, ctx.session_key),
            namespace_for(ctx.agent_id, ctx.workspace_dir, ctx.session_key),
        )

    async def _open_session(self, sid: str, ns: Namespace, ctx: HookCtx) -> None:
        if sid in self._opened:
            return
        await self.core.open_session(
            AGENT_KIND,
            session_id=sid,
            namespace=ns,
            meta={"openclawSessionId": ctx.session_id, "sessionKey": ctx.session_key},
        )
        self._opened.add(sid)

    def _inbound_text(self, run_id: str) -> str | None:
        entry = self._inbound.get(run_id)
        if entry is None:
            return None
        if now_ms() - entry[1] > _INBOUND_TTL_MS:
            self._inbound.pop(run_id, None)
            return None
        return entry[0]

    # ------------------------------------------------------------------ hooks
    def message_received(self, ctx: HookCtx, content: str) -> None:
        """Remember the clean inbound text by run id (prompt build and agent end prefer it)."""
        if not ctx.run_id:
            return
        text = strip_envelope(content)
        if not text:
            return
        self._inbound[ctx.run_id] = (text, now_ms())
        self._inbound.move_to_end(ctx.run_id)
        while len(self._inbound) > _INBOUND_MAX:
            self._inbound.popitem(last=False)

    async def before_prompt_build(
        self, ctx: HookCtx, prompt: str, messages: Sequence[Any]
    ) -> PromptBuildResult:
        """Composite turn start: session → route/episode → intent → retrieval → the block."""
        try:
            return await self._before_prompt_build(ctx, prompt, messages)
        except Exception as exc:  # fail-open: the host must get its turn
            log.warning("before_prompt_build_failed", error=str(exc), run_id=ctx.run_id)
            return PromptBuildResult(skip_reason="error")

    async def _before_prompt_build(
        self, ctx: HookCtx, prompt: str, messages: Sequence[Any]
    ) -> PromptBuildResult:
        if is_temp_session(ctx.session_key):
            return PromptBuildResult(skip_reason="temp_session")
        text = self._inbound_text(ctx.run_id) or strip_envelope(prompt)
        reason = skip_reason(ctx.session_key, text)
        if reason:
            return PromptBuildResult(skip_reason=reason)
        sid, ns = self._ids(ctx)
        start = now_ms()
        await self._open_session(sid, ns, ctx)
        self._clear_streaks(ctx.run_id)
        hints: dict[str, Any] = {
            "agentId": ctx.agent_id,
            "sessionKey": ctx.session_key,
            "sessionId": ctx.session_id,
            "runId": ctx.run_id,
            "workspaceDir": ctx.workspace_dir,
            "visibleContextKnown": True,
            "visibleContextUserTexts": visible_user_texts(messages),
        }
        first_ts = earliest_ts(messages)
        if first_ts is not None:
            hints["visibleContextStartTs"] = first_ts
        child = self._children.get(ctx.session_key)
        if child is not None:
            hints["parentSessionId"] = child.parent_session_id
        deadline = start + self.budget_ms
        result = await self.core.turn_start(
            TurnInput(
                agent=AGENT_KIND,
                session_id=sid,
                user_text=text,
                ts=start,
                namespace=ns,
                turn_key=ctx.run_id or None,
                context_hints=hints,
                deadline_at=deadline,
            )
        )
        routed_sid = result.query.session_id or sid
        episode = result.query.episode_id or ""
        if episode:
            self._bindings[(routed_sid, ctx.run_id)] = episode
            self._bindings[(routed_sid, "text:" + text)] = episode
        injected = result.injected_context
        if child is not None and not child.first_turn_done:
            child.first_turn_done = True
            if not injected.strip() and now_ms() < deadline:
                sub = await self.core.search(
                    RetrievalQuery(
                        agent=AGENT_KIND,
                        query=f"{child.task}\n{text}".strip(),
                        namespace=child.parent_namespace,
                        reason="sub_agent",
                        deadline_at=deadline,
                    )
                )
                injected = sub.injected_context
        block = render_context_block(injected)
        if self.workspace is not None:
            section = await self.workspace.recalled_section(
                ctx.workspace_dir, text, (deadline - now_ms()) / 1000
            )
            if section.strip():
                block = f"{block}\n{section.strip()}" if block else section.strip()
        return PromptBuildResult(
            prepend_context=block + "\n\n" if block else "",
            skip_reason="" if block else "no_hits",
            session_id=routed_sid,
            episode_id=episode,
        )

    async def agent_end(
        self, ctx: HookCtx, messages: Sequence[Any], success: bool = True, error: str = ""
    ) -> AgentEndResult:
        """Capture the turn; returns once it is durable in the core's journal."""
        try:
            return await self._agent_end(ctx, messages, success, error)
        except Exception as exc:
            log.warning("agent_end_failed", error=str(exc), run_id=ctx.run_id)
            return AgentEndResult(skip_reason="error")
        finally:
            self._inbound.pop(ctx.run_id, None)
            self._observed.pop(ctx.run_id, None)
            self._clear_streaks(ctx.run_id)

    async def _agent_end(
        self, ctx: HookCtx, messages: Sequence[Any], success: bool, error: str
    ) -> AgentEndResult:
        if is_temp_session(ctx.session_key):
            return AgentEndResult(skip_reason="temp_session")
        sid, ns = self._ids(ctx)
        new = self.cursor.new_messages(sid, messages)
        turn = extract_turn(new)
        self.cursor.advance(sid, messages)
        if turn is None:
            return AgentEndResult(skip_reason="no_user_message")
        user_text = self._inbound_text(ctx.run_id) or turn.user_text
        reason = skip_reason(ctx.session_key, user_text)
        if reason:
            return AgentEndResult(skip_reason=reason)
        calls = merge_observed(turn.tool_calls, self._observed.get(ctx.run_id, {}))
        episode = self._bindings.get((sid, ctx.run_id)) or self._bindings.get(
            (sid, "text:" + user_text)
        )
        if episode is None:  # prompt build was skipped (or failed): open the episode lazily
            await self._open_session(sid, ns, ctx)
            episode = await self.core.open_episode(sid, user_message=user_text)
        agent_text = turn.agent_text or (f"(run failed: {error})" if not success and error else "")
        ack = await self.core.turn_end(
            TurnResult(
                agent=AGENT_KIND,
                session_id=sid,
                agent_text=agent_text,
                ts=now_ms(),
                episode_id=episode,
                namespace=ns,
                tool_calls=calls,
                agent_thinking=turn.agent_thinking,
                context_hints={
                    "runId": ctx.run_id,
                    "success": success,
                    "sessionKey": ctx.session_key,
                },
                turn_key=ctx.run_id or None,
                user_text=user_text,
            )
        )
        spawned = any(c.name in SPAWN_TOOLS for c in calls)
        if not spawned:
            self._bindings = {k: v for k, v in self._bindings.items() if k[0] != sid}
        if is_explicit_one_shot(ctx.session_key):
            await self._close(sid, "explicit_one_shot")
        return AgentEndResult(captured=True, trace_id=ack.trace_id, episode_id=ack.episode_id)

    # ------------------------------------------------------------------ tools
    def _clear_streaks(self, run_id: str) -> None:
        for key in [k for k in self._streaks if k[0] == run_id]:
            del self._streaks[key]

    def failure_streak(self, run_id: str, tool: str) -> int:
        return self._streaks.get((run_id, tool), 0)

    async def after_tool_call(
        self,
        ctx: HookCtx,
        tool_name: str,
        tool_call_id: str,
        error: str = "",
        duration_ms: float = 0.0,
    ) -> int:
        """Record the outcome (decision repair) and return the tool's consecutive failure count."""
        key = (ctx.run_id, tool_name)
        self._streaks[key] = self._streaks.get(key, 0) + 1 if error else 0
        ended = now_ms()
        if tool_call_id:
            self._observed.setdefault(ctx.run_id, {})[tool_call_id] = ObservedTool(
                tool_name, tool_call_id, error or None, duration_ms, ended
            )
        if not is_temp_session(ctx.session_key):
            sid, _ = self._ids(ctx)
            try:
                await self.core.record_tool_outcome(
                    ToolOutcome(
                        session_id=sid,
                        tool=tool_name,
                        success=not error,
                        duration_ms=duration_ms,
                        ts=ended,
                        episode_id=self._bindings.get((sid, ctx.run_id)),
                        error_code="tool_error" if error else None,
                    )
                )
            except Exception as exc:
                log.warning("record_tool_outcome_failed", error=str(exc))
        return self._streaks[key]

    # ------------------------------------------------------------------ sessions
    async def session_start(self, ctx: HookCtx) -> None:
        if is_temp_session(ctx.session_key):
            return
        sid, ns = self._ids(ctx)
        try:
            await self._open_session(sid, ns, ctx)
        except Exception as exc:
            log.warning("session_start_failed", error=str(exc))

    async def session_end(self, ctx: HookCtx, reason: str = "") -> tuple[bool, bool]:
        """Close the session, or defer while a child sub-agent runs. Returns (closed, deferred)."""
        if is_temp_session(ctx.session_key):
            return False, False
        sid, _ = self._ids(ctx)
        state = self._sessions.setdefault(sid, _SessionState())
        if state.open_children:
            state.deferred_end = reason or "unknown"
            return False, True
        return await self._close(sid, reason or "unknown"), False

    async def _close(self, sid: str, reason: str) -> bool:
        try:
            await self.core.close_session(sid, reason=reason)
        except Exception as exc:
            log.warning("close_session_failed", error=str(exc), session=sid)
            return False
        self._opened.discard(sid)
        self._sessions.pop(sid, None)
        self.cursor.forget(sid)
        self._bindings = {k: v for k, v in self._bindings.items() if k[0] != sid}
        return True

    # ------------------------------------------------------------------ sub-agents
    def subagent_spawned(
        self, ctx: HookCtx, child_session_key: str, label: str = "", child_agent_id: str = ""
    ) -> None:
        sid, ns = self._ids(ctx)
        episode = self._bindings.get((sid, ctx.run_id)) or next(
            (v for k, v in self._bindings.items() if k[0] == sid), None
        )
        self._children[child_session_key] = _Child(sid, episode, ns, label or child_session_key)
        self._sessions.setdefault(sid, _SessionState()).open_children.add(child_session_key)

    async def subagent_ended(
        self, ctx: HookCtx, target_session_key: str, outcome: str = "", error: str = ""
    ) -> None:
        """Record the child's outcome on the parent; apply a deferred parent close."""
        child = self._children.pop(target_session_key, None)
        if child is None:
            return
        state = self._sessions.get(child.parent_session_id)
        try:
            await self.core.record_subagent_outcome(
                SubagentOutcome(
                    agent=AGENT_KIND,
                    session_id=child.parent_session_id,
                    task=child.task,
                    result=outcome or error or "ended",
                    namespace=child.parent_namespace,
                    episode_id=child.parent_episode_id,
                    child_session_id=session_id_for(None, target_session_key),
                    outcome=_outcome_kind(outcome, error),
                    error=error or None,
                )
            )
        except Exception as exc:
            log.warning("record_subagent_outcome_failed", error=str(exc))
        if state is not None:
            state.open_children.discard(target_session_key)
            if not state.open_children and state.deferred_end is not None:
                await self._close(child.parent_session_id, state.deferred_end)


def _outcome_kind(outcome: str, error: str) -> str:
    known = {"ok", "error", "timeout", "killed", "reset", "deleted", "unknown"}
    if outcome in known:
        return outcome
    return "error" if error else "ok"


def ctx_from_mapping(raw: Mapping[str, Any]) -> HookCtx:
    """A ``HookCtx`` from OpenClaw's camelCase ctx (used by tests and the JSON path)."""
    return HookCtx(
        run_id=str(raw.get("runId") or ""),
        agent_id=str(raw.get("agentId") or "main"),
        session_key=str(raw.get("sessionKey") or ""),
        session_id=str(raw.get("sessionId") or ""),
        workspace_dir=str(raw.get("workspaceDir") or ""),
    )
