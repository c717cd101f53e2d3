"""Keyset paging of the learned layers' listings (policies, world models, skills): one total order,
newest first by ``(created_at, id)``, and ``ListQuery.after`` (``contract.dtos.learned_cursor``)
walks it exactly once while the learner adds rows and changes others between pages."""

from __future__ import annotations

from typing import Any

import pytest

from stratamem.contract.dtos import ListQuery, Namespace, learned_cursor
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import layers
from stratamem.core.engine.services import EngineServices

from .conftest import ALICE, BOB

LISTERS = {
    "policies": layers.list_policies,
    "world_models": layers.list_world_models,
    "skills": layers.list_skills,
}


def _row(ns: Namespace, row_id: str, created: int) -> dict[str, Any]:
    return {
        "id": row_id,
        "name": row_id,
        "title": row_id,
        "search_text": row_id,
        "status": "active",
        "created_at": created,
        "updated_at": created,
        "owner_agent_kind": ns.agent_kind,
        "owner_profile_id": ns.profile_id,
        "share_scope": "private",
    }


async def _walk(svc: EngineServices, table: str, limit: int, **query: Any) -> list[Any]:
    """Every page by cursor; between pages the learner changes the oldest row not yet listed
    (its ``updated_at`` becomes the newest) and a new row arrives."""
    out: list[Any] = []
    after: str | None = None
    for n in range(30):
        page = await LISTERS[table](svc, ListQuery(limit=limit, after=after, **query), ALICE)
        out += page
        if len(page) < limit:
            return out
        after = learned_cursor(page[-1])
        rest = await LISTERS[table](svc, ListQuery(limit=500, after=after, **query), ALICE)
        if rest:
            await svc.store.update(table, rest[-1].id, {"updated_at": 9_000_000_000_000 + n})
        await svc.store.upsert(table, [_row(ALICE, f"new_{n:02d}", 5_000_000_000_000 + n)])
    raise AssertionError("the walk did not end: the cursor was ignored")


@pytest.mark.parametrize("table", list(LISTERS))
async def test_pages_walk_every_row_once_while_rows_are_added_and_changed(
    svc: EngineServices, table: str
) -> None:
    base = 1_700_000_000_000
    # three rows created in the same millisecond straddle a page boundary; Bob's never listed
    made = [(base, f"tie_{i}") for i in range(3)] + [(base + 1 + i, f"r_{i:02d}") for i in range(8)]
    await svc.store.upsert(table, [_row(ALICE, i, c) for c, i in made])
    await svc.store.upsert(table, [_row(BOB, f"bob_{i}", base + i) for i in range(4)])
    seen = [r.id for r in await _walk(svc, table, 3)]
    assert seen == [i for _, i in sorted(made, reverse=True)], table
    # a first page is in that order too: the rows created during the walk (three pages were full)
    # lead, not the rows the learner changed (the old order was newest change first)
    first = await LISTERS[table](svc, ListQuery(limit=3), ALICE)
    assert [r.id for r in first] == ["new_02", "new_01", "new_00"], table


@pytest.mark.parametrize("table", list(LISTERS))
async def test_the_cursor_combines_with_filters_and_answers_bad_input_typed(
    svc: EngineServices, table: str
) -> None:
    base = 1_700_000_000_000
    rows = [_row(ALICE, f"r_{i:02d}", base + i) for i in range(7)]
    for r in rows[::2]:
        r["status"] = "archived"
    await svc.store.upsert(table, rows)
    seen = [r.id for r in await _walk(svc, table, 2, status="archived")]
    assert seen == ["r_06", "r_04", "r_02", "r_00"], table
    newest = [r.id for r in await LISTERS[table](svc, ListQuery(limit=4), ALICE)]
    for huge in (f"{2**63}:x", "9" * 5000 + ":x"):
        got = await LISTERS[table](svc, ListQuery(limit=4, after=huge), ALICE)
        assert [r.id for r in got] == newest, (table, huge[:30])
    for bad in ("nope", "-1:x", "5:", "5:" + "a" * 257):
        with pytest.raises(StratamemError) as err:
            await LISTERS[table](svc, ListQuery(after=bad), ALICE)
        assert err.value.code.value == "invalid_argument", (table, bad)
        assert err.value.details["field"] == "after"


@pytest.mark.parametrize("table", list(LISTERS))
async def test_filters_are_checked_as_the_trace_listing_checks_them(
    svc: EngineServices, table: str
) -> None:
    """A lone surrogate in ``q`` or ``status`` was an untyped ``UnicodeEncodeError`` from the
    filter; ``q`` had no bound (``list_traces`` allows 1,000 characters)."""
    await svc.store.upsert(table, [_row(ALICE, "r_00", 1_700_000_000_000)])
    for field, value in (
        ("q", "a\udc80"),
        ("q", "x" * 1001),
        ("status", "\udc80"),
        ("status", "s" * 65),
    ):
        with pytest.raises(StratamemError) as err:
            await LISTERS[table](svc, ListQuery(**{field: value}), ALICE)
        assert err.value.code.value == "invalid_argument", (table, field, value[:10])
        assert err.value.details["field"] == field
    got = await LISTERS[table](svc, ListQuery(q="R_0", status="active"), ALICE)
    assert [r.id for r in got] == ["r_00"]
