"""Export walks policies, world models and skills by keyset cursor: while the learner changes a
row not yet exported and induces a new one between two pages, every row that existed when the export
began is in the bundle exactly once. (Walked by offset in newest-change order, the changed row
jumped ahead of the offset and was left out, and the row at the page boundary came twice.)"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import ListQuery, Namespace
from stratamem.core.commands.bundle import PAGE, export_bundle
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.local import LocalCore

NS = Namespace(agent_kind="hermes", profile_id="default")
TABLES = ("policies", "world_models", "skills")
BASE = 1_700_000_000_000


def _row(table: str, i: int, at: int) -> dict[str, Any]:
    return {
        "id": f"{table[:2]}_{i:04d}",
        "name": f"{table[:2]}_{i:04d}",
        "title": f"row {i}",
        "status": "active",
        "created_at": at,
        "updated_at": at,
        "owner_agent_kind": NS.agent_kind,
        "owner_profile_id": NS.profile_id,
        "share_scope": "private",
    }


class LearnerBetweenPages:
    """The real core, with the learner's writes landing right after each page of a layer listing:
    the oldest row is changed (its ``updated_at`` becomes the newest) and a new row is induced."""

    def __init__(self, core: LocalCore) -> None:
        self.core = core
        self.writes = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.core, name)

    async def _learn(self, table: str) -> None:
        self.writes += 1
        store = self.core.services.store
        await store.update(table, f"{table[:2]}_0000", {"updated_at": BASE + 10_000 + self.writes})
        await store.upsert(table, [_row(table, 9000 + self.writes, BASE + 10_000 + self.writes)])

    async def list_policies(self, query: ListQuery) -> Any:
        page = await self.core.list_policies(query)
        await self._learn("policies")
        return page

    async def list_world_models(self, query: ListQuery) -> Any:
        page = await self.core.list_world_models(query)
        await self._learn("world_models")
        return page

    async def list_skills(self, query: ListQuery) -> Any:
        page = await self.core.list_skills(query)
        await self._learn("skills")
        return page


async def test_export_lists_every_learned_row_once_while_the_learner_writes(
    tmp_path: Path,
) -> None:
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    try:
        n = PAGE * 2 + 10
        for table in TABLES:
            rows = [_row(table, i, BASE + i) for i in range(n)]
            await core.services.store.upsert(table, rows)
        bundle = await export_bundle(LearnerBetweenPages(core), NS)  # type: ignore[arg-type]
        for table in TABLES:
            ids = [r["id"] for r in bundle[table]]
            made = {f"{table[:2]}_{i:04d}" for i in range(n)}
            assert len(ids) == len(set(ids)), f"{table}: a row exported twice"
            assert made <= set(ids), f"{table}: missing {sorted(made - set(ids))[:3]}"
    finally:
        await core.shutdown()


class OlderService:
    """The real core as a service older than the cursors answers: ``after`` is ignored."""

    def __init__(self, core: LocalCore) -> None:
        self.core = core

    def __getattr__(self, name: str) -> Any:
        listing = getattr(self.core, name)
        if name not in ("list_episodes", *(f"list_{t}" for t in TABLES)):
            return listing

        async def without_cursor(query: ListQuery) -> Any:
            return await listing(dataclasses.replace(query, after=None))

        return without_cursor


async def test_export_from_a_service_ignoring_the_cursor_walks_by_offset(tmp_path: Path) -> None:
    """(Guards the fallback this change rewrote; the previous code had it for episodes only.)"""
    core = await open_local_core(tmp_path / "home", embedding__provider="none")
    try:
        n = PAGE + 10
        for table in TABLES:
            await core.services.store.upsert(table, [_row(table, i, BASE + i) for i in range(n)])
        bundle = await export_bundle(OlderService(core), NS)  # type: ignore[arg-type]
        for table in TABLES:
            ids = [r["id"] for r in bundle[table]]
            assert sorted(ids) == sorted(f"{table[:2]}_{i:04d}" for i in range(n)), table
    finally:
        await core.shutdown()
