"""The end of a turn: validate, pick the episode, build the trace rows (capture), and commit them
with the episode's turns to the SQLite journal in one transaction — durable before the ack.

The journal writer applies them to LanceDB (embedding first) in the background. The trace ids are
minted inside the transaction, so the writer knows no row with them is stored: it appends them
(storage/journal.py says why that matters and when it looks ids up instead).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field, replace
from typing import Any

from stratamem.contract.dtos import (
    Namespace,
    SubagentOutcome,
    ToolCall,
    ToolOutcome,
    TurnEndAck,
    TurnResult,
)
from stratamem.contract.errors import ErrorCode, StratamemError
from stratamem.core import capture
from stratamem.core.engine import sessions
from stratamem.core.engine.services import EngineServices
from stratamem.core.ids import new_id, now_ms
from stratamem.core.storage.journal import payload_json
from stratamem.core.storage.ownership import owner_columns
from stratamem.core.telemetry import span
from stratamem.core.validation import bad, check_epoch_ms, check_id, check_json, check_text


def check_turn_result(svc: EngineServices, result: TurnResult) -> None:
    limit = svc.max_input
    check_id("agent", result.agent)
    check_id("session_id", result.session_id)
    check_text("agent_text", result.agent_text, limit, required=False)
    if result.user_text is not None:
        check_text("user_text", result.user_text, limit, required=False)
    if result.agent_thinking is not None:
        check_text("agent_thinking", result.agent_thinking, limit, required=False)
    if result.reflection is not None:
        check_text("reflection", result.reflection, limit, required=False)
    if result.episode_id is not None:
        check_id("episode_id", result.episode_id)
    if result.turn_key is not None:
        check_id("turn_key", result.turn_key)
    # everything acknowledged must be storable and answerable over the wire (int64, JSON)
    check_epoch_ms("ts", result.ts)
    check_json("context_hints", result.context_hints)
    for i, call in enumerate(result.tool_calls):
        if not isinstance(call, ToolCall):
            raise bad(f"tool_calls[{i}] must be a ToolCall", field=f"tool_calls[{i}]")
        check_id(f"tool_calls[{i}].name", call.name)
        v = call.output
        if isinstance(v, str):
            check_text(f"tool_calls[{i}].output", v, limit, required=False)
        for attr in ("error_code", "tool_call_id", "thinking_before", "assistant_text_before"):
            if getattr(call, attr) is not None:
                check_text(f"tool_calls[{i}].{attr}", getattr(call, attr), limit, required=False)
        for attr in ("started_at", "ended_at"):
            check_epoch_ms(f"tool_calls[{i}].{attr}", getattr(call, attr), required=False)
        for attr in ("input", "output"):
            check_json(f"tool_calls[{i}].{attr}", getattr(call, attr))
    if (
        not result.agent_text.strip()
        and not result.tool_calls
        and not (result.user_text or "").strip()
    ):
        raise bad("turn has no content (empty agent text, no tool calls, no user text)")


async def turn_end(svc: EngineServices, result: TurnResult, ns: Namespace | None) -> TurnEndAck:
    """Durable before it returns: the turn is committed (fsync'd) to the SQLite journal.

    ``ns`` is the caller's namespace (``None``: the session owner's). Everything the ack needs
    (owner check, turn-key replay, session and episode, the episode's turns, the trace rows and
    their journal entries) happens in ONE transaction on the SQLite thread: one executor hop and
    one fsync per acknowledged turn, whatever the path (a new session and episode included), so
    the ack costs about what a bare durable SQLite commit costs.
    """
    check_turn_result(svc, result)
    with span("turn_end", session=result.session_id):
        async with svc.session_lock(result.session_id):
            done = await svc.run_db(lambda: svc.db.call(lambda c: _capture(c, svc, result, ns)))
            if done.entries:
                svc.journal.add_committed(done.entries, new=True)  # ids minted in _capture
    if done.session_created:
        svc.bus.emit(
            "session.opened",
            {"session_id": result.session_id, "agent": result.agent},
            namespace=done.ns,
        )
    if done.episode_opened:
        svc.bus.emit(
            "episode.opened",
            {
                "episode_id": done.ack.episode_id,
                "session_id": result.session_id,
                "relation": "bootstrap",
            },
            namespace=done.ns,
        )
    if done.entries:
        svc.bus.emit(
            "turn.captured",
            {
                "session_id": result.session_id,
                "episode_id": done.ack.episode_id,
                "trace_id": done.ack.trace_id,
                "journal_seq": done.ack.journal_seq,
            },
            namespace=done.ns,
        )
    return done.ack


@dataclass(slots=True)
class _Captured:
    """What one ``turn_end`` transaction did (events are emitted after it commits)."""

    ack: TurnEndAck
    ns: Namespace
    entries: list[dict[str, Any]] = field(default_factory=list)
    session_created: bool = False
    episode_opened: bool = False


def _episode_for(
    c: sqlite3.Connection, svc: EngineServices, result: TurnResult, ns: Namespace
) -> tuple[str, bool]:
    """(episode id, opened now): the named episode (reopened if a delayed end arrives after it
    closed), else the session's open one, else a new one when the result carries its user text."""
    if result.episode_id:
        row = c.execute(
            "SELECT id, session_id, status, meta_json FROM episodes WHERE id=?",
            (result.episode_id,),
        ).fetchone()
        if row is None or row["session_id"] != result.session_id:
            raise StratamemError(
                ErrorCode.EPISODE_NOT_FOUND,
                f"episode {result.episode_id!r} not found in session {result.session_id!r}",
                {"episode_id": result.episode_id},
            )
        if row["status"] == "closed":  # delayed agent end: reopen, capture, re-finalize
            meta = json.loads(row["meta_json"] or "{}")
            meta["delayed_agent_end_recovered"] = True
            c.execute(
                "UPDATE episodes SET status='open', ended_at=NULL, meta_json=? WHERE id=?",
                (json.dumps(meta), row["id"]),
            )
        return str(row["id"]), False
    row = c.execute(
        "SELECT id FROM episodes WHERE session_id=? AND status='open'"
        " ORDER BY started_at DESC, rowid DESC LIMIT 1",
        (result.session_id,),
    ).fetchone()
    if row is not None:
        return str(row["id"]), False
    if not (result.user_text or "").strip():
        raise StratamemError(
            ErrorCode.EPISODE_NOT_FOUND,
            f"session {result.session_id!r} has no open episode (call turn_start first "
            "or pass user_text)",
            {"session_id": result.session_id},
        )
    eid = new_id("ep")
    sessions.insert_episode(
        c, eid, result.session_id, ns, result.user_text, "bootstrap", result.ts, svc.lightweight
    )
    return eid, True


def _capture(
    c: sqlite3.Connection, svc: EngineServices, result: TurnResult, ns: Namespace | None
) -> _Captured:
    """The body of ``turn_end``'s one transaction (runs on the SQLite thread; raising rolls
    everything back, so bad input changes nothing)."""
    srow = c.execute(
        "SELECT owner_agent_kind, owner_profile_id, owner_workspace_id FROM sessions WHERE id=?",
        (result.session_id,),
    ).fetchone()
    ns = sessions.resolve_namespace(srow, ns, result.agent, result.session_id)
    digest = content_hash(result)
    if result.turn_key:
        prev = svc.db.journal_by_turn_key(result.session_id, result.turn_key)
        if prev is not None:  # the same turn again: the same ack; other content: a conflict
            if prev["content_hash"] is not None and prev["content_hash"] != digest:
                raise key_reused(result)
            ack = TurnEndAck(
                trace_id=prev["target_id"], episode_id=prev["episode_id"], journal_seq=prev["seq"]
            )
            return _Captured(ack=ack, ns=ns)
    now = now_ms()
    if srow is None:
        sessions.insert_session(c, result.session_id, result.agent, ns, {}, now)
    else:
        c.execute(
            "UPDATE sessions SET last_seen_at=?, closed_at=NULL WHERE id=?",
            (now, result.session_id),
        )
    eid, opened = _episode_for(c, svc, result, ns)
    # the user text of this turn: explicit, else the user turns since the last assistant turn
    users = c.execute(
        "SELECT content, ts FROM episode_turns WHERE episode_id=? AND role='user' AND id >"
        " coalesce((SELECT max(id) FROM episode_turns WHERE episode_id=? AND role='assistant'), 0)"
        " ORDER BY id",
        (eid, eid),
    ).fetchall()
    user_text = (
        result.user_text
        if result.user_text is not None
        else "\n---\n".join(u["content"] for u in users)
    )
    turn_id = int(users[0]["ts"]) if users else result.ts
    own = owner_columns(ns)
    entries = []
    for r in capture_rows(svc, user_text, turn_id, result, ns, eid):
        r.update(
            id=new_id("tr"),
            episode_id=eid,
            session_id=result.session_id,
            share_scope="private",
            share_target=None,
            shared_at=None,
            **own,
        )
        entries.append({"kind": "trace", "target_id": r["id"], "table": "traces", "payload": r})
    if result.user_text is not None and not users:
        c.execute(
            "INSERT INTO episode_turns(episode_id, role, content, ts) VALUES (?,?,?,?)",
            (eid, "user", user_text, turn_id),
        )
    for call in result.tool_calls:
        out = call.output if isinstance(call.output, str) else json.dumps(call.output, default=str)
        c.execute(
            "INSERT INTO episode_turns(episode_id, role, content, ts, meta_json) VALUES (?,?,?,?,?)",
            (
                eid,
                "tool",
                (out or "")[:2000],
                result.ts,
                json.dumps({"name": call.name, "error_code": call.error_code}),
            ),
        )
    c.execute(
        "INSERT INTO episode_turns(episode_id, role, content, ts) VALUES (?,?,?,?)",
        (eid, "assistant", result.agent_text, result.ts),
    )
    for i, e in enumerate(entries):
        last = i == len(entries) - 1
        cur = c.execute(
            "INSERT INTO journal(kind, target_id, session_id, episode_id, turn_key,"
            " payload_json, created_at, content_hash) VALUES (?,?,?,?,?,?,?,?)",
            (
                e["kind"],
                e["target_id"],
                result.session_id,
                eid,
                result.turn_key if last else None,
                payload_json(e),
                now,
                digest if last else None,
            ),
        )
        e["seq"] = int(cur.lastrowid or 0)
    row = c.execute("SELECT trace_ids_json, meta_json FROM episodes WHERE id=?", (eid,)).fetchone()
    ids = json.loads(row[0] or "[]") + [e["target_id"] for e in entries]
    meta = json.loads(row[1] or "{}")
    meta["turn_count"] = int(meta.get("turn_count", 0)) + 1
    c.execute(
        "UPDATE episodes SET trace_ids_json=?, meta_json=?, last_turn_ts=? WHERE id=?",
        (json.dumps(ids), json.dumps(meta), result.ts, eid),
    )
    ack = TurnEndAck(
        trace_id=entries[-1]["target_id"] if entries else "",
        episode_id=eid,
        journal_seq=entries[-1]["seq"] if entries else 0,
    )
    return _Captured(
        ack=ack, ns=ns, entries=entries, session_created=srow is None, episode_opened=opened
    )


def content_hash(result: TurnResult) -> str:
    """What a turn key promises stays the same: the turn's texts and tool calls (not its time)."""
    body = {
        "user": result.user_text,
        "agent": result.agent_text,
        "thinking": result.agent_thinking,
        "tools": [
            [c.name, c.input, c.output, c.error_code, c.tool_call_id] for c in result.tool_calls
        ],
    }
    raw = json.dumps(body, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


def key_reused(result: TurnResult) -> StratamemError:
    return StratamemError(
        ErrorCode.CONFLICT,
        f"turn key {result.turn_key!r} was already acknowledged with different content",
        {"session_id": result.session_id, "turn_key": result.turn_key},
    )


def capture_rows(
    svc: EngineServices,
    user_text: str,
    turn_id: int,
    result: TurnResult,
    ns: Namespace,
    episode_id: str,
) -> list[dict[str, Any]]:
    """Trace rows (no vectors; ``_embed`` says what the writer embeds)."""
    drafts = capture.build_trace_drafts(
        user_text,
        replace(result, namespace=ns, episode_id=episode_id),
        lightweight=svc.lightweight,
        config=svc.config,
        user_ts=turn_id,
        episode_id=episode_id,
    )
    rows = []
    for d in drafts:
        row = d.row()
        embed = {"vec_summary": d.summary_text_to_embed}
        if d.action_text_to_embed:
            embed["vec_action"] = d.action_text_to_embed
        row["_embed"] = embed
        rows.append(row)
    return rows


def subagent_turn(svc: EngineServices, outcome: SubagentOutcome) -> TurnResult:
    """A sub-agent's outcome as a turn of its parent session (a ``subagent`` tool call)."""
    check_text("task", outcome.task, svc.max_input)
    check_text("result", outcome.result, svc.max_input, required=False)
    text = f"Subagent task: {outcome.task}\n\nSubagent result: {outcome.result}"
    call = ToolCall(
        name="subagent",
        input={"task": outcome.task, "child_session_id": outcome.child_session_id},
        output=outcome.result,
        error_code=outcome.error,
    )
    return TurnResult(
        agent=outcome.agent,
        session_id=outcome.session_id,
        agent_text=text,
        ts=outcome.ts or now_ms(),
        episode_id=outcome.episode_id,
        namespace=outcome.namespace,
        tool_calls=(*outcome.tool_calls, call),
        user_text=None if outcome.episode_id else f"Subagent task: {outcome.task}",
        turn_key=outcome.turn_key,
    )


def record_tool_outcome(svc: EngineServices, outcome: ToolOutcome) -> None:
    """Never throws; a no-op after shutdown and in lightweight mode (decision repair is full mode)."""
    try:
        if svc.shut or svc.lightweight:
            return
        if svc.learner is not None and isinstance(outcome.tool, str) and outcome.tool:
            svc.learner.tool_outcome(outcome.session_id, outcome.tool, bool(outcome.success))
    except Exception:  # pragma: no cover - by contract
        return
