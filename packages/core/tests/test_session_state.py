"""Per-session state is bounded: sessions that close free theirs, and sessions that are never closed
(a host killed mid-conversation, a one-shot CLI chat) idle out instead of piling up for good."""

from __future__ import annotations

import time
from pathlib import Path

from stratamem.contract.dtos import Namespace, ToolOutcome, TurnInput, TurnResult
from stratamem.core.engine.assemble import open_local_core

NS = Namespace(agent_kind="hermes", profile_id="default")


async def _turn(core: object, sid: str) -> None:
    t = int(time.time() * 1000)
    await core.turn_start(  # type: ignore[attr-defined]
        TurnInput(
            agent="hermes", session_id=sid, user_text="deploy it", ts=t, namespace=NS, turn_key="k"
        )
    )
    await core.turn_end(  # type: ignore[attr-defined]
        TurnResult(agent="hermes", session_id=sid, agent_text="done", ts=t + 1, namespace=NS)
    )
    await core.record_tool_outcome(  # type: ignore[attr-defined]
        ToolOutcome(session_id=sid, tool="shell", success=False)
    )


async def test_sessions_never_closed_leave_bounded_state_and_a_close_frees_it(
    tmp_path: Path,
) -> None:
    core = await open_local_core(
        tmp_path, embedding__provider="none", algorithm__lightweight_memory__enabled=False
    )
    try:
        assert core.learner is not None  # full mode: the repair tracker holds per-session state
        core._starts.max_sessions = 8
        core.learner.tracker.max_sessions = 8
        for i in range(40):
            await _turn(core, f"s{i}")
        sizes = core.services.state_sizes()
        assert sizes["session_locks"] == 0  # nothing holds a lock between calls
        assert len(core._starts.results) <= 8
        assert sizes["repair_tracker"] <= 16  # 8 sessions, one tool each
        # the most recent sessions are still remembered, and closing one frees it at once
        assert ("s39", "k") in core._starts.results
        await core.close_session("s39")
        assert ("s39", "k") not in core._starts.results
        assert core.services.state_sizes()["repair_tracker"] <= 14
    finally:
        await core.shutdown()
