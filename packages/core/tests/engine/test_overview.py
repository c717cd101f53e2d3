"""engine.overview: namespace figures kept by triggers equal the episodes they summarise, through
turns, deletes and the backfill of an older home, and are read without touching traces or episodes."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path
from typing import Any

from stratamem.contract.dtos import Namespace, TurnResult
from stratamem.core.engine import commit, overview, traces
from stratamem.core.engine.services import EngineServices
from stratamem.core.storage.sqlite import Database

from .conftest import ALICE, BOB, now

DAY_MS = 86_400_000
CAROL = Namespace(agent_kind="dsh", profile_id="carol")


async def _capture(svc: EngineServices, ns: Namespace, session: str, ts: int) -> str:
    r = TurnResult(
        agent=ns.agent_kind, session_id=session, user_text=f"note {ts}", agent_text="ok", ts=ts
    )
    return (await commit.turn_end(svc, r, ns)).trace_id


def _truth(db: Database) -> dict[tuple[str, str], tuple[int, int]]:
    """(kind, profile) -> (traces, episodes), counted the slow way over every episode row."""
    out: dict[tuple[str, str], list[int]] = {}
    for r in db.query("SELECT owner_agent_kind, owner_profile_id, trace_ids_json FROM episodes"):
        cur = out.setdefault((r[0], r[1]), [0, 0])
        cur[0] += len(json.loads(r[2]))
        cur[1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


async def _figures(svc: EngineServices) -> dict[tuple[str, str], tuple[int, int]]:
    return {
        (f.namespace.agent_kind, f.namespace.profile_id): (f.traces, f.episodes)
        for f in await overview.namespaces(svc)
    }


async def test_figures_follow_turns_and_deletes_and_growth_counts_per_day(
    svc: EngineServices,
) -> None:
    old = now() - 3 * DAY_MS
    a1 = await _capture(svc, ALICE, "a-old", old)
    await _capture(svc, ALICE, "a-old", old + 1000)
    await _capture(svc, ALICE, "a-new", now())
    b1 = await _capture(svc, BOB, "b", now())
    await _capture(svc, CAROL, "c", now())
    figures = await _figures(svc)
    assert figures == _truth(svc.db)  # acknowledged turns count before the writer applies them
    assert figures[("hermes", "alice")][0] == 3

    assert await traces.delete_traces(svc, [a1], ALICE) == 1
    assert await traces.delete_traces(svc, [b1], BOB) == 1
    figures = await _figures(svc)
    assert figures == _truth(svc.db)
    assert figures[("hermes", "alice")][0] == 2 and figures[("hermes", "bob")][0] == 0

    day = lambda ms: dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d")  # noqa: E731
    assert await overview.growth(svc, [ALICE]) == [
        {"day": day(old), "added": 1, "total": 1},
        {"day": day(now()), "added": 1, "total": 2},
    ]
    assert (await overview.growth(svc))[-1]["total"] == 3  # alice 2, bob 0, carol 1
    assert await overview.growth(svc, []) == []
    only = await overview.namespaces(svc, lambda ns: ns.agent_kind == "dsh")
    assert [f.key for f in only] == ["dsh/carol"]


async def test_reading_the_figures_touches_neither_traces_nor_episodes(svc: EngineServices) -> None:
    for i in range(3):
        await _capture(svc, ALICE, f"s{i}", now())
    await svc.journal.drain(30)  # the writer shares the connection: let it go quiet first
    statements: list[str] = []
    conn: sqlite3.Connection = svc.db._conn
    conn.set_trace_callback(statements.append)
    try:
        await overview.namespaces(svc)
        await overview.growth(svc, [ALICE])
    finally:
        conn.set_trace_callback(None)
    # (the journal writer may run its own statements meanwhile: only what reads what is asserted)
    assert sum("FROM namespace_days" in s for s in statements) == 2
    assert not any("FROM episodes" in s or "FROM traces" in s for s in statements)


def test_an_older_home_is_backfilled_from_its_episodes(tmp_path: Path) -> None:
    db = Database(tmp_path / "s.db")

    def make_v3(c: sqlite3.Connection) -> None:  # as a home written before migration 4
        for trig in ("added", "changed", "removed"):
            c.execute(f"DROP TRIGGER namespace_days_episode_{trig}")
        c.execute("DROP TABLE namespace_days")
        c.execute("DELETE FROM schema_migrations WHERE version = 4")
        c.execute(
            "INSERT INTO sessions(id, agent, owner_agent_kind, owner_profile_id, started_at,"
            " last_seen_at) VALUES ('s', 'hermes', 'hermes', 'alice', 1, 1)"
        )
        for i, ids in enumerate((["t1", "t2"], ["t3"], [])):
            c.execute(
                "INSERT INTO episodes(id, session_id, owner_agent_kind, owner_profile_id,"
                " started_at, trace_ids_json) VALUES (?, 's', 'hermes', 'alice', ?, ?)",
                (f"e{i}", 1_700_000_000_000 + i * DAY_MS, json.dumps(ids)),
            )

    db.call(make_v3)
    db.close()
    again = Database(tmp_path / "s.db")  # migrates: builds the table and backfills it
    rows: list[Any] = again.query("SELECT day, traces, episodes FROM namespace_days ORDER BY day")
    assert [tuple(r) for r in rows] == [
        ("2023-11-14", 2, 1),
        ("2023-11-15", 1, 1),
        ("2023-11-16", 0, 1),
    ]
    again.call(lambda c: c.execute("DELETE FROM sessions WHERE id = 's'"))  # cascades to episodes
    assert [
        tuple(r)[1:] for r in again.query("SELECT day, traces, episodes FROM namespace_days")
    ] == [
        (0, 0),
        (0, 0),
        (0, 0),
    ]
    again.close()
