"""engine.layers: policies, world models and skills — reads per namespace, owner-only changes."""

from __future__ import annotations

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, SkillGetOptions
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import layers
from stratamem.core.engine.services import EngineServices
from stratamem.core.storage.ownership import Scope

from .conftest import ALICE, BOB


def _own(ns: Namespace) -> dict[str, str]:
    return {
        "owner_agent_kind": ns.agent_kind,
        "owner_profile_id": ns.profile_id,
        "share_scope": "private",
    }


async def _seed(svc: EngineServices) -> None:
    for ns in (ALICE, BOB):
        p = ns.profile_id
        await svc.store.upsert(
            "policies",
            [{"id": f"po_{p}", "title": "t", "status": "active", "updated_at": 1, **_own(ns)}],
        )
        await svc.store.upsert(
            "world_models", [{"id": f"wm_{p}", "title": "w", "updated_at": 1, **_own(ns)}]
        )
        await svc.store.upsert(
            "skills", [{"id": f"sk_{p}", "name": "deploy", "usage_count": 0, **_own(ns)}]
        )


async def test_reads_see_the_callers_rows_only(svc: EngineServices) -> None:
    await _seed(svc)
    assert [p.id for p in await layers.list_policies(svc, ListQuery(), ALICE)] == ["po_alice"]
    assert await layers.get_policy(svc, "po_bob", ALICE) is None
    assert [w.id for w in await layers.list_world_models(svc, ListQuery(), BOB)] == ["wm_bob"]
    assert await layers.get_world_model(svc, "wm_alice", BOB) is None
    assert [s.id for s in await layers.list_skills(svc, ListQuery(), ALICE)] == ["sk_alice"]
    by_name = await layers.get_skill(svc, "deploy", None, BOB)
    assert by_name is not None and by_name.id == "sk_bob"


async def test_policy_status_is_validated_and_set(svc: EngineServices) -> None:
    await _seed(svc)
    with pytest.raises(StratamemError):
        await layers.set_policy_status(svc, "po_alice", "bogus", ALICE)
    got = await layers.set_policy_status(svc, "po_alice", "archived", ALICE)
    assert got is not None and got.status == "archived"
    assert await layers.set_policy_status(svc, "po_alice", "active", BOB) is None


async def test_skill_use_is_counted_and_archive_is_the_owners(svc: EngineServices) -> None:
    await _seed(svc)
    await layers.get_skill(svc, "sk_alice", SkillGetOptions(record_use=True), ALICE)
    rows = await svc.store.get_rows("skills", ["sk_alice"], Scope.everything("test"))
    assert rows[0]["usage_count"] == 1
    with pytest.raises(StratamemError) as err:
        await layers.archive_skill(svc, "sk_alice", "manual", BOB)
    assert err.value.code == "skill_not_found"
    got = await layers.archive_skill(svc, "sk_alice", "not-a-reason", ALICE)
    assert got.status == "archived"
    audit = await svc.run_db(lambda: svc.db.query("SELECT kind, detail_json FROM audit"))
    assert audit and audit[-1]["kind"] == "skill.archived" and "manual" in audit[-1]["detail_json"]


async def test_delete_is_the_owners(svc: EngineServices) -> None:
    await _seed(svc)
    assert not await layers.delete_owned(svc, "policies", "po_alice", BOB)
    assert await layers.delete_owned(svc, "policies", "po_alice", ALICE)
    assert await svc.store.get_rows("policies", ["po_alice"], Scope.everything("test")) == []


@pytest.mark.parametrize("table", ["policies", "world_models", "skills"])
async def test_listings_page_inside_lancedb(svc: EngineServices, table: str) -> None:
    """A page reads its own rows, never the table (the old code read up to 10^6 rows per call
    and sorted them in Python), and pages join up newest change first, the caller's rows only."""
    listing = {
        "policies": layers.list_policies,
        "world_models": layers.list_world_models,
        "skills": layers.list_skills,
    }[table]
    for ns in (ALICE, BOB):
        await svc.store.upsert(
            table,
            [
                {
                    "id": f"{ns.profile_id}_{i:02d}",
                    "name": f"n{i}",
                    "title": "t",
                    "search_text": f"n{i}",
                    "status": "active",
                    "updated_at": 1000 + i,
                    **_own(ns),
                }
                for i in range(30)
            ],
        )
    pages: list[str] = []
    for offset in range(0, 30, 7):
        before = svc.store.rows_read
        got = await listing(svc, ListQuery(limit=7, offset=offset), ALICE)
        assert svc.store.rows_read - before <= 7
        pages += [r.id for r in got]
    assert pages == [f"alice_{i:02d}" for i in reversed(range(30))]
    before = svc.store.rows_read
    got = await listing(svc, ListQuery(limit=3, q="N2"), BOB)  # q matches search_text
    assert svc.store.rows_read - before <= 3
    assert [r.id for r in got] == ["bob_29", "bob_28", "bob_27"]
