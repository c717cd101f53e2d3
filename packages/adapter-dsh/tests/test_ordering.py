"""The DSH ordering against a real core: every case of hosts.md §5.7 plus the durable spool."""

from __future__ import annotations

import asyncio
import time

from dsh_fakes import FakeDsh, GatedCore, assistant, tool_call, tool_result

from stratamem.contract.dtos import ListQuery
from stratamem.core import LocalCore
from stratamem.dsh.bridge import DshBridge
from stratamem.dsh.namespace import SessionInfo, resolve_namespace

SEED = SessionInfo(ref="obj-seed", session_id="dsh-seed", cwd="/work/app")
USER = SessionInfo(ref="obj-1", session_id="dsh-1", cwd="/work/app")
FACT = "the staging database listens on port 6543 behind pgbouncer"


def user(text: str) -> list[tuple[str, str]]:
    return [("user", text)]


async def seed(dsh: FakeDsh, bridge: DshBridge) -> None:
    dsh.spool_turn(
        SEED, 1, f"remember: {FACT}", [assistant("Noted, staging uses pgbouncer on 6543.")]
    )
    assert await bridge.flush(timeout_s=10)


async def step(bridge: DshBridge, info: SessionInfo, turn: int, text: str, **kw: object):  # type: ignore[no-untyped-def]
    kw.setdefault("step", 1)
    kw.setdefault("decision_kind", "enter")
    return await bridge.pre_step(info, turn=turn, messages=user(text), **kw)  # type: ignore[arg-type]


async def test_step_one_recalls_once_and_injects_a_capped_memos_context(
    dsh: FakeDsh, bridge: DshBridge, gated: GatedCore, core: LocalCore
) -> None:
    await seed(dsh, bridge)
    out = await step(bridge, USER, 1, "which port does the staging database use with pgbouncer")
    assert out.inject and out.hit_count >= 1
    assert out.context.startswith("<memos_context>\n") and "6543" in out.context
    assert out.context.endswith("</memos_context>")
    # turn-start recall is pure: no session or episode of the recalling session was written
    assert (
        await core.list_episodes(ListQuery(session_id=USER.session_id, include_all_namespaces=True))
        == []
    )
    query = next(a[0] for n, a in gated.args if n == "search")
    assert query.reason == "turn_start" and query.llm_filter_malformed_retries == 0
    assert query.namespace == resolve_namespace(USER)
    assert 0 < query.deadline_at - time.time() * 1000 <= 3000


async def test_a_small_context_cap_truncates_with_the_suffix(
    dsh: FakeDsh, bridge: DshBridge
) -> None:
    await seed(dsh, bridge)
    out = await step(bridge, USER, 1, "staging database pgbouncer port", context_max_chars=300)
    assert out.inject and len(out.context) <= 300
    assert out.context.endswith("[Memory context truncated to 300 characters.]\n</memos_context>")


async def test_step_two_does_not_recall(bridge: DshBridge, gated: GatedCore) -> None:
    out = await step(bridge, USER, 1, "continue with the tool output", step=2)
    assert (out.inject, out.skip_reason) == (False, "not_step_1")
    assert "search" not in gated.calls


async def test_re_entered_pre_step_recalls_once_per_turn(
    bridge: DshBridge, gated: GatedCore
) -> None:
    first = await step(bridge, USER, 1, "deploy the staging service")
    again = await step(bridge, USER, 1, "deploy the staging service")
    assert first.skip_reason in ("", "no_hits")
    assert again.skip_reason == "already_attempted"
    assert gated.calls.count("search") == 1


async def test_rejected_turn_neither_recalls_nor_captures(
    dsh: FakeDsh, bridge: DshBridge, gated: GatedCore
) -> None:
    out = await step(bridge, USER, 1, "hello", decision_kind="reject")
    assert out.skip_reason == "rejected"
    # the turn ends without an accepted user text: the plugin spools it, the service drops it
    dsh.spool_turn(USER, 1, "", [])
    assert await bridge.flush(timeout_s=5)
    assert "search" not in gated.calls and "turn_end" not in gated.calls
    assert bridge.spool.done["dsh-1:1"] == "skipped"


async def test_recall_uses_the_rewritten_post_waterfall_text_only(
    bridge: DshBridge, gated: GatedCore
) -> None:
    messages = [
        ("plugin", "<memos_context>old</memos_context>"),
        ("user", "rewritten by policy"),
        ("tool", "x"),
    ]
    await bridge.pre_step(USER, turn=1, step=1, decision_kind="enter", messages=messages)
    query = next(a[0] for n, a in gated.args if n == "search")
    assert query.query == "rewritten by policy"
    plugin_only = await bridge.pre_step(
        USER, turn=2, step=1, decision_kind="enter", messages=[("plugin", "recall text")]
    )
    assert plugin_only.skip_reason == "empty_text"


async def test_a_non_cancellable_slow_recall_gives_up_at_the_deadline(
    bridge: DshBridge, gated: GatedCore
) -> None:
    gated.delays["search"] = 30.0
    started = time.monotonic()
    out = await step(bridge, USER, 1, "anything at all", recall_timeout_ms=400)
    assert (out.inject, out.skip_reason) == (False, "timeout")
    assert time.monotonic() - started < 10  # generous: it did not wait for the 30 s recall
    # the failed recall is not retried in that turn ...
    assert (await step(bridge, USER, 1, "anything at all")).skip_reason == "already_attempted"
    # ... and does not suppress the next turn (an aborted turn neither)
    gated.delays.clear()
    nxt = await step(bridge, USER, 2, "next question")
    assert nxt.skip_reason in ("", "no_hits")
    assert gated.calls.count("search") == 2


async def test_config_can_shorten_but_never_extend_the_deadline(
    bridge: DshBridge, gated: GatedCore
) -> None:
    far = int(time.time() * 1000) + 60_000
    await step(bridge, USER, 1, "question one", recall_timeout_ms=60_000, deadline_at=far)
    await step(bridge, USER, 2, "question two", recall_timeout_ms=5)
    q1, q2 = (a[0] for n, a in gated.args if n == "search")
    now = time.time() * 1000
    assert q1.deadline_at - now <= 3000
    assert q2.deadline_at - now <= 100  # the 100 ms minimum


async def test_a_fork_reusing_the_session_id_keeps_its_own_turn_state(
    bridge: DshBridge, gated: GatedCore
) -> None:
    await step(bridge, USER, 1, "what did we decide")
    fork = SessionInfo(ref="obj-2", session_id=USER.session_id, cwd=USER.cwd)
    out = await step(bridge, fork, 1, "what did we decide")
    assert out.skip_reason != "already_attempted"
    assert gated.calls.count("search") == 2


async def test_turn_end_twice_is_captured_once(
    dsh: FakeDsh, bridge: DshBridge, core: LocalCore
) -> None:
    events = [assistant("Done: the cache is warm.")]
    assert dsh.spool_turn(USER, 1, "warm the cache", events)
    assert not dsh.spool_turn(USER, 1, "warm the cache", events)  # the listener's own dedupe
    dsh.spooled.clear()
    dsh.spool_turn(USER, 1, "warm the cache", events)  # a second writer spooled it too
    assert await bridge.flush(timeout_s=10)
    traces = await core.list_traces(ListQuery(session_id="dsh-1", include_all_namespaces=True))
    assert [t.user_text for t in traces] == ["warm the cache"]
    assert bridge.captured == 1


async def test_turn_two_recall_does_not_wait_for_a_hanging_turn_one_capture(
    dsh: FakeDsh, bridge: DshBridge, gated: GatedCore
) -> None:
    gated.gates["prepare_turn"] = asyncio.Event()  # routing of turn 1 hangs
    await step(bridge, USER, 1, "first question")
    dsh.spool_turn(USER, 1, "first question", [assistant("first answer")])
    await asyncio.sleep(0.05)
    assert bridge.queues.pending == 1
    # turn 1 never ends: a recall that waited for it would end "timeout" at its 3 s budget
    out = await asyncio.wait_for(step(bridge, USER, 2, "second question"), timeout=30)
    assert out.skip_reason in ("", "no_hits")
    assert bridge.queues.pending == 1  # turn 1 is still queued: nothing joined it
    gated.gates["prepare_turn"].set()
    assert await bridge.flush(timeout_s=10)
    assert bridge.captured == 1


async def test_capture_routes_then_records_tools_with_replacements_ignored_for_timing(
    dsh: FakeDsh, bridge: DshBridge, gated: GatedCore, core: LocalCore
) -> None:
    events = [
        tool_call("c1", "shell", '{"cmd": "ls"}', time_ms=1000),
        tool_result("c1", "a.txt b.txt", time_ms=1400),
        tool_result(
            "c1",
            "a.txt b.txt (collapsed)",
            time_ms=9000,
            surface={"op": "replace", "start": 0, "end": 1},
        ),
        tool_call("c2", "read", '{"path": "/nope"}', time_ms=1500),
        {
            **tool_result("c2", "ENOENT", is_error=True, time_ms=1600),
            "data": {
                **tool_result("c2", "ENOENT", is_error=True)["data"],
                "error": {"code": "ENOENT"},
            },
        },
        assistant("There are two files."),
    ]
    dsh.spool_turn(USER, 1, "list the files", events)
    assert await bridge.flush(timeout_s=10)
    order = [c for c in gated.calls if c in ("prepare_turn", "record_tool_outcome", "turn_end")]
    assert order == ["prepare_turn", "record_tool_outcome", "record_tool_outcome", "turn_end"]
    outcomes = [a[0] for n, a in gated.args if n == "record_tool_outcome"]
    assert [(o.tool, o.success, o.duration_ms, o.error_code) for o in outcomes] == [
        ("shell", True, 400.0, None),
        ("read", False, 100.0, "ENOENT"),
    ]
    result = next(a[0] for n, a in gated.args if n == "turn_end")
    assert result.turn_key == "dsh-1:1" and result.episode_id
    assert result.tool_calls[0].output == "a.txt b.txt (collapsed)"
    assert result.tool_calls[0].input == {"cmd": "ls"}
    traces = await core.list_traces(ListQuery(session_id="dsh-1", include_all_namespaces=True))
    assert traces and traces[0].user_text == "list the files"


async def test_session_disposal_returns_at_once_and_closes_after_queued_work(
    dsh: FakeDsh, bridge: DshBridge, gated: GatedCore
) -> None:
    gated.gates["turn_end"] = asyncio.Event()
    dsh.spool_turn(USER, 1, "one more thing", [assistant("ok")])
    await asyncio.sleep(0.05)
    bridge.session_disposed(USER)  # returns at once: the turn it would wait for is still gated
    assert "close_session" not in gated.calls
    gated.gates["turn_end"].set()
    assert await bridge.flush(timeout_s=10)
    relevant = [c for c in gated.calls if c in ("turn_end", "close_session")]
    assert relevant == ["turn_end", "close_session"]


async def test_plugin_dispose_drains_then_closes_sessions_then_shuts_the_core_down(
    dsh: FakeDsh, bridge: DshBridge, gated: GatedCore
) -> None:
    await step(bridge, USER, 1, "a question")
    dsh.spool_turn(USER, 1, "a question", [assistant("an answer")])
    report = await bridge.dispose(5.0)
    assert report.drained and report.closed_sessions == 1
    relevant = [c for c in gated.calls if c in ("turn_end", "close_session", "shutdown")]
    assert relevant == ["turn_end", "close_session", "shutdown"]


async def test_dispose_is_bounded_and_leaves_unfinished_turns_in_the_spool(
    dsh: FakeDsh, bridge: DshBridge, gated: GatedCore, core: LocalCore
) -> None:
    gated.gates["turn_end"] = asyncio.Event()  # never released during the drain
    dsh.spool_turn(USER, 1, "stuck turn", [assistant("...")])
    started = time.monotonic()
    report = await bridge.dispose(0.3, shutdown_core=False)
    assert not report.drained and time.monotonic() - started < 10  # the gate never opens
    assert "dsh-1:1" not in bridge.spool.done
    # the next start-up resumes it, exactly once
    gated.gates.clear()
    fresh = DshBridge(core, core.home, poll_interval_s=0)
    assert fresh.start() == 1
    assert await fresh.flush(timeout_s=10)
    again = DshBridge(core, core.home, poll_interval_s=0)
    assert again.start() == 0
    traces = await core.list_traces(ListQuery(session_id="dsh-1", include_all_namespaces=True))
    assert [t.user_text for t in traces] == ["stuck turn"]
