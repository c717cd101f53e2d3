"""Namespace isolation: two namespaces with look-alike data; every read path shows zero leaks."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from stratamem.contract.dtos import (
    FeedbackInput,
    ListQuery,
    Namespace,
    RetrievalQuery,
    TracePatch,
    TurnInput,
    TurnResult,
)
from stratamem.contract.errors import StratamemError
from stratamem.core import LocalCore, open_core

A = Namespace(agent_kind="hermes", profile_id="alice")
B = Namespace(agent_kind="hermes", profile_id="bob")


@pytest.fixture
async def two(tmp_path: Path) -> AsyncIterator[tuple[LocalCore, dict[str, dict[str, str]]]]:
    """Same words in both namespaces; each side's secret differs."""
    made: dict[str, dict[str, str]] = {}
    async with open_core(tmp_path, embedding__provider="none") as core:
        for ns, secret in ((A, "red-4411"), (B, "blue-9922")):
            t = int(time.time() * 1000)
            sid = f"sess-{ns.profile_id}"
            r = await core.turn_start(
                TurnInput(
                    agent="hermes",
                    session_id=sid,
                    namespace=ns,
                    user_text="what is the vault combination?",
                    ts=t,
                )
            )
            ack = await core.turn_end(
                TurnResult(
                    agent="hermes",
                    session_id=sid,
                    namespace=ns,
                    agent_text=f"the vault combination is {secret}",
                    ts=t + 1,
                )
            )
            made[ns.profile_id] = {
                "trace": ack.trace_id,
                "episode": r.query.episode_id or "",
                "session": sid,
                "secret": secret,
            }
        # half of the checks run against applied rows, the fixture leaves nothing pending
        await core.flush(10)
        yield core, made


async def test_search_never_returns_the_other_namespace(two: tuple[LocalCore, dict]) -> None:
    core, made = two
    for ns, other in ((A, B), (B, A)):
        for reason in ("tool_driven", "turn_start"):
            res = await core.search(
                RetrievalQuery(
                    agent="hermes", query="vault combination", namespace=ns, reason=reason
                )
            )
            ids = {h.ref_id for h in res.hits}
            assert made[ns.profile_id]["trace"] in ids
            assert made[other.profile_id]["trace"] not in ids
            assert made[other.profile_id]["secret"] not in res.injected_context


async def test_turn_start_injects_only_own_memories(two: tuple[LocalCore, dict]) -> None:
    core, made = two
    res = await core.turn_start(
        TurnInput(
            agent="hermes",
            session_id="sess-new-bob",
            namespace=B,
            user_text="remind me of the vault combination",
            ts=int(time.time() * 1000),
        )
    )
    assert made["bob"]["secret"] in res.injected_context
    assert made["alice"]["secret"] not in res.injected_context


async def test_get_timeline_list_and_episodes_are_scoped(two: tuple[LocalCore, dict]) -> None:
    core, made = two
    a, b = made["alice"], made["bob"]
    assert await core.get_trace(a["trace"], B) is None
    assert await core.get_trace(a["trace"], A) is not None
    assert await core.get_episode(a["episode"], B) is None
    with pytest.raises(StratamemError) as err:
        await core.timeline(a["episode"], B)
    assert err.value.code == "episode_not_found"
    assert [t.id for t in await core.timeline(b["episode"], B)] == [b["trace"]]
    assert {t.id for t in await core.list_traces(ListQuery(namespace=B))} == {b["trace"]}
    assert {t.id for t in await core.list_traces(ListQuery(namespace=B, q="vault"))} == {b["trace"]}
    assert {e.id for e in await core.list_episodes(ListQuery(namespace=B))} == {b["episode"]}


async def test_writes_cannot_touch_the_other_namespace(two: tuple[LocalCore, dict]) -> None:
    core, made = two
    a = made["alice"]
    assert await core.update_trace(a["trace"], TracePatch(summary="hijacked"), B) is None
    assert await core.delete_traces([a["trace"]], B) == 0
    with pytest.raises(StratamemError) as err:
        await core.submit_feedback(
            FeedbackInput(trace_id=a["trace"], polarity="negative", magnitude=1.0, namespace=B)
        )
    assert err.value.code == "trace_not_found"
    tr = await core.get_trace(a["trace"], A)
    assert tr is not None and tr.summary != "hijacked" and tr.value == 0.0


async def test_learning_tables_are_scoped(two: tuple[LocalCore, dict]) -> None:
    core, _ = two
    for ns in (A, B):
        own = {
            "owner_agent_kind": ns.agent_kind,
            "owner_profile_id": ns.profile_id,
            "share_scope": "private",
        }
        await core.store.upsert(
            "policies", [{"id": f"po_{ns.profile_id}", "title": "same title", **own}]
        )
        await core.store.upsert(
            "skills", [{"id": f"sk_{ns.profile_id}", "name": "same-name", **own}]
        )
        await core.store.upsert(
            "world_models", [{"id": f"wm_{ns.profile_id}", "title": "same", **own}]
        )
    assert [p.id for p in await core.list_policies(ListQuery(namespace=B))] == ["po_bob"]
    assert await core.get_policy("po_alice", B) is None
    assert [s.id for s in await core.list_skills(ListQuery(namespace=B))] == ["sk_bob"]
    assert (await core.get_skill("same-name", namespace=B)).id == "sk_bob"  # type: ignore[union-attr]
    assert await core.get_world_model("wm_alice", B) is None
    assert not await core.delete_policy("po_alice", B)
    assert not await core.delete_skill("sk_alice", B)
    assert await core.get_policy("po_alice", A) is not None


async def test_pending_journal_rows_are_scoped_too(tmp_path: Path) -> None:
    async with open_core(tmp_path, embedding__provider="none") as core:
        await core.journal.stop(1)  # nothing gets applied: every read goes through pending rows
        t = int(time.time() * 1000)
        for ns, secret in ((A, "red-4411"), (B, "blue-9922")):
            await core.turn_end(
                TurnResult(
                    agent="hermes",
                    session_id=f"p-{ns.profile_id}",
                    namespace=ns,
                    user_text="what is the vault combination?",
                    agent_text=f"the vault combination is {secret}",
                    ts=t,
                )
            )
        res = await core.search(
            RetrievalQuery(
                agent="hermes", query="vault combination", namespace=B, deadline_at=t + 200
            )
        )
        assert "blue-9922" in res.injected_context and "red-4411" not in res.injected_context
        listed = await core.list_traces(ListQuery(namespace=B))
        assert [t.agent_text for t in listed] == ["the vault combination is blue-9922"]


async def test_public_share_widens_to_the_same_agent_kind_only(two: tuple[LocalCore, dict]) -> None:
    core, made = two
    a = made["alice"]
    await core.store.update("traces", a["trace"], {"share_scope": "public"})
    assert await core.get_trace(a["trace"], B) is not None
    assert await core.get_trace(a["trace"], Namespace(agent_kind="openclaw")) is None
