"""engine.sessions: session rows, episodes and their meta, closing, start-up recovery."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stratamem.contract.dtos import ListQuery
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import sessions
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.engine.services import EngineServices

from .conftest import ALICE, BOB, now


async def test_ensure_session_creates_once_with_its_owner(svc: EngineServices) -> None:
    sid, created = await sessions.ensure_session(svc, "hermes", None, ALICE, {"k": 1})
    again, created_again = await sessions.ensure_session(svc, "hermes", sid, ALICE, {})
    assert created and not created_again and again == sid
    row = await sessions.session_row(svc, sid)
    assert row is not None and row["owner_profile_id"] == "alice"
    assert json.loads(row["meta_json"])["k"] == 1


async def test_episode_meta_patch_and_close_emit_events(svc: EngineServices) -> None:
    seen: list[str] = []
    svc.bus.add_observer(lambda e: seen.append(e.type))
    sid, _ = await sessions.ensure_session(svc, "hermes", "s1", ALICE, {})
    eid = await sessions.new_episode(svc, sid, ALICE, "hello", "bootstrap", now())
    await sessions.patch_episode_meta(svc, eid, {"topic_state": "paused", "x": 2})
    row = await sessions.episode_row(svc, eid)
    assert row is not None and json.loads(row["meta_json"])["x"] == 2
    assert [r["id"] for r in await sessions.open_episodes(svc, sid)] == [eid]
    await sessions.close_episode_row(svc, eid, sid, "finalized")
    await sessions.close_episode_row(svc, eid, sid, "finalized")  # idempotent: one event
    assert await sessions.open_episodes(svc, sid) == []
    assert seen.count("episode.closed") == 1 and "episode.opened" in seen


async def test_closing_an_unknown_session_is_a_typed_error(svc: EngineServices) -> None:
    with pytest.raises(StratamemError) as err:
        await sessions.close_session(svc, "nope", "client")
    assert err.value.code == "session_not_found"
    with pytest.raises(StratamemError) as err:
        await sessions.close_episode(svc, "nope")
    assert err.value.code == "episode_not_found"


async def test_episodes_are_listed_for_their_owner_only(svc: EngineServices) -> None:
    sid, _ = await sessions.ensure_session(svc, "hermes", "sa", ALICE, {})
    eid = await sessions.open_episode(svc, sid, "a topic", "adapter-ep")
    assert [e.id for e in await sessions.list_episodes(svc, ListQuery(), ALICE)] == [eid]
    assert await sessions.list_episodes(svc, ListQuery(), BOB) == []
    assert await sessions.get_episode(svc, eid, BOB) is None
    got = await sessions.get_episode(svc, eid, ALICE)
    assert got is not None and got.status == "open"


async def test_start_up_recovery_closes_open_lightweight_episodes(tmp_path: Path) -> None:
    core = await open_local_core(tmp_path, embedding__provider="none")
    svc = core.services
    try:
        sid, _ = await sessions.ensure_session(svc, "hermes", "s", ALICE, {})
        eid = await sessions.new_episode(svc, sid, ALICE, "left open", "bootstrap", now())
        await sessions.recover_open_episodes(svc)
        row = await sessions.episode_row(svc, eid)
        assert row is not None and row["status"] == "closed"
        assert json.loads(row["meta_json"])["close_reason"] == "lightweight_backfill"
    finally:
        await core.shutdown()


async def test_the_owner_of_a_session_and_an_episode(svc: EngineServices) -> None:
    sid, _ = await sessions.ensure_session(svc, "hermes", "so", ALICE, {})
    eid = await sessions.new_episode(svc, sid, ALICE, "t", "bootstrap", now())
    assert await sessions.owner_of(svc, "sessions", sid) == ALICE
    assert await sessions.owner_of(svc, "episodes", eid) == ALICE
    assert await sessions.owner_of(svc, "sessions", "missing") is None
