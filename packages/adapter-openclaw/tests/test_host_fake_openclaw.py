"""Drive the host service like OpenClaw does (hosts.md §2.7) over a real LocalCore."""

from __future__ import annotations

import time
from typing import Any

from stratamem.contract.dtos import ListQuery, RetrievalQuery
from stratamem.core import LocalCore
from stratamem.openclaw.host import HookCtx, OpenClawHost
from stratamem.openclaw.identity import session_id_for


def ctx(session_key: str, run_id: str, agent: str = "main") -> HookCtx:
    return HookCtx(
        run_id=run_id,
        agent_id=agent,
        session_key=session_key,
        session_id="oc-" + run_id,
        workspace_dir="/tmp/ws",
    )


def user(text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}],
        "timestamp": int(time.time() * 1000),
    }


def assistant(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "timestamp": int(time.time() * 1000),
    }


async def turn(
    host: OpenClawHost, c: HookCtx, history: list[dict[str, Any]], text: str, answer: str
) -> tuple[str, list[dict[str, Any]]]:
    host.message_received(c, text)
    r = await host.before_prompt_build(c, text, history)
    transcript = [*history, user(text), assistant(answer)]
    end = await host.agent_end(c, transcript)
    assert end.captured, end.skip_reason
    return r.prepend_context, transcript


async def traces_of(core: LocalCore, sid: str) -> list[Any]:
    return await core.list_traces(ListQuery(session_id=sid, include_all_namespaces=True, limit=100))


async def test_fact_from_one_session_is_recalled_in_a_new_session_inside_memos_context(
    host: OpenClawHost, core: LocalCore
) -> None:
    await turn(
        host,
        ctx("agent:main:a", "r1"),
        [],
        "My deploy target is the Zephyrine cluster in Oslo.",
        "Noted: Zephyrine in Oslo.",
    )
    block, _ = await turn(
        host,
        ctx("agent:main:b", "r2"),
        [],
        "Which cluster is my deploy target Zephyrine?",
        "Zephyrine.",
    )
    assert block.startswith("<memos_context>")
    assert "Zephyrine cluster in Oslo" in block
    assert block.endswith("</memos_context>\n\n")


async def test_a_sessions_own_visible_history_is_not_reinjected(host: OpenClawHost) -> None:
    c1 = ctx("agent:main:a", "r1")
    _, hist = await turn(host, c1, [], "The Quillfeather API key rotates every Tuesday.", "Got it.")
    again = await host.before_prompt_build(
        ctx("agent:main:a", "r2"), "When does Quillfeather rotate?", hist
    )
    assert "Quillfeather API key rotates" not in again.prepend_context


async def test_every_turn_is_captured_once_from_the_full_transcript(
    host: OpenClawHost, core: LocalCore
) -> None:
    hist: list[dict[str, Any]] = []
    for i in range(3):
        _, hist = await turn(
            host, ctx("agent:main:s", f"r{i}"), hist, f"step {i} of the migration plan", f"done {i}"
        )
    traces = await traces_of(core, session_id_for("main", "agent:main:s"))
    assert sorted(t.user_text for t in traces) == [
        f"step {i} of the migration plan" for i in range(3)
    ]


async def test_temp_sessions_are_a_no_op(host: OpenClawHost, core: LocalCore) -> None:
    c = ctx("temp:slug-generator", "t1")
    r = await host.before_prompt_build(c, "make a slug for this", [])
    end = await host.agent_end(c, [user("make a slug for this"), assistant("slug")])
    assert (r.prepend_context, r.skip_reason) == ("", "temp_session")
    assert not end.captured
    assert await traces_of(core, session_id_for("main", "temp:slug-generator")) == []


async def test_heartbeat_turns_are_neither_recalled_nor_captured(
    host: OpenClawHost, core: LocalCore
) -> None:
    c = ctx("agent:main:main", "hb")
    r = await host.before_prompt_build(c, "Read HEARTBEAT.md if it exists and follow it.", [])
    end = await host.agent_end(
        c, [user("Read HEARTBEAT.md if it exists and follow it."), assistant("HEARTBEAT_OK")]
    )
    assert r.skip_reason == "sentinel" and end.skip_reason == "sentinel"
    assert await traces_of(core, session_id_for("main", "agent:main:main")) == []


async def test_a_retried_prompt_build_in_the_same_run_is_one_turn(
    host: OpenClawHost, core: LocalCore
) -> None:
    c = ctx("agent:main:r", "run-1")
    first = await host.before_prompt_build(c, "Plan the Kestrel release", [])
    second = await host.before_prompt_build(c, "Plan the Kestrel release", [])
    assert first.episode_id and first.episode_id == second.episode_id
    await host.agent_end(c, [user("Plan the Kestrel release"), assistant("Plan: …")])
    traces = await traces_of(core, session_id_for("main", "agent:main:r"))
    assert len(traces) == 1 and traces[0].episode_id == first.episode_id


async def test_agent_end_without_prompt_build_opens_the_episode_lazily(
    host: OpenClawHost, core: LocalCore
) -> None:
    c = ctx("agent:main:lazy", "r9")
    end = await host.agent_end(
        c,
        [
            user("[Mon 2026-11-30 10:00 UTC] Remember the Okapi invoice number 77"),
            assistant("Saved."),
        ],
    )
    assert end.captured and end.episode_id
    (trace,) = await traces_of(core, session_id_for("main", "agent:main:lazy"))
    assert trace.user_text == "Remember the Okapi invoice number 77"
    found = await core.search(
        RetrievalQuery(agent="openclaw", query="Okapi invoice", namespace=trace_ns())
    )
    assert any("Okapi" in h.snippet for h in found.hits)


def trace_ns() -> Any:
    from stratamem.openclaw.identity import namespace_for

    return namespace_for("main", "/tmp/ws", None)


async def test_three_consecutive_failures_of_a_tool_reach_the_hint_threshold(
    host: OpenClawHost,
) -> None:
    c = ctx("agent:main:tools", "rt")
    await host.before_prompt_build(c, "fetch the report", [])
    counts = [
        await host.after_tool_call(c, "web_fetch", f"id{i}", error="HTTP 500") for i in range(3)
    ]
    assert counts == [1, 2, 3]
    assert await host.after_tool_call(c, "web_fetch", "id4") == 0  # a success resets the streak
    assert await host.after_tool_call(c, "exec", "id5", error="x") == 1  # per tool
    # a new prompt build for the run clears the streaks
    await host.after_tool_call(c, "exec", "id6", error="x")
    await host.before_prompt_build(ctx("agent:main:tools", "rt"), "fetch the report", [])
    assert host.failure_streak("rt", "exec") == 0


async def test_observed_tool_failures_are_stored_with_the_captured_turn(
    host: OpenClawHost, core: LocalCore
) -> None:
    c = ctx("agent:main:tc", "rtc")
    await host.before_prompt_build(c, "list the build logs", [])
    await host.after_tool_call(c, "ls", "call1", error="permission denied", duration_ms=3)
    transcript = [
        user("list the build logs"),
        {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "call1", "name": "ls", "arguments": {"path": "/logs"}}
            ],
        },
        {
            "role": "toolResult",
            "toolCallId": "call1",
            "toolName": "ls",
            "content": "denied",
            "isError": False,
        },
        assistant("I could not read the logs."),
    ]
    await host.agent_end(c, transcript)
    (trace,) = await traces_of(core, session_id_for("main", "agent:main:tc"))
    (call,) = trace.tool_calls
    assert (call.name, call.error_code) == ("ls", "tool_error")


async def test_parent_session_end_is_deferred_while_a_subagent_runs(
    host: OpenClawHost, core: LocalCore
) -> None:
    parent = ctx("agent:main:p", "rp")
    await host.before_prompt_build(parent, "research the Ibis protocol", [])
    host.subagent_spawned(parent, "agent:main:subagent:1", label="research Ibis")
    closed, deferred = await host.session_end(parent, "reset")
    assert (closed, deferred) == (False, True)
    await host.subagent_ended(parent, "agent:main:subagent:1", outcome="ok")
    traces = await traces_of(core, session_id_for("main", "agent:main:p"))
    assert any("research Ibis" in t.agent_text for t in traces)
    assert session_id_for("main", "agent:main:p") not in host._opened  # the deferred close ran


async def test_explicit_one_shot_sessions_are_closed_after_their_turn(host: OpenClawHost) -> None:
    c = ctx("agent:main:explicit:7", "rx")
    await turn(host, c, [], "summarise the Heron doc", "summary")
    assert session_id_for("main", "agent:main:explicit:7") not in host._opened


async def test_core_failures_fail_open(host: OpenClawHost, core: LocalCore) -> None:
    await core.shutdown()
    r = await host.before_prompt_build(ctx("agent:main:x", "rz"), "anything", [])
    end = await host.agent_end(ctx("agent:main:x", "rz"), [user("anything"), assistant("ok")])
    assert (r.prepend_context, r.skip_reason) == ("", "error")
    assert (end.captured, end.skip_reason) == (False, "error")


async def test_a_subagents_first_turn_gets_the_parents_memories_through_sub_agent_retrieval(
    host: OpenClawHost,
) -> None:
    parent = ctx("agent:main:p2", "rp1")
    await turn(
        host, parent, [], "The Pelican service deploys with blue-green on port 8443.", "Noted."
    )
    await host.before_prompt_build(ctx("agent:main:p2", "rp2"), "spawn a helper for Pelican", [])
    host.subagent_spawned(
        ctx("agent:main:p2", "rp2"), "agent:helper:subagent:9", label="Pelican deploy"
    )
    # the child runs as another agent profile: its own namespace has no memories
    child = ctx("agent:helper:subagent:9", "rc1", agent="helper")
    first = await host.before_prompt_build(child, "How does the Pelican service deploy?", [])
    assert "blue-green on port 8443" in first.prepend_context
    lone = await host.before_prompt_build(
        ctx("agent:helper:other", "rc2", agent="helper"), "How does the Pelican service deploy?", []
    )
    assert "blue-green" not in lone.prepend_context
