"""engine.traces: get / timeline / list / update / delete, pending and applied, per namespace."""

from __future__ import annotations

import json
import re

from stratamem.contract.dtos import ListQuery, Namespace, TracePatch, TurnResult, trace_cursor
from stratamem.core.engine import commit, traces
from stratamem.core.engine.services import EngineServices
from stratamem.core.storage.ownership import Scope

from .conftest import ALICE, BOB, now


async def _capture(svc: EngineServices, ns: Namespace, text: str, session: str = "s") -> str:
    r = TurnResult(agent="hermes", session_id=session, user_text=text, agent_text="ok", ts=now())
    return (await commit.turn_end(svc, r, ns)).trace_id


async def test_a_pending_trace_is_readable_by_its_owner_only(svc: EngineServices) -> None:
    tid = await _capture(svc, ALICE, "the otter den is by the creek")
    assert svc.journal.pending or await svc.store.count("traces", Scope.everything("test")) == 1
    got = await traces.get_trace(svc, tid, ALICE)
    assert got is not None and "otter" in (got.user_text or "")
    assert await traces.get_trace(svc, tid, BOB) is None


async def test_list_is_newest_first_filtered_and_paged(svc: EngineServices) -> None:
    a = await _capture(svc, ALICE, "alpha note", "s1")
    b = await _capture(svc, ALICE, "beta note", "s2")
    await _capture(svc, BOB, "bob's note", "s3")
    await svc.journal.drain(20)
    ids = [t.id for t in await traces.list_traces(svc, ListQuery(), ALICE)]
    assert ids == [b, a]
    assert [t.id for t in await traces.list_traces(svc, ListQuery(q="alpha"), ALICE)] == [a]
    assert [t.id for t in await traces.list_traces(svc, ListQuery(session_id="s1"), ALICE)] == [a]
    assert [t.id for t in await traces.list_traces(svc, ListQuery(limit=1, offset=1), ALICE)] == [a]


async def test_timeline_is_the_episode_in_order(svc: EngineServices) -> None:
    r = TurnResult(agent="hermes", session_id="s", user_text="step one", agent_text="ok", ts=now())
    ack = await commit.turn_end(svc, r, ALICE)
    r2 = TurnResult(agent="hermes", session_id="s", agent_text="step two", ts=now() + 1)
    ack2 = await commit.turn_end(svc, r2, ALICE)
    got = await traces.timeline(svc, ack.episode_id, ALICE)
    assert [t.id for t in got] == [ack.trace_id, ack2.trace_id]


async def test_update_rewrites_text_and_search_text(svc: EngineServices) -> None:
    tid = await _capture(svc, ALICE, "old words")
    got = await traces.update_trace(svc, tid, TracePatch(summary="new summary", tags=("t",)), ALICE)
    assert got is not None and got.summary == "new summary"
    rows = await svc.store.get_rows("traces", [tid], Scope.everything("test"))
    assert "new summary" in rows[0]["search_text"] and rows[0]["search_text"].endswith("t")


async def test_delete_is_the_owners_and_unlinks_the_episode(svc: EngineServices) -> None:
    tid = await _capture(svc, ALICE, "private")
    assert await traces.delete_traces(svc, [tid], BOB) == 0
    assert await traces.delete_traces(svc, [tid], ALICE) == 1
    assert await traces.delete_traces(svc, [tid], ALICE) == 0
    assert await traces.get_trace(svc, tid, ALICE) is None
    eps = await svc.run_db(lambda: svc.db.query("SELECT trace_ids_json FROM episodes"))
    assert all(tid not in e["trace_ids_json"] for e in eps)


async def test_delete_touches_only_the_deleted_traces_episodes(svc: EngineServices) -> None:
    """The old code read every episode row of the home per delete (``SELECT ... FROM episodes``
    with no filter); now it reads the deleted traces' own episodes by primary key."""
    base = now()
    keep = [await _capture_at(svc, ALICE, f"other {i}", base + i) for i in range(12)]
    tid = await _capture_at(svc, ALICE, "to delete", base + 100)
    await svc.journal.drain(60)
    seen: list[str] = []
    await svc.run_db(lambda: svc.db.call(lambda c: c.set_trace_callback(seen.append)))
    try:
        assert await traces.delete_traces(svc, [tid], ALICE) == 1
    finally:
        await svc.run_db(lambda: svc.db.call(lambda c: c.set_trace_callback(None)))
    reads = [q for q in seen if re.search(r"\bFROM episodes\b", q)]
    assert reads and all("FROM episodes WHERE id IN (" in q for q in reads), reads
    eps = await svc.run_db(lambda: svc.db.query("SELECT trace_ids_json FROM episodes"))
    linked = [t for e in eps for t in json.loads(e["trace_ids_json"])]
    assert tid not in linked and sorted(linked) == sorted(keep)


async def _capture_at(svc: EngineServices, ns: Namespace, text: str, ts: int) -> str:
    sid = f"s-{ns.profile_id}-{ts}"  # a session belongs to one namespace
    r = TurnResult(agent="hermes", session_id=sid, user_text=text, agent_text="ok", ts=ts)
    return (await commit.turn_end(svc, r, ns)).trace_id


async def test_a_page_reads_one_page_of_rows_not_every_key(svc: EngineServices) -> None:
    base = now()
    for i in range(60):
        await _capture_at(svc, ALICE, f"alice note {i}", base + i)
        await _capture_at(svc, BOB, f"bob note {i}", base + i)
    await svc.journal.drain(60)
    before = svc.store.rows_read
    page = await traces.list_traces(svc, ListQuery(limit=7), ALICE)
    assert [t.user_text for t in page] == [f"alice note {i}" for i in range(59, 52, -1)]
    assert svc.store.rows_read - before <= 7  # the old code read all 60 keys, then the page
    before = svc.store.rows_read
    after = trace_cursor(page[-1])
    nxt = await traces.list_traces(svc, ListQuery(limit=7, after=after), ALICE)
    assert [t.user_text for t in nxt] == [f"alice note {i}" for i in range(52, 45, -1)]
    assert svc.store.rows_read - before <= 7


async def test_keyset_pages_cross_ties_and_concurrent_inserts_exactly_once(
    svc: EngineServices,
) -> None:
    """Traces sharing a timestamp straddle a page boundary, and new traces (applied and still
    pending) arrive between pages: the cursor still yields every earlier trace exactly once."""
    base = now() - 10_000
    ids = [await _capture_at(svc, ALICE, f"tied {i}", base) for i in range(5)]
    ids += [await _capture_at(svc, ALICE, f"later {i}", base + 1 + i) for i in range(8)]
    await svc.journal.drain(60)
    await _capture_at(svc, BOB, "bob's, never listed for alice", base + 3)
    seen: list[str] = []
    after: str | None = None
    for n in range(20):
        page = await traces.list_traces(svc, ListQuery(limit=4, after=after), ALICE)
        if not page:
            break
        seen += [t.id for t in page]
        after = trace_cursor(page[-1])
        # a concurrent writer: newer traces land between pages (some applied, one left pending)
        await _capture_at(svc, ALICE, f"new {n}", now() + n)
        if n % 2:
            await svc.journal.drain(60)
    assert sorted(seen) == sorted(ids) and len(seen) == len(ids)
    assert seen[:8] == ids[5:][::-1]  # newest first; the tied five follow in id order
    assert seen[8:] == sorted(ids[:5], reverse=True)


async def test_a_bad_cursor_is_a_typed_error(svc: EngineServices) -> None:
    import pytest

    from stratamem.contract.errors import StratamemError

    for bad in ("nope", "12", ":x", "-1:x"):
        with pytest.raises(StratamemError) as err:
            await traces.list_traces(svc, ListQuery(after=bad), ALICE)
        assert err.value.code.value == "invalid_argument"
