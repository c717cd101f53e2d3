"""The MemoryCore contract, asserted identically on LocalCore and RemoteCore (any difference is a bug)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

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

NS = Namespace(agent_kind="hermes")
OTHER = Namespace(agent_kind="openclaw", profile_id="p2")


def now() -> int:
    return int(time.time() * 1000)


async def _turn(core: Any, session: str, user: str, agent: str, ns: Namespace = NS) -> Any:
    t = now()
    await core.turn_start(
        TurnInput(agent=ns.agent_kind, session_id=session, user_text=user, ts=t, namespace=ns)
    )
    return await core.turn_end(
        TurnResult(
            agent=ns.agent_kind,
            session_id=session,
            agent_text=agent,
            user_text=user,
            ts=t + 1,
            namespace=ns,
            tool_calls=(ToolCall(name="shell", input={"cmd": "ls"}, output="ok"),),
        )
    )


async def test_implements_the_protocol_and_reports_health(any_core: Any) -> None:
    assert isinstance(any_core, MemoryCore)
    health = await any_core.health()
    assert health.ok and health.version
    assert health.home.endswith("home")


async def test_a_captured_turn_is_found_by_search_and_timeline_right_after_turn_end(
    any_core: Any,
) -> None:
    ack = await _turn(any_core, "s1", "what is the zorblax port?", "the zorblax port is 7421")
    res = await any_core.search(RetrievalQuery(agent="hermes", query="zorblax port", namespace=NS))
    assert [h.ref_id for h in res.hits][:1] == [ack.trace_id]
    timeline = await any_core.timeline(ack.episode_id, NS)
    assert [t.id for t in timeline] == [ack.trace_id]
    assert timeline[0].tool_calls[0].input == {"cmd": "ls"}
    trace = await any_core.get_trace(ack.trace_id, NS)
    assert trace is not None and "zorblax" in trace.user_text


async def test_namespaces_do_not_see_each_others_private_memory(any_core: Any) -> None:
    await _turn(any_core, "s1", "my moose password is hunter2", "noted", ns=OTHER)
    res = await any_core.search(
        RetrievalQuery(agent="hermes", query="moose password", namespace=NS)
    )
    assert res.hits == ()
    assert await any_core.list_traces(ListQuery(namespace=NS)) == []
    assert len(await any_core.list_traces(ListQuery(namespace=OTHER))) == 1


async def test_sessions_and_episodes_open_list_and_close(any_core: Any) -> None:
    sid = await any_core.open_session("hermes", "sess-a", NS, {"k": [1, 2]})
    assert sid == "sess-a"
    eid = await any_core.open_episode(sid, "hello there")
    episode = await any_core.get_episode(eid, NS)
    assert episode is not None and episode.session_id == sid
    listed = await any_core.list_episodes(ListQuery(session_id=sid, namespace=NS))
    assert eid in [e.id for e in listed]
    await any_core.close_episode(eid)
    await any_core.close_session(sid)
    assert await any_core.get_episode("ep_missing", NS) is None


async def test_unknown_ids_give_the_same_typed_errors(any_core: Any) -> None:
    with pytest.raises(StratamemError) as err:
        await any_core.close_session("no-such-session")
    assert err.value.code == "session_not_found"
    assert err.value.details == {"session_id": "no-such-session"}
    assert await any_core.get_trace("tr_missing", NS) is None
    assert await any_core.get_policy("po_missing", NS) is None
    assert await any_core.get_world_model("wm_missing", NS) is None
    assert await any_core.get_skill("sk_missing", SkillGetOptions(), NS) is None
    assert await any_core.delete_policy("po_missing", NS) is False
    assert await any_core.delete_skill("sk_missing", NS) is False
    assert await any_core.delete_world_model("wm_missing", NS) is False
    assert await any_core.list_policies(ListQuery(namespace=NS)) == []
    assert await any_core.list_world_models(ListQuery(namespace=NS)) == []
    assert await any_core.list_skills(ListQuery(namespace=NS)) == []


async def test_bad_input_is_invalid_argument_and_changes_nothing(any_core: Any) -> None:
    with pytest.raises(StratamemError) as err:
        await any_core.search(RetrievalQuery(agent="hermes", query="x", reason="bogus"))
    assert err.value.code == "invalid_argument"
    with pytest.raises(StratamemError) as err:
        await any_core.turn_end(TurnResult(agent="", session_id="s", agent_text="a", ts=now()))
    assert err.value.code == "invalid_argument"
    assert await any_core.list_traces(ListQuery(include_all_namespaces=True)) == []


async def test_trace_update_delete_and_feedback(any_core: Any) -> None:
    ack = await _turn(any_core, "s2", "how do I deploy?", "run make deploy")
    await any_core.flush(10.0)
    updated = await any_core.update_trace(ack.trace_id, TracePatch(tags=("deploy",)), NS)
    assert updated is not None and updated.tags == ("deploy",)
    fb = await any_core.submit_feedback(
        FeedbackInput(polarity="positive", magnitude=1.0, trace_id=ack.trace_id, namespace=NS)
    )
    assert fb.polarity == "positive" and fb.trace_id == ack.trace_id
    await any_core.record_tool_outcome(
        ToolOutcome(session_id="s2", tool="shell", success=True, ts=now())
    )
    assert await any_core.delete_traces([ack.trace_id], NS) == 1
    assert await any_core.get_trace(ack.trace_id, NS) is None


async def test_turn_start_is_idempotent_per_turn_key(any_core: Any) -> None:
    turn = TurnInput(
        agent="hermes",
        session_id="s3",
        user_text="plan the trip",
        ts=now(),
        turn_key="k1",
        namespace=NS,
    )
    a = await any_core.turn_start(turn)
    b = await any_core.turn_start(turn)
    assert a.packet_id == b.packet_id and a.query.episode_id == b.query.episode_id
    with pytest.raises(StratamemError) as err:
        await any_core.turn_start(
            TurnInput(agent="hermes", session_id="s3", user_text="other", ts=now(), turn_key="k1")
        )
    assert err.value.code == "conflict"


async def test_a_past_deadline_gives_the_safe_cut_off(any_core: Any) -> None:
    res = await any_core.search(
        RetrievalQuery(agent="hermes", query="anything", namespace=NS, deadline_at=now() - 1)
    )
    assert res.cut_off and res.hits == ()


async def test_events_stream_live_and_resume_from_a_seq(any_core: Any) -> None:
    got: list[Any] = []

    async def read() -> None:
        async for ev in any_core.subscribe_events(types=("session.opened",)):
            got.append(ev)
            if ev.payload["session_id"] == "ev-2":
                return

    reader = asyncio.create_task(read())
    # the stream is live once it delivers a warm-up event (no guess at how long subscribing takes)
    for i in range(600):
        if got:
            break
        await any_core.open_session("hermes", f"warm-{i}", NS)
        await asyncio.sleep(0.05)
    await any_core.open_session("hermes", "ev-1", NS)
    await any_core.open_session("hermes", "ev-2", NS)
    await asyncio.wait_for(reader, 10)
    got = [e for e in got if not e.payload["session_id"].startswith("warm-")]
    assert [e.payload["session_id"] for e in got] == ["ev-1", "ev-2"]
    assert got[0].epoch and got[1].seq > got[0].seq
    replay = any_core.subscribe_events(since_seq=got[0].seq, types=("session.opened",))
    first = await asyncio.wait_for(anext(replay), 10)
    assert first.payload["session_id"] == "ev-2"
    await replay.aclose()
