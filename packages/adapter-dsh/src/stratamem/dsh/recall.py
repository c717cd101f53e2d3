"""Automatic recall on ``agent/pre-step``: one deadline-bounded, write-free search per logical turn.

Only step 1 of an accepted, non-empty direct-user turn recalls; the attempt is recorded before the
call, so a failed or timed-out recall is not retried in that turn (hosts.md §5.3).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from stratamem.contract.dtos import RetrievalQuery
from stratamem.contract.hostkit.context_block import MAX_CONTEXT_CHARS, render_context_block
from stratamem.contract.hostkit.log import get_logger
from stratamem.contract.protocol import MemoryCore
from stratamem.dsh.host_api import AGENT, USER_SOURCE
from stratamem.dsh.namespace import SessionInfo, resolve_namespace

_log = get_logger("dsh.recall")

#: the reference's cap: config may shorten the deadline, never extend it
MAX_RECALL_MS = 3000
MIN_RECALL_MS = 100
_TURN_STATES = 4096


def recall_budget_ms(configured_ms: int | None) -> int:
    """``min(recall_timeout_ms, 3000)``, at least 100 ms."""
    if not configured_ms or configured_ms <= 0:
        return MAX_RECALL_MS
    return max(MIN_RECALL_MS, min(int(configured_ms), MAX_RECALL_MS))


def user_text(messages: Sequence[tuple[str, str]]) -> str:
    """Text of the direct-user messages only (plugin and tool messages never trigger recall)."""
    return "\n".join(t for kind, t in messages if kind == USER_SOURCE and t.strip()).strip()


@dataclass(frozen=True, slots=True)
class RecallOutcome:
    inject: bool
    context: str = ""
    skip_reason: str = ""
    hit_count: int = 0
    cut_off: bool = False
    latency_ms: float = 0.0


class TurnStates:
    """Per (Session-object ref, turn): whether recall was attempted and the accepted user text."""

    def __init__(self, limit: int = _TURN_STATES) -> None:
        self._limit = limit
        self._states: OrderedDict[tuple[str, int], dict[str, object]] = OrderedDict()

    def get(self, ref: str, turn: int) -> dict[str, object]:
        key = (ref, turn)
        state = self._states.get(key)
        if state is None:
            state = {"recall_attempted": False, "user_text": ""}
            self._states[key] = state
            while len(self._states) > self._limit:
                self._states.popitem(last=False)
        else:
            self._states.move_to_end(key)
        return state

    def forget_ref(self, ref: str) -> None:
        for key in [k for k in self._states if k[0] == ref]:
            del self._states[key]


async def recall(
    core: MemoryCore,
    states: TurnStates,
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
    """Decide and run the recall of one pre-step; never raises for a failed recall."""
    if decision_kind != "enter":
        return RecallOutcome(False, skip_reason="rejected")
    if step != 1:
        return RecallOutcome(False, skip_reason="not_step_1")
    if not recall_enabled:
        return RecallOutcome(False, skip_reason="disabled")
    text = user_text(messages)
    if not text:
        return RecallOutcome(False, skip_reason="empty_text")
    state = states.get(info.ref, turn)
    state["user_text"] = text
    if state["recall_attempted"]:
        return RecallOutcome(False, skip_reason="already_attempted")
    state["recall_attempted"] = True
    now = int(time.time() * 1000)
    cap = now + recall_budget_ms(recall_timeout_ms)
    deadline = cap if not deadline_at or deadline_at <= 0 else min(int(deadline_at), cap)
    query = RetrievalQuery(
        agent=AGENT,
        query=text,
        namespace=resolve_namespace(info),
        session_id=info.session_id,
        reason="turn_start",
        context_hints={"dshTurn": turn, "dshStep": step, "cwd": info.cwd},
        deadline_at=deadline,
        llm_filter_malformed_retries=0,
    )
    started = time.perf_counter()
    # the core honours the deadline itself; the wait is the hard guard for a core that does not
    remaining_s = max(0.0, (deadline - time.time() * 1000) / 1000)
    task = asyncio.ensure_future(core.search(query))
    task.add_done_callback(_observe)  # a late answer may finish, but is never left unobserved
    try:
        result = await asyncio.wait_for(asyncio.shield(task), remaining_s)
    except TimeoutError:
        _log.warning("dsh.recall_timeout", session=info.session_id, turn=turn)
        return RecallOutcome(False, skip_reason="timeout", latency_ms=_ms(started))
    except Exception as exc:
        _log.warning("dsh.recall_failed", session=info.session_id, turn=turn, error=str(exc))
        return RecallOutcome(False, skip_reason="error", latency_ms=_ms(started))
    block = render_context_block(result.injected_context, context_max_chars)
    if not block:
        return RecallOutcome(
            False, skip_reason="no_hits", cut_off=result.cut_off, latency_ms=_ms(started)
        )
    return RecallOutcome(
        True,
        context=block,
        hit_count=len(result.hits),
        cut_off=result.cut_off,
        latency_ms=_ms(started),
    )


def _observe(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
