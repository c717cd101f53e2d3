"""Sessions and episodes: open/close, the episode rows and their meta, start-up recovery.

An episode is one topic inside a session; closing it hands it to the learner (full mode).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from stratamem.contract.dtos import Episode, ListQuery, Namespace
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core.engine.services import EngineServices
from stratamem.core.ids import new_id, now_ms
from stratamem.core.storage.ownership import Scope, owner_columns, owner_key, owner_namespace
from stratamem.core.storage.rows import episode_from_row
from stratamem.core.validation import check_cursor, check_id, check_limit, check_text


def session_not_found(session_id: str) -> StratamemError:
    return StratamemError(
        ErrorCode.SESSION_NOT_FOUND, f"session {session_id!r} not found", {"session_id": session_id}
    )


def episode_not_found(episode_id: str) -> StratamemError:
    return StratamemError(
        ErrorCode.EPISODE_NOT_FOUND, f"episode {episode_id!r} not found", {"episode_id": episode_id}
    )


def not_the_owner(session_id: str, ns: Namespace) -> StratamemError:
    return StratamemError(
        ErrorCode.PERMISSION_DENIED,
        f"session {session_id!r} belongs to another namespace than "
        f"{ns.agent_kind}/{ns.profile_id or 'default'}",
        {"session_id": session_id},
    )


async def session_namespace(
    svc: EngineServices, session_id: str, ns: Namespace | None, agent: str
) -> Namespace:
    """The namespace a session-addressed call acts in: the caller's, which must own the session
    when it exists (``permission_denied`` otherwise); a call naming none acts as the session's
    owner (a new session: the agent kind's default profile)."""
    row = await session_row(svc, session_id) if session_id else None
    return resolve_namespace(row, ns, agent, session_id)


def resolve_namespace(
    row: sqlite3.Row | None, ns: Namespace | None, agent: str, session_id: str
) -> Namespace:
    """``session_namespace`` given the session's row (``None``: no such session)."""
    if row is None:
        return ns or Namespace(agent_kind=agent)
    owner = owner_namespace(dict(row))
    if ns is None:
        return owner
    if owner_key(ns) != owner_key(owner):
        raise not_the_owner(session_id, ns)
    return ns


# -- rows ------------------------------------------------------------------------------------
async def ensure_session(
    svc: EngineServices, agent: str, session_id: str | None, ns: Namespace, meta: dict[str, Any]
) -> tuple[str, bool]:
    """The session's id (a new one when ``session_id`` is ``None``) and whether it was created."""
    sid = session_id or new_id("se")
    ts = now_ms()

    def run(c: sqlite3.Connection) -> bool:
        row = c.execute(
            "SELECT owner_agent_kind, owner_profile_id FROM sessions WHERE id=?", (sid,)
        ).fetchone()
        if row:
            if owner_key(owner_namespace(dict(row))) != owner_key(ns):
                raise not_the_owner(sid, ns)  # checked in the write's own transaction too
            c.execute("UPDATE sessions SET last_seen_at=?, closed_at=NULL WHERE id=?", (ts, sid))
            return False
        insert_session(c, sid, agent, ns, meta, ts)
        return True

    created = await svc.run_db(lambda: svc.db.call(run))
    if created:
        svc.bus.emit("session.opened", {"session_id": sid, "agent": agent}, namespace=ns)
    return sid, created


async def session_row(svc: EngineServices, session_id: str) -> sqlite3.Row | None:
    rows = await svc.run_db(
        lambda: svc.db.query("SELECT * FROM sessions WHERE id=?", (session_id,))
    )
    return rows[0] if rows else None


async def owner_of(svc: EngineServices, table: str, row_id: str) -> Namespace | None:
    """The namespace owning a session or an episode (``None`` when there is no such row)."""
    row = await (session_row if table == "sessions" else episode_row)(svc, row_id)
    if row is None:
        return None
    own = owner_namespace(dict(row))
    return Namespace(agent_kind=own.agent_kind, profile_id=own.profile_id)


async def open_episodes(svc: EngineServices, session_id: str) -> list[sqlite3.Row]:
    return await svc.run_db(
        lambda: svc.db.query(
            "SELECT * FROM episodes WHERE session_id=? AND status='open' ORDER BY started_at",
            (session_id,),
        )
    )


async def episode_row(svc: EngineServices, episode_id: str) -> sqlite3.Row | None:
    rows = await svc.run_db(
        lambda: svc.db.query("SELECT * FROM episodes WHERE id=?", (episode_id,))
    )
    return rows[0] if rows else None


async def episode_turns(svc: EngineServices, episode_id: str) -> list[sqlite3.Row]:
    return await svc.run_db(
        lambda: svc.db.query(
            "SELECT role, content, ts FROM episode_turns WHERE episode_id=? ORDER BY id",
            (episode_id,),
        )
    )


async def new_episode(
    svc: EngineServices,
    session_id: str,
    ns: Namespace,
    user_text: str | None,
    relation: str,
    ts: int,
) -> str:
    eid = new_id("ep")
    await svc.run_db(
        lambda: svc.db.call(
            lambda c: insert_episode(
                c, eid, session_id, ns, user_text, relation, ts, svc.lightweight
            )
        )
    )
    svc.bus.emit(
        "episode.opened",
        {"episode_id": eid, "session_id": session_id, "relation": relation},
        namespace=ns,
    )
    return eid


def insert_session(
    c: sqlite3.Connection, sid: str, agent: str, ns: Namespace, meta: dict[str, Any], ts: int
) -> None:
    """A new session row owned by ``ns`` (inside the caller's transaction)."""
    own = owner_columns(ns)
    c.execute(
        "INSERT INTO sessions(id, agent, owner_agent_kind, owner_profile_id,"
        " owner_workspace_id, started_at, last_seen_at, meta_json) VALUES (?,?,?,?,?,?,?,?)",
        (
            sid,
            agent,
            own["owner_agent_kind"],
            own["owner_profile_id"],
            own["owner_workspace_id"],
            ts,
            ts,
            json.dumps({**meta, "namespace": own}, default=str),
        ),
    )


def insert_episode(
    c: sqlite3.Connection,
    eid: str,
    session_id: str,
    ns: Namespace,
    user_text: str | None,
    relation: str,
    ts: int,
    lightweight: bool,
) -> None:
    """A new open episode row (inside the caller's transaction)."""
    own = owner_columns(ns)
    meta = {
        "initial_user_text": (user_text or "(adapter-initiated)")[:2000],
        "relation": relation,
        "topic_state": "active",
        "lightweight_memory": lightweight,
        "turn_count": 0,
    }
    c.execute(
        "INSERT INTO episodes(id, session_id, owner_agent_kind, owner_profile_id,"
        " owner_workspace_id, started_at, status, meta_json, last_turn_ts)"
        " VALUES (?,?,?,?,?,?,?,?,?)",
        (
            eid,
            session_id,
            own["owner_agent_kind"],
            own["owner_profile_id"],
            own["owner_workspace_id"],
            ts,
            "open",
            json.dumps(meta),
            ts,
        ),
    )


async def patch_episode_meta(svc: EngineServices, episode_id: str, patch: dict[str, Any]) -> None:
    """Merge ``patch`` into the episode's meta JSON (one transaction)."""

    def run(c: sqlite3.Connection) -> None:
        row = c.execute("SELECT meta_json FROM episodes WHERE id=?", (episode_id,)).fetchone()
        meta = json.loads(row[0] or "{}") if row else {}
        meta.update(patch)
        c.execute("UPDATE episodes SET meta_json=? WHERE id=?", (json.dumps(meta), episode_id))

    await svc.run_db(lambda: svc.db.call(run))


async def close_episode_row(
    svc: EngineServices,
    episode_id: str,
    session_id: str,
    reason: str,
    extra: dict[str, Any] | None = None,
) -> None:
    """Close an open episode (no-op if already closed); full mode then reflects and scores it."""
    ts = now_ms()

    def run(c: sqlite3.Connection) -> bool:
        row = c.execute(
            "SELECT status, meta_json, owner_agent_kind, owner_profile_id FROM episodes WHERE id=?",
            (episode_id,),
        ).fetchone()
        if row is None or row[0] == "closed":
            return False
        owner.append(owner_namespace(dict(row)))
        meta = json.loads(row[1] or "{}")
        meta.update({"close_reason": reason, "topic_state": "ended", **(extra or {})})
        c.execute(
            "UPDATE episodes SET status='closed', ended_at=?, meta_json=? WHERE id=?",
            (ts, json.dumps(meta), episode_id),
        )
        return True

    owner: list[Namespace] = []
    if await svc.run_db(lambda: svc.db.call(run)):
        svc.bus.emit(
            "episode.closed",
            {"episode_id": episode_id, "session_id": session_id, "reason": reason},
            namespace=owner[0] if owner else None,
        )
        if svc.learner is not None:  # topic end: reflect pass, then the feedback window
            svc.learner.episode_finalized(episode_id)


async def recover_open_episodes(svc: EngineServices) -> None:
    """memos-core §1.1: lightweight closes every open episode; full mode finalizes those with
    traces or older than the stale window, and marks the rest interrupted."""
    stale_ms = max(2 * int(svc.config["session"]["merge_max_gap_ms"]), 4 * 3_600_000)
    now = now_ms()
    rows = await svc.run_db(
        lambda: svc.db.query("SELECT * FROM episodes WHERE status='open' LIMIT 500")
    )
    for r in rows:
        has_traces = bool(json.loads(r["trace_ids_json"] or "[]"))
        old = now - int(r["last_turn_ts"] or r["started_at"]) > stale_ms
        if svc.lightweight:
            await close_episode_row(svc, r["id"], r["session_id"], "lightweight_backfill")
        elif has_traces or old:
            await close_episode_row(
                svc,
                r["id"],
                r["session_id"],
                "finalized",
                {"recovery_reason": "missed_session_end"},
            )
        else:
            await patch_episode_meta(
                svc,
                r["id"],
                {"topic_state": "interrupted", "pause_reason": "startup_recovered_open_topic"},
            )


# -- the facade's calls ----------------------------------------------------------------------
async def open_session(
    svc: EngineServices,
    agent: str,
    session_id: str | None,
    ns: Namespace,
    meta: dict[str, object] | None,
) -> str:
    check_id("agent", agent)
    if session_id is not None:
        check_id("session_id", session_id)
    sid, _created = await ensure_session(svc, agent, session_id, ns, dict(meta or {}))
    return sid


async def close_session(svc: EngineServices, session_id: str, reason: str) -> None:
    check_id("session_id", session_id)
    srow = await session_row(svc, session_id)
    if srow is None:
        raise session_not_found(session_id)
    async with svc.session_lock(session_id):
        for ep in await open_episodes(svc, session_id):
            has_traces = bool(json.loads(ep["trace_ids_json"] or "[]"))
            if svc.lightweight or has_traces:
                await close_episode_row(svc, ep["id"], session_id, "finalized")
            else:
                await patch_episode_meta(svc, ep["id"], {"topic_state": "paused"})
        ts = now_ms()
        await svc.run_db(
            lambda: svc.db.call(
                lambda c: c.execute("UPDATE sessions SET closed_at=? WHERE id=?", (ts, session_id))
            )
        )
    await svc.drain_journal(15.0)
    svc.forget_session(session_id)
    svc.bus.emit(
        "session.closed",
        {"session_id": session_id, "reason": reason},
        namespace=owner_namespace(dict(srow)),
    )


async def open_episode(
    svc: EngineServices, session_id: str, user_message: str | None, episode_id: str | None
) -> str:
    check_id("session_id", session_id)
    if user_message is not None:
        check_text("user_message", user_message, svc.max_input, required=False)
    srow = await session_row(svc, session_id)
    if srow is None:
        raise session_not_found(session_id)
    ns = Namespace(agent_kind=srow["owner_agent_kind"], profile_id=srow["owner_profile_id"])
    async with svc.session_lock(session_id):
        eid = await new_episode(svc, session_id, ns, user_message, "explicit", now_ms())
        if episode_id:
            await patch_episode_meta(svc, eid, {"adapter_supplied_id": episode_id})
    return eid


async def close_episode(svc: EngineServices, episode_id: str) -> None:
    check_id("episode_id", episode_id)
    row = await episode_row(svc, episode_id)
    if row is None:
        raise episode_not_found(episode_id)
    await close_episode_row(svc, episode_id, row["session_id"], "finalized")
    await svc.drain_journal(15.0)


def episode_cursor_key(after: str) -> tuple[int, str]:
    """``ListQuery.after`` of an episode listing as ``(started_at, id)`` (``invalid_argument``,
    as ``list_traces`` answers, when it is not ``started_at:id``; a key past every start time is
    clamped by ``check_cursor``)."""
    return check_cursor(
        after, "the `started_at:id` cursor of a listed episode (contract.dtos.episode_cursor)"
    )


async def list_episodes(svc: EngineServices, query: ListQuery, ns: Namespace) -> list[Episode]:
    """One page, newest first in the total order ``(started_at, id)`` descending: episodes that
    started in the same millisecond keep one order on every page. ``after`` (keyset) pages stably
    while episodes are added; ``offset`` (after the cursor, if any) is kept for shallow paging.
    Migration 5's indexes walk this order, so a page reads about ``offset + limit`` index entries
    of the caller's scope instead of sorting every visible episode."""
    check_limit(query.limit, query.offset)
    cursor = episode_cursor_key(query.after) if query.after else None
    scope = (
        Scope.everything("list_all_namespaces")
        if query.include_all_namespaces
        else Scope.visible(ns)
    )
    where = [scope.where]
    params: list[Any] = []
    if query.session_id:
        where.append("session_id = ?")
        params.append(check_id("session_id", query.session_id))
    if query.status:
        where.append("status = ?")
        params.append(check_text("status", query.status, 64))  # as the layers' listings check it
    if cursor is not None:
        # the bare ``started_at <= ?`` is the index's range; the OR breaks the tie on id
        where.append("started_at <= ? AND (started_at < ? OR id < ?)")
        params += [cursor[0], cursor[0], cursor[1]]
    sql = (
        "SELECT * FROM episodes WHERE "
        + " AND ".join(where)
        + " ORDER BY started_at DESC, id DESC LIMIT ? OFFSET ?"
    )
    rows = await svc.run_db(lambda: svc.db.query(sql, [*params, query.limit, query.offset]))
    return [episode_from_row(r) for r in rows]


async def get_episode(svc: EngineServices, episode_id: str, ns: Namespace) -> Episode | None:
    check_id("episode_id", episode_id)
    sql = f"SELECT * FROM episodes WHERE id=? AND {Scope.visible(ns).where}"
    rows = await svc.run_db(lambda: svc.db.query(sql, (episode_id,)))
    return episode_from_row(rows[0]) if rows else None
