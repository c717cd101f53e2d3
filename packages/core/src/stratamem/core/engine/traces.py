"""Queries over traces: get, an episode's timeline, list, update and delete.

Every read merges LanceDB with the journal's still-pending rows (read-your-writes; during a paged
start-up replay it first waits for the pages still on disk) and shows only what the caller's
namespace may see; deletes are the owner's only.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from stratamem.contract.dtos import ListQuery, Namespace, Trace, TracePatch
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.engine import sessions
from stratamem.core.engine.services import EngineServices
from stratamem.core.storage.ownership import Scope, quote
from stratamem.core.storage.rows import trace_from_row
from stratamem.core.telemetry.audit import audit
from stratamem.core.validation import (
    MAX_FILTER_CHARS,
    check_cursor,
    check_id,
    check_limit,
    check_text,
)


def read_scope(ns: Namespace, all_ns: bool = False) -> Scope:
    """Rows visible to ``ns``, or every namespace's for an explicit all-namespace listing."""
    return Scope.everything("include_all_namespaces") if all_ns else Scope.visible(ns)


async def trace_rows(
    svc: EngineServices, ids: Sequence[str], ns: Namespace, all_ns: bool = False
) -> dict[str, dict[str, Any]]:
    """Applied rows from LanceDB plus still-pending journal rows, visible to ``ns`` only.

    Pending rows are snapshotted *before* LanceDB is read: a row applied while the read runs is
    then in one of the two (never in neither)."""
    await svc.wait_for_replay("reading traces")
    wanted = set(ids)
    scope = read_scope(ns, all_ns)
    pend = [r for r in svc.journal.pending_rows("trace") if r["id"] in wanted and scope.accepts(r)]
    found = {r["id"]: r for r in await svc.store.get_rows("traces", list(ids), scope)}
    for r in pend:
        found.setdefault(r["id"], r)
    return found


async def get_trace(svc: EngineServices, trace_id: str, ns: Namespace) -> Trace | None:
    check_id("trace_id", trace_id)
    rows = await trace_rows(svc, [trace_id], ns)
    return trace_from_row(rows[trace_id]) if trace_id in rows else None


async def timeline(svc: EngineServices, episode_id: str, ns: Namespace) -> list[Trace]:
    """The episode's traces in order (≤500), from storage only: no embedding, no ranking."""
    check_id("episode_id", episode_id)
    ep = await sessions.get_episode(svc, episode_id, ns)
    if ep is None:
        raise sessions.episode_not_found(episode_id)
    ids = list(ep.trace_ids)[:500]
    rows = await trace_rows(svc, ids, ns)
    return [trace_from_row(rows[i], ep.status) for i in ids if i in rows]


#: newest first; the id breaks ties so the order (and a keyset cursor) is total
_ORDER = (("ts", False), ("id", False))


def _cursor(after: str) -> tuple[int, str]:
    return check_cursor(after, "the `ts:id` cursor of a listed trace (contract.dtos.trace_cursor)")


async def list_traces(svc: EngineServices, query: ListQuery, ns: Namespace) -> list[Trace]:
    """One page, newest first. Order, cursor, ownership filter and limit run inside LanceDB (a
    top-k over the matching rows), so a page reads ``limit`` rows (``offset + limit`` when pending
    rows must be merged in), never every key. ``after`` (keyset on ``(ts, id)``) pages stably
    while new traces arrive; ``offset`` is kept for shallow paging."""
    check_limit(query.limit, query.offset)
    scope = read_scope(ns, query.include_all_namespaces)
    where = []
    if query.session_id:
        where.append(f"session_id = {quote(query.session_id)}")
    if query.q:
        check_text("q", query.q, MAX_FILTER_CHARS)
        like = quote("%" + query.q.lower().replace("%", "") + "%")
        where.append(f"(lower(summary) LIKE {like} OR lower(user_text) LIKE {like})")
    cursor = _cursor(query.after) if query.after else None
    await svc.wait_for_replay("list_traces")
    if cursor is not None:
        ts, tid = cursor
        where.append(f"(ts < {ts} OR (ts = {ts} AND id < {quote(tid)}))")
    pend = [
        r
        for r in svc.journal.pending_rows("trace")
        if scope.accepts(r)
        and (not query.session_id or r["session_id"] == query.session_id)
        and (
            not query.q
            or query.q.lower() in ((r.get("summary") or "") + (r.get("user_text") or "")).lower()
        )
        and (cursor is None or (int(r["ts"]), r["id"]) < cursor)
    ]
    # pending first, storage second (see trace_rows): no row falls between the two reads
    merge = bool(pend) and query.offset > 0
    stored = await svc.store.scan(
        "traces",
        scope,
        " AND ".join(where) or None,
        query.limit + query.offset if merge else query.limit,
        columns=svc.store.plain_columns("traces"),
        offset=0 if pend else query.offset,
        order_by=_ORDER,
    )
    if not pend:
        return [trace_from_row(r) for r in stored]
    by_id = {r["id"]: r for r in pend} | {r["id"]: r for r in stored}
    keys = sorted(((int(r["ts"]), i) for i, r in by_id.items()), reverse=True)
    return [trace_from_row(by_id[i]) for _, i in keys[query.offset : query.offset + query.limit]]


async def update_trace(
    svc: EngineServices, trace_id: str, patch: TracePatch, ns: Namespace
) -> Trace | None:
    check_id("trace_id", trace_id)
    values: dict[str, Any] = {}
    for name in ("summary", "user_text", "agent_text"):
        v = getattr(patch, name)
        if v is not None:
            values[name] = check_text(name, v, svc.max_input, required=False)
    if patch.tags is not None:
        values["tags"] = [check_text("tag", t, 64) for t in patch.tags]
    current = await trace_rows(svc, [trace_id], ns)
    if trace_id not in current:
        return None
    if not Scope.owned(ns).accepts(current[trace_id]):  # shared with the caller, not theirs
        raise StratamemError(
            ErrorCode.PERMISSION_DENIED,
            f"trace {trace_id!r} belongs to another namespace (shared traces are read-only)",
            {"trace_id": trace_id},
        )
    if not values:
        return await get_trace(svc, trace_id, ns)
    await svc.drain_journal(15.0)
    async with svc.journal.write_lock:
        rows = await svc.store.get_rows("traces", [trace_id], Scope.owned(ns))
        if not rows:
            return None
        cur = rows[0]
        merged = {**cur, **values}
        merged["search_text"] = (
            "\n".join(str(merged.get(k) or "") for k in ("user_text", "agent_text", "summary"))
            + "\n"
            + " ".join(merged.get("tags") or [])
        )
        await svc.store.upsert("traces", [merged])
    svc.bus.emit("trace.updated", {"trace_id": trace_id}, namespace=ns)
    return await get_trace(svc, trace_id, ns)


async def delete_traces(svc: EngineServices, trace_ids: Sequence[str], ns: Namespace) -> int:
    """Hard delete, idempotent, owner namespace only (shared rows are not the reader's to delete)."""
    ids = [check_id("trace_id", t) for t in trace_ids]
    if not ids:
        return 0
    owned = Scope.owned(ns)
    await svc.wait_for_replay("delete_traces")  # a trace still on disk would come back after
    async with svc.journal.write_lock:
        stored = await svc.store.get_rows("traces", ids, owned)
        pend = [
            r for r in svc.journal.pending_rows("trace") if r["id"] in set(ids) and owned.accepts(r)
        ]
        gone = {r["id"] for r in stored} | {r["id"] for r in pend}
        if not gone:
            return 0
        seqs = svc.journal.forget({r["id"] for r in pend})
        await svc.run_db(lambda: svc.db.journal_mark_applied(seqs, error="deleted"))
        await svc.store.delete("traces", sorted(r["id"] for r in stored))
    # only the deleted traces' own episodes (a trace row names its episode), by primary key
    episodes = sorted({str(r["episode_id"]) for r in (*stored, *pend) if r.get("episode_id")})

    def unlink(c: sqlite3.Connection) -> None:
        marks = ", ".join("?" * len(episodes))
        sql = f"SELECT id, trace_ids_json FROM episodes WHERE id IN ({marks})"
        for row in c.execute(sql, episodes).fetchall():
            tids = json.loads(row[1] or "[]")
            kept = [t for t in tids if t not in gone]
            if len(kept) != len(tids):
                c.execute(
                    "UPDATE episodes SET trace_ids_json=? WHERE id=?", (json.dumps(kept), row[0])
                )

    await svc.run_db(lambda: svc.db.call(unlink))
    svc.bus.emit("trace.deleted", {"trace_ids": sorted(gone)}, namespace=ns)
    audit("traces.deleted", namespace=ns, target=sorted(gone))
    return len(gone)
