"""LocalCore facade: turn-key idempotency, one owner per home, feedback, learning tables, recovery."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stratamem.contract import MemoryCore
from stratamem.contract.dtos import (
    FeedbackInput,
    ListQuery,
    Namespace,
    RetrievalQuery,
    SkillGetOptions,
    ToolCall,
    ToolOutcome,
    TracePatch,
    TurnInput,
    TurnResult,
)
from stratamem.contract.errors import StratamemError
from stratamem.core import LocalCore, open_core
from stratamem.core.storage.ownership import Scope

NS = Namespace(agent_kind="hermes")


def now() -> int:
    return int(time.time() * 1000)


@pytest.fixture
async def core(tmp_path: Path) -> AsyncIterator[LocalCore]:
    async with open_core(tmp_path, embedding__provider="none") as c:
        yield c


async def _turn(core: LocalCore, session: str, user: str, agent: str, **kw: object) -> str:
    t = now()
    await core.turn_start(TurnInput(agent="hermes", session_id=session, user_text=user, ts=t))
    ack = await core.turn_end(
        TurnResult(agent="hermes", session_id=session, agent_text=agent, ts=t + 1, **kw)  # type: ignore[arg-type]
    )
    return ack.trace_id


async def test_local_core_implements_the_memory_core_protocol(core: LocalCore) -> None:
    assert isinstance(core, MemoryCore)


async def test_second_open_of_a_home_is_home_locked_naming_the_pid(tmp_path: Path) -> None:
    import os

    async with open_core(tmp_path, embedding__provider="none"):
        with pytest.raises(StratamemError) as err:
            async with open_core(tmp_path, embedding__provider="none"):
                pass
        assert err.value.code == "home_locked"
        assert str(os.getpid()) in err.value.message
    async with open_core(tmp_path, embedding__provider="none"):
        pass  # released on shutdown


async def test_same_turn_key_returns_the_same_result_and_routes_once(core: LocalCore) -> None:
    await _turn(core, "s", "the walrus gateway runs on port 9123", "noted")
    t = now()
    turn = TurnInput(
        agent="hermes", session_id="s", user_text="which port does walrus use?", ts=t, turn_key="k9"
    )
    first = await core.turn_start(turn)
    second = await core.turn_start(turn)
    assert first == second
    assert first.query.episode_id and first.hits
    episodes = await core.list_episodes(ListQuery(session_id="s", namespace=NS))
    assert len(episodes) == 2  # the earlier turn + this one, not a third for the replay
    with pytest.raises(StratamemError) as err:
        await core.turn_start(
            TurnInput(agent="hermes", session_id="s", user_text="other text", ts=t, turn_key="k9")
        )
    assert err.value.code == "conflict"


async def test_turn_end_with_the_same_turn_key_is_stored_once(core: LocalCore) -> None:
    t = now()
    res = TurnResult(
        agent="hermes", session_id="s", agent_text="a", user_text="q", ts=t, turn_key="tk"
    )
    a = await core.turn_end(res)
    b = await core.turn_end(res)
    assert a == b
    await core.flush(10)
    assert await core.store.count("traces", Scope.everything("test")) == 1


async def test_lightweight_mode_opens_one_episode_per_turn_and_closes_the_previous(
    core: LocalCore,
) -> None:
    await _turn(core, "s", "first question about llamas", "a1")
    await _turn(core, "s", "second question about alpacas", "a2")
    eps = await core.list_episodes(ListQuery(session_id="s", namespace=NS))
    assert sorted(e.status for e in eps) == ["closed", "open"]
    assert all(len(e.trace_ids) == 1 for e in eps)


async def test_full_mode_appends_follow_ups_to_the_open_episode(tmp_path: Path) -> None:
    async with open_core(
        tmp_path, embedding__provider="none", algorithm__lightweight_memory__enabled=False
    ) as core:
        await _turn(core, "s", "please build the parser for the config format", "done")
        await _turn(core, "s", "also add tests for it", "added")
        eps = await core.list_episodes(ListQuery(session_id="s", namespace=NS))
        assert len(eps) == 1 and len(eps[0].trace_ids) >= 2
        assert (await core.health()).mode == "full"


async def test_feedback_sets_value_r_human_and_priority_of_the_trace(core: LocalCore) -> None:
    tid = await _turn(core, "s", "how to restart nginx", "systemctl restart nginx")
    fb = await core.submit_feedback(
        FeedbackInput(trace_id=tid, polarity="negative", magnitude=0.8, namespace=NS)
    )
    assert fb.id and fb.trace_id == tid
    tr = await core.get_trace(tid, NS)
    assert tr is not None
    assert tr.value == pytest.approx(-1.0) and tr.r_human == pytest.approx(-1.0)
    assert tr.priority == pytest.approx(1.0)
    await core.submit_feedback(
        FeedbackInput(trace_id=tid, polarity="positive", magnitude=0.8, namespace=NS)
    )
    tr = await core.get_trace(tid, NS)
    assert tr is not None and tr.value == pytest.approx(0.0) and tr.priority == pytest.approx(1.0)
    with pytest.raises(StratamemError) as err:
        await core.submit_feedback(FeedbackInput(trace_id="tr_missing", polarity="positive"))
    assert err.value.code == "trace_not_found"


async def test_update_and_delete_traces(core: LocalCore) -> None:
    tid = await _turn(core, "s", "the moose password hint", "it is the usual one")
    tr = await core.update_trace(tid, TracePatch(summary="edited summary"), NS)
    assert tr is not None and tr.summary == "edited summary" and tr.priority == 0.5
    assert await core.delete_traces([tid], NS) == 1
    assert await core.get_trace(tid, NS) is None
    assert await core.delete_traces([tid], NS) == 0
    res = await core.search(RetrievalQuery(agent="hermes", query="moose password", namespace=NS))
    assert res.hits == ()


async def test_list_traces_is_newest_first_with_filters(core: LocalCore) -> None:
    ids = [await _turn(core, "s1", f"note number {i} about ferrets", "ok") for i in range(3)]
    await _turn(core, "s2", "unrelated beaver note", "ok")
    listed = await core.list_traces(ListQuery(session_id="s1", namespace=NS))
    assert [t.id for t in listed] == list(reversed(ids))
    q = await core.list_traces(ListQuery(q="beaver", namespace=NS))
    assert [t.session_id for t in q] == ["s2"]
    page = await core.list_traces(ListQuery(limit=2, offset=1, namespace=NS))
    assert len(page) == 2


async def test_learning_tables_get_list_delete(core: LocalCore) -> None:
    t = now()
    own = {"owner_agent_kind": "hermes", "owner_profile_id": "default", "share_scope": "private"}
    await core.store.upsert(
        "policies",
        [{"id": "po_1", "title": "Retry with backoff", "status": "active", "updated_at": t, **own}],
    )
    await core.store.upsert(
        "world_models",
        [{"id": "wm_1", "title": "Cluster layout", "structure_json": json.dumps({}), **own}],
    )
    await core.store.upsert(
        "skills", [{"id": "sk_1", "name": "deploy", "status": "active", "eta": 0.5, **own}]
    )
    assert (await core.get_policy("po_1", NS)).title == "Retry with backoff"  # type: ignore[union-attr]
    assert [p.id for p in await core.list_policies(ListQuery(namespace=NS))] == ["po_1"]
    assert (await core.set_policy_status("po_1", "archived", NS)).status == "archived"  # type: ignore[union-attr]
    assert (await core.get_world_model("wm_1", NS)).title == "Cluster layout"  # type: ignore[union-attr]
    assert len(await core.list_world_models(ListQuery(namespace=NS))) == 1
    sk = await core.get_skill("deploy", SkillGetOptions(record_use=True), NS)
    assert sk is not None and sk.id == "sk_1" and sk.usage_count == 1
    assert (await core.archive_skill("sk_1", namespace=NS)).status == "archived"
    assert await core.delete_skill("sk_1", NS) and not await core.delete_skill("sk_1", NS)
    assert await core.delete_policy("po_1", NS)
    assert await core.delete_world_model("wm_1", NS)
    assert await core.list_skills(ListQuery(namespace=NS)) == []
    with pytest.raises(StratamemError) as err:
        await core.archive_skill("sk_1", namespace=NS)
    assert err.value.code == "skill_not_found"


async def test_record_tool_outcome_never_throws(core: LocalCore) -> None:
    await core.record_tool_outcome(ToolOutcome(session_id="nope", tool="x", success=False))
    await core.shutdown()
    await core.record_tool_outcome(ToolOutcome(session_id="nope", tool="x", success=False))


async def test_calls_after_shutdown_are_already_shut_down(core: LocalCore) -> None:
    await core.shutdown()
    with pytest.raises(StratamemError) as err:
        await core.health()
    assert err.value.code == "already_shut_down"


async def test_startup_recovery_closes_open_lightweight_episodes(tmp_path: Path) -> None:
    async with open_core(tmp_path, embedding__provider="none") as core:
        r = await core.turn_start(
            TurnInput(agent="hermes", session_id="s", user_text="left open", ts=now())
        )
        eid = r.query.episode_id
        assert eid
        # simulate a crash: the episode stays open in SQLite
        core.lock.release()
        core.services.shut = True
        await core.journal.stop(5)
        core.services.close()
    async with open_core(tmp_path, embedding__provider="none") as core2:
        ep = await core2.get_episode(eid, NS)
        assert (
            ep is not None and ep.status == "closed" and ep.close_reason == "lightweight_backfill"
        )


async def test_subagent_outcome_is_captured_with_a_subagent_tool_call(core: LocalCore) -> None:
    from stratamem.contract.dtos import SubagentOutcome

    ack = await core.record_subagent_outcome(
        SubagentOutcome(agent="hermes", session_id="s", task="count files", result="42 files")
    )
    tr = await core.get_trace(ack.trace_id, NS)
    assert tr is not None and tr.tool_calls[-1].name == "subagent"
    assert isinstance(tr.tool_calls[-1], ToolCall)


async def test_turn_start_honours_its_deadline(core: LocalCore) -> None:
    for i in range(20):
        await _turn(core, "s", f"fact number {i} about the heron colony", "ok")
    t0 = time.monotonic()
    deadline = now() + 300
    res = await core.turn_start(
        TurnInput(
            agent="hermes",
            session_id="s2",
            user_text="what about the heron colony?",
            ts=now(),
            deadline_at=deadline,
        )
    )
    assert time.monotonic() - t0 < 0.3 + 10  # generous: never a speed assertion
    assert res.query.episode_id


async def test_health_reports_mode_counts_and_backlog(core: LocalCore) -> None:
    await _turn(core, "s", "health check fact", "ok")
    await core.flush(10)
    h = await core.health()
    assert h.ok and h.mode == "lightweight" and h.counts["traces"] == 1 and h.journal_backlog == 0
    assert h.home == str(core.home)
