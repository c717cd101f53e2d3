"""A turn key promises one turn: resending the same turn gets the same ack, reusing the key for
other content is a typed ``conflict`` and stores nothing (the first turn is kept)."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, ToolCall, TurnResult
from stratamem.contract.errors import StratamemError
from stratamem.core import open_core

NS = Namespace(agent_kind="hermes")


async def test_a_reused_turn_key_with_other_content_is_a_conflict(tmp_path: Path) -> None:
    first = TurnResult(
        agent="hermes",
        session_id="s",
        agent_text="the backup runs at 02:00",
        user_text="when does the backup run?",
        ts=int(time.time() * 1000),
        namespace=NS,
        turn_key="k-1",
        tool_calls=(ToolCall(name="cron.list", input={}, output="0 2 * * * backup"),),
    )
    async with open_core(tmp_path, embedding__provider="none") as core:
        ack = await core.turn_end(first)
        # the same turn again (a resend, a later ts): the same ack, nothing new
        again = await core.turn_end(replace(first, ts=first.ts + 5000))
        assert (again.trace_id, again.journal_seq) == (ack.trace_id, ack.journal_seq)
        for changed in (
            replace(first, agent_text="the backup runs at 03:00"),
            replace(first, user_text="when does the restore run?"),
            replace(first, tool_calls=(ToolCall(name="cron.list", input={}, output="other"),)),
        ):
            with pytest.raises(StratamemError) as err:
                await core.turn_end(changed)
            assert err.value.code == "conflict" and err.value.details["turn_key"] == "k-1"
        await core.flush(30)
        traces = await core.list_traces(ListQuery(namespace=NS, limit=10))
        assert [t.agent_text for t in traces] == ["the backup runs at 02:00"]
