"""Decision repair (memos-core §5.8, fixed): 3 failures of a tool within 5 steps of a session produce
prefer/avoid guidance, and the packet is really prepended at that session's next turn start (once)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import (
    Namespace,
    RetrievalQuery,
    ToolCall,
    ToolOutcome,
    TurnInput,
    TurnResult,
)
from stratamem.core import open_core
from stratamem.core.learning.repair import BurstTracker

NS = Namespace(agent_kind="hermes")
BAD = "docker run --privileged web:latest"


def now() -> int:
    return int(time.time() * 1000)


def test_a_burst_is_three_failures_within_five_steps_without_a_success() -> None:
    tr = BurstTracker(3, 5)
    assert not tr.record("s", "t", False) and not tr.record("s", "t", False)
    assert tr.record("s", "t", False)
    spread = BurstTracker(3, 5)
    for ok in (False, True, True, True, True, False, False):
        assert not spread.record("s", "t", ok)  # the first failure left the window
    reset = BurstTracker(3, 5)
    for ok in (False, False, True):
        reset.record("s", "t", ok)
    assert not reset.record("s", "t", False)  # the success dropped the earlier failures
    other = BurstTracker(3, 5)
    other.record("a", "t", False)
    other.record("a", "t", False)
    assert not other.record("b", "t", False)  # per session


async def _failing_turn(core: Any, session: str) -> None:
    t = now()
    await core.turn_start(
        TurnInput(agent="hermes", session_id=session, user_text="Deploy the web service", ts=t)
    )
    await core.turn_end(
        TurnResult(
            agent="hermes",
            session_id=session,
            agent_text=f"I tried {BAD}; it failed with permission denied.",
            ts=t + 3,
            tool_calls=(
                ToolCall(
                    name="docker.run",
                    input={"cmd": BAD},
                    output="Error: permission denied",
                    error_code="EXIT_1",
                ),
            ),
        )
    )


async def test_burst_generates_a_repair_prepended_once_at_the_next_turn_of_that_session(
    tmp_path: Path,
) -> None:
    async with open_core(
        tmp_path, embedding__provider="none", algorithm__lightweight_memory__enabled=False
    ) as core:
        seen: list[str] = []
        core.bus.add_observer(lambda e: seen.append(e.type))
        await _failing_turn(core, "s1")
        for _ in range(3):
            await core.record_tool_outcome(
                ToolOutcome(session_id="s1", tool="docker.run", success=False)
            )
        await core.flush()
        rows = core.db.query("SELECT * FROM decision_repairs")
        assert len(rows) == 1 and rows[0]["source"] == "template"  # no LLM: the template
        assert BAD in rows[0]["anti_pattern"] and rows[0]["anti_pattern"].startswith("Avoid: ")
        assert "repair.generated" in seen

        other = await core.turn_start(
            TurnInput(agent="hermes", session_id="s2", user_text="Deploy it please", ts=now())
        )
        assert "<decision-repair>" not in other.injected_context
        nxt = await core.turn_start(
            TurnInput(agent="hermes", session_id="s1", user_text="Try the deploy again", ts=now())
        )
        assert nxt.injected_context.startswith("<decision-repair>")
        assert "docker.run" in nxt.injected_context and BAD in nxt.injected_context
        later = await core.turn_start(
            TurnInput(agent="hermes", session_id="s1", user_text="And now the tests", ts=now())
        )
        assert "<decision-repair>" not in later.injected_context  # delivered once


async def test_a_sub_agent_start_receives_the_pending_repair(tmp_path: Path) -> None:
    async with open_core(
        tmp_path, embedding__provider="none", algorithm__lightweight_memory__enabled=False
    ) as core:
        await _failing_turn(core, "s1")
        for _ in range(3):
            await core.record_tool_outcome(
                ToolOutcome(session_id="s1", tool="docker.run", success=False)
            )
        await core.flush()
        res = await core.search(
            RetrievalQuery(agent="hermes", query="deploy", session_id="s1", reason="sub_agent")
        )
        assert res.injected_context.startswith("<decision-repair>")


async def test_no_repair_without_a_burst_or_in_lightweight_mode(tmp_path: Path) -> None:
    async with open_core(
        tmp_path / "full", embedding__provider="none", algorithm__lightweight_memory__enabled=False
    ) as core:
        await _failing_turn(core, "s1")
        for ok in (False, False, True, False):
            await core.record_tool_outcome(
                ToolOutcome(session_id="s1", tool="docker.run", success=ok)
            )
        await core.flush()
        assert core.db.query("SELECT * FROM decision_repairs") == []
    async with open_core(tmp_path / "lw", embedding__provider="none") as core:
        assert core.learner is None
        for _ in range(3):
            await core.record_tool_outcome(ToolOutcome(session_id="s1", tool="x", success=False))
        assert core.db.query("SELECT * FROM decision_repairs") == []
