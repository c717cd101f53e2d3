"""engine.sessions.list_episodes paging: one total order (started_at, id) descending, the keyset
cursor ``ListQuery.after`` (``started_at:id``), migration 5's indexes, and the upgrade of a home
made by the previous schema. Real SQLite and LanceDB under a real core."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from stratamem.contract.dtos import Episode, ListQuery, Namespace, TurnResult, episode_cursor
from stratamem.contract.errors import StratamemError
from stratamem.core.engine import commit, sessions, traces
from stratamem.core.engine.assemble import open_local_core
from stratamem.core.engine.services import EngineServices
from stratamem.core.storage import sqlite as sqlite_store

from .conftest import ALICE, BOB, now


async def _episode_at(svc: EngineServices, ns: Namespace, ts: int, n: int) -> str:
    """A new episode started at ``ts`` (a new session's first turn opens it, at the turn's time)."""
    sid = f"s-{ns.profile_id}-{ts}-{n}"
    r = TurnResult(agent="hermes", session_id=sid, user_text=f"task {n}", agent_text="ok", ts=ts)
    return (await commit.turn_end(svc, r, ns)).episode_id


async def _rows(svc: EngineServices, ns: Namespace) -> list[tuple[int, str]]:
    rows = await svc.run_db(
        lambda: svc.db.query(
            "SELECT started_at, id FROM episodes WHERE owner_profile_id = ?", (ns.profile_id,)
        )
    )
    return [(int(r[0]), str(r[1])) for r in rows]


def _order(rows: list[tuple[int, str]]) -> list[str]:
    """The documented order: newest first, ties by id descending."""
    return [i for _, i in sorted(rows, reverse=True)]


async def _walk_by_cursor(
    svc: EngineServices, ns: Namespace, limit: int, **filters: object
) -> list[Episode]:
    seen: list[Episode] = []
    after: str | None = None
    for _ in range(50):  # bounded: a listing that ignores the cursor repeats its first page
        page = await sessions.list_episodes(
            svc,
            ListQuery(limit=limit, after=after, **filters),
            ns,  # type: ignore[arg-type]
        )
        if not page:
            return seen
        seen += page
        after = episode_cursor(page[-1])
    return seen


async def _seed_ties(svc: EngineServices) -> int:
    """Alice: five episodes in one millisecond, six later ones, three more tied; Bob's at the
    same times. Returns the first timestamp."""
    base = now() - 100_000
    n = 0
    for ts in [base] * 5 + [base + 10 + i for i in range(6)] + [base + 50] * 3:
        for ns in (ALICE, BOB):
            n += 1
            await _episode_at(svc, ns, ts, n)
    return base


async def test_tied_episodes_page_in_one_total_order_by_offset_and_by_cursor(
    svc: EngineServices,
) -> None:
    """Episodes that started in the same millisecond come in one order on every page, the one the
    cursor continues: by offset and by cursor, every episode once, none of another namespace.
    (The old code ordered by started_at alone — ties in insertion order — and ignored ``after``,
    answering the first page again.)"""
    await _seed_ties(svc)
    expected = _order(await _rows(svc, ALICE))
    assert len(expected) == 14
    for limit in (1, 3, 4, 5, 14):
        by_offset: list[str] = []
        for offset in range(0, 20, limit):
            page = await sessions.list_episodes(svc, ListQuery(limit=limit, offset=offset), ALICE)
            by_offset += [e.id for e in page]
        assert by_offset == expected, limit
        assert [e.id for e in await _walk_by_cursor(svc, ALICE, limit)] == expected, limit


async def test_the_cursor_stays_in_the_namespace_while_episodes_are_added(
    svc: EngineServices,
) -> None:
    """Pages by cursor while both namespaces keep opening episodes (newer ones, and one in the
    tied millisecond of the cursor itself, which sorts above it by id or below it): Alice sees
    each of her episodes present at the start exactly once and never one of Bob's."""
    base = await _seed_ties(svc)
    before = set(_order(await _rows(svc, ALICE)))
    bobs = {i for _, i in await _rows(svc, BOB)}
    seen: list[str] = []
    after: str | None = None
    for n in range(50):
        page = await sessions.list_episodes(svc, ListQuery(limit=3, after=after), ALICE)
        if not page:
            break
        seen += [e.id for e in page]
        after = episode_cursor(page[-1])
        await _episode_at(svc, ALICE, now() + n, 1000 + n)  # newer than every page
        await _episode_at(svc, BOB, page[-1].started_at, 2000 + n)  # another's, in the tie
    assert len(seen) == len(set(seen)), "an episode was listed twice"
    assert before <= set(seen), f"skipped: {sorted(before - set(seen))}"
    assert not set(seen) & bobs and all(i in before for i in seen)
    assert seen == _order([r for r in await _rows(svc, ALICE) if r[1] in before])
    assert base  # the seed's first millisecond holds five of them


async def test_status_and_session_filters_page_by_cursor(svc: EngineServices) -> None:
    await _seed_ties(svc)
    closing = _order(await _rows(svc, ALICE))[1::2]
    for eid in closing:
        row = await sessions.episode_row(svc, eid)
        assert row is not None
        await sessions.close_episode_row(svc, eid, row["session_id"], "finalized")
    closed = await _walk_by_cursor(svc, ALICE, 2, status="closed")
    assert [e.id for e in closed] == closing and {e.status for e in closed} == {"closed"}
    opened = await _walk_by_cursor(svc, ALICE, 2, status="open")
    assert len(opened) == 7 and not {e.id for e in opened} & set(closing)
    one = closed[0]
    assert [e.id for e in await _walk_by_cursor(svc, ALICE, 1, session_id=one.session_id)] == [
        one.id
    ]


async def test_a_bad_cursor_is_the_typed_error_list_traces_gives(svc: EngineServices) -> None:
    for bad in ("nope", "12", ":x", "-1:x", "12:", "1.5:x", "²:x", "0x1f:x"):
        for lister in (sessions.list_episodes, traces.list_traces):
            with pytest.raises(StratamemError) as err:
                await lister(svc, ListQuery(after=bad), ALICE)  # type: ignore[operator]
            assert err.value.code.value == "invalid_argument", (bad, lister)
            assert err.value.details["field"] == "after"
    # past any started_at (even past int64): the listing from the newest, not an overflow
    eid = await _episode_at(svc, ALICE, now(), 1)
    for huge in ("253402300799999:x", "99999999999999999999999:x"):
        got = await sessions.list_episodes(svc, ListQuery(after=huge), ALICE)
        assert [e.id for e in got] == [eid]


async def test_the_filters_are_checked_as_the_other_listings_check_them(
    svc: EngineServices,
) -> None:
    """A lone surrogate in ``status`` or ``session_id`` reached SQLite and came back as an untyped
    ``UnicodeEncodeError``; ``status`` had no bound (the layers' listings allow 64 characters)."""
    eid = await _episode_at(svc, ALICE, now(), 1)
    for field, value in (
        ("status", "\udc80"),
        ("status", "s" * 65),
        ("session_id", "s\udc80"),
        ("session_id", "s" * 257),
    ):
        with pytest.raises(StratamemError) as err:
            await sessions.list_episodes(svc, ListQuery(**{field: value}), ALICE)
        assert err.value.code.value == "invalid_argument", (field, value[:10])
        assert err.value.details["field"] == field
    assert [e.id for e in await sessions.list_episodes(svc, ListQuery(status="open"), ALICE)] == [
        eid
    ]


def _plans(db_path: Path, statements: list[str]) -> dict[str, list[str]]:
    """EXPLAIN QUERY PLAN of each listing statement (bound values inlined by the trace)."""
    con = sqlite3.connect(db_path)
    try:
        return {s: [str(r[3]) for r in con.execute("EXPLAIN QUERY PLAN " + s)] for s in statements}
    finally:
        con.close()


async def _listing_statements(svc: EngineServices, queries: list[ListQuery]) -> list[str]:
    seen: list[str] = []
    await svc.run_db(lambda: svc.db.call(lambda c: c.set_trace_callback(seen.append)))
    try:
        for q in queries:
            await sessions.list_episodes(svc, q, ALICE)
    finally:
        await svc.run_db(lambda: svc.db.call(lambda c: c.set_trace_callback(None)))
    return [s for s in seen if re.match(r"\s*SELECT \* FROM episodes WHERE", s)]


async def test_every_listing_walks_an_index_in_order_instead_of_sorting(
    svc: EngineServices, tmp_path: Path
) -> None:
    """The page is read from an index in the listing's order (no temp B-tree sorting every
    visible episode): in a namespace, across namespaces, by status, by session, by cursor."""
    await _seed_ties(svc)
    first = (await sessions.list_episodes(svc, ListQuery(limit=3), ALICE))[-1]
    cur = episode_cursor(first)
    queries = [
        ListQuery(limit=3),
        ListQuery(limit=3, offset=5),
        ListQuery(limit=3, after=cur),
        ListQuery(limit=3, include_all_namespaces=True),
        ListQuery(limit=3, include_all_namespaces=True, after=cur),
        ListQuery(limit=3, status="open"),
        ListQuery(limit=3, status="open", after=cur),
        ListQuery(limit=3, session_id=first.session_id),
        ListQuery(limit=3, session_id=first.session_id, after=cur),
    ]
    statements = await _listing_statements(svc, queries)
    assert len(statements) == len(queries)
    plans = _plans(svc.db.path, statements)
    for sql, plan in plans.items():
        assert not any("TEMP B-TREE" in step for step in plan), (sql, plan)
        assert any(re.search(r"USING INDEX episodes_\w*recent", step) for step in plan), plan
    cursor_plans = [p for s, p in plans.items() if "started_at <=" in s]
    assert len(cursor_plans) == 4
    assert all(any("started_at<?" in step for step in p) for p in cursor_plans), cursor_plans


async def test_a_home_of_the_previous_schema_migrates_and_pages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A home written by the schema before migration 5 (its episodes in place, some tied) opens,
    gains the indexes, and lists in the total order by offset and by cursor."""
    previous = tuple(m for m in sqlite_store.MIGRATIONS if m[0] < 5)
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_store, "MIGRATIONS", previous)
        old = await open_local_core(tmp_path, embedding__provider="none")
        try:
            await _seed_ties(old.services)
            assert old.services.db.schema_version() == 4
        finally:
            await old.shutdown()
    core = await open_local_core(tmp_path, embedding__provider="none")
    try:
        svc = core.services
        assert svc.db.schema_version() == 5
        names = {
            r[0]
            for r in await svc.run_db(
                lambda: svc.db.query("SELECT name FROM sqlite_master WHERE tbl_name = 'episodes'")
            )
        }
        assert {"episodes_recent", "episodes_status_recent", "episodes_session_recent"} <= names
        expected = _order(await _rows(svc, ALICE))
        assert [e.id for e in await _walk_by_cursor(svc, ALICE, 4)] == expected
        got = await core.list_episodes(ListQuery(limit=20, namespace=ALICE))
        assert [e.id for e in got] == expected
        plans = _plans(svc.db.path, await _listing_statements(svc, [ListQuery(limit=4)]))
        assert all(not any("TEMP B-TREE" in s for s in p) for p in plans.values()), plans
    finally:
        await core.shutdown()
